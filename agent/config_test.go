package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigFilesMergeInOrder(t *testing.T) {
	a := writeConfig(t, `
data_dir  = "/a"
log_level = "debug"
ports {
  http = 5000
  raft = 5001
}
server {
  enabled              = true
  job_tracked_versions = 3
}
`)
	b := writeConfig(t, `
data_dir = "/b"
ports { http = 6000 }
server { enabled = false }
client {
  enabled = true
  servers = ["10.0.0.1:4647"]
}
acl { enabled = true }
`)
	c := &Config{}
	for _, p := range []string{a, b} {
		if err := c.LoadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"data_dir from the later file", c.DataDir, "/b"},
		{"log_level kept from the earlier file", c.LogLevel, "debug"},
		{"ports.http overridden", c.Ports.HTTP, 6000},
		{"ports.raft kept", c.Ports.Raft, 5001},
		{"ports.gossip defaulted", c.Ports.Gossip, 4648},
		{"server.enabled set to false explicitly", c.Server.Enabled, false},
		{"job_tracked_versions kept", c.Server.JobTrackedVersions, 3},
		{"client servers", strings.Join(c.Client.Servers, ","), "10.0.0.1:4647"},
		{"acl", c.ACL.Enabled, true},
		{"bind default", c.BindAddr, "127.0.0.1"},
		{"http addr", c.HTTPAddr(), "127.0.0.1:6000"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestConfigUnknownKeyNamesKeyAndLine(t *testing.T) {
	p := writeConfig(t, "data_dir = \"/x\"\n\nserver {\n  enabled = true\n  bootstrap_expext = 1\n}\n")
	err := (&Config{}).LoadFile(p)
	if err == nil {
		t.Fatal("unknown key accepted")
	}
	if !strings.Contains(err.Error(), "bootstrap_expext") || !strings.Contains(err.Error(), ":5,") {
		t.Fatalf("error does not name the key and line 5: %v", err)
	}
}

func TestConfigWrongType(t *testing.T) {
	p := writeConfig(t, `ports { http = "eighty" }`)
	if err := (&Config{}).LoadFile(p); err == nil {
		t.Fatal("string port accepted")
	}
}

func TestConfigFinishRejects(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"nothing enabled", Config{DataDir: "/d"}, "neither server nor client"},
		{"no data dir", Config{Server: ServerConfig{Enabled: true}}, "data_dir is required"},
		{"bad bind", Config{DataDir: "/d", BindAddr: "localhost", Server: ServerConfig{Enabled: true}}, "bind_addr"},
		{"bad port", Config{DataDir: "/d", Ports: Ports{HTTP: 70000}, Server: ServerConfig{Enabled: true}}, "ports.http"},
		{"bad log level", Config{DataDir: "/d", LogLevel: "loud", Server: ServerConfig{Enabled: true}}, "log_level"},
		{"negative expect", Config{DataDir: "/d", Server: ServerConfig{Enabled: true, BootstrapExpect: -1}}, "bootstrap_expect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Finish()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestDevConfigNeedsNoDataDir(t *testing.T) {
	c := &Config{}
	c.applyDev()
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if !c.Server.Enabled || c.Server.BootstrapExpect != 1 || c.HTTPAddr() != "127.0.0.1:4646" {
		t.Fatalf("dev config: %+v", c)
	}
}

func TestServerIDPersists(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "server"), 0o700)
	a, err := serverID(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := serverID(dir)
	if err != nil || a != b || len(a) != 32 {
		t.Fatalf("server IDs %q then %q (%v): want the same 32-hex ID", a, b, err)
	}
}
