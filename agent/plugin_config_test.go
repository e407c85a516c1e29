package agent

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Nomad's plugin blocks mean what sched's client keys mean: a file with
// them loads to the same config as one with the client block's keys.
func TestPluginBlocksAreClientKeys(t *testing.T) {
	const head = "data_dir = \"/d\"\nclient {\n  enabled = true\n  servers = [\"10.0.0.1:4646\"]\n"
	load := func(t *testing.T, src string) *Config {
		t.Helper()
		c := DefaultConfig()
		if err := c.LoadFile(writeConfig(t, src)); err != nil {
			t.Fatal(err)
		}
		if err := c.Finish(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	nomad := load(t, head+`}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
plugin "exec" {
  config {
    enabled = false
  }
}
plugin "docker" {
  config {
    endpoint         = "tcp://127.0.0.1:2375"
    allow_privileged = true
    allow_caps       = ["NET_ADMIN"]
    volumes {
      enabled = true
    }
    gc {
      image       = false
      image_delay = "10m"
    }
  }
}
`)
	own := load(t, head+`  raw_exec {
    enabled = true
  }
  exec {
    enabled = false
  }
  docker {
    endpoint         = "tcp://127.0.0.1:2375"
    allow_privileged = true
    allow_caps       = ["NET_ADMIN"]
    volumes_enabled  = true
    image_gc         = false
    image_gc_delay   = "10m"
  }
}
`)
	if !reflect.DeepEqual(nomad.Client, own.Client) {
		t.Fatalf("plugin blocks:\n%+v\nclient block:\n%+v", nomad.Client, own.Client)
	}
	cc := nomad.Client
	if !cc.RawExec.Enabled || cc.Exec.Enabled || !cc.Docker.AllowPrivileged || !cc.Docker.VolumesEnabled || cc.Docker.ImageGC ||
		cc.Docker.ImageGCDelay != 10*time.Minute || !slices.Equal(cc.Docker.AllowCaps, []string{"NET_ADMIN"}) {
		t.Fatalf("plugin blocks were not applied: %+v", cc)
	}

	// The client block's own key wins over a plugin block's in one file.
	both := load(t, head+"  raw_exec {\n    enabled = false\n  }\n}\nplugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n")
	if both.Client.RawExec.Enabled {
		t.Error("the plugin block won over the client block's raw_exec.enabled")
	}
	// A plugin block with no config changes nothing.
	bare := load(t, head+"}\nplugin \"raw_exec\" {}\n")
	if bare.Client.RawExec.Enabled {
		t.Error("an empty plugin block enabled raw_exec")
	}
}

// A plugin sched lacks, a key it has no meaning for, args and a plugin
// set twice are refused by name; nothing of the file is applied.
func TestPluginBlocksBadInput(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"plugin \"podman\" {\n  config {}\n}\n", `plugin "podman": sched has no such driver (plugin blocks configure raw_exec, exec, docker)`},
		{"plugin \"raw_exec\" {\n  config {\n    no_cgroups = true\n  }\n}\n", `plugin "raw_exec":`},
		{"plugin \"raw_exec\" {\n  config {\n    no_cgroups = true\n  }\n}\n", `no_cgroups`},
		{"plugin \"docker\" {\n  config {\n    gc {\n      dangling_containers {}\n    }\n  }\n}\n", `dangling_containers`},
		{"plugin \"docker\" {\n  args = [\"-v\"]\n}\n", `plugin "docker": args`},
		{"plugin \"exec\" {}\nplugin \"exec\" {}\n", `plugin "exec": set twice in one file`},
		{"plugin \"docker\" {\n  config {\n    gc {\n      image_delay = \"soon\"\n    }\n  }\n}\n", "client.docker.image_gc_delay"},
	} {
		c := DefaultConfig()
		before := c.Client
		err := c.LoadFile(writeConfig(t, "client {\n  enabled = true\n  raw_exec {\n    enabled = true\n  }\n}\n"+tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.src, err, tc.want)
			continue
		}
		if !strings.HasPrefix(tc.want, "client.docker") && !reflect.DeepEqual(c.Client, before) {
			t.Errorf("%q: a refused file changed the client config: %+v", tc.src, c.Client)
		}
	}
}
