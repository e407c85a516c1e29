package agent

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver/docker"
)

// The docker block: on by default with Docker's capabilities, image GC
// after 3m; a file sets every key; a bad duration, capability or
// endpoint is refused by name.
func TestClientDockerBlock(t *testing.T) {
	const client = "data_dir = \"/d\"\nclient {\n  enabled = true\n  servers = [\"10.0.0.1:4646\"]\n"
	load := func(t *testing.T, body string) (*Config, error) {
		t.Helper()
		c := &Config{}
		if err := c.LoadFile(writeConfig(t, client+body+"}\n")); err != nil {
			return nil, err
		}
		return c, c.Finish()
	}
	def, err := load(t, "")
	if err != nil {
		t.Fatal(err)
	}
	dc := def.Client.Docker.driverConfig()
	if dc.Disabled || dc.AllowPrivileged || dc.VolumesEnabled || dc.NoImageGC || dc.ImageGCDelay != docker.DefaultImageGCDelay ||
		dc.PullTimeout != docker.DefaultPullTimeout || !slices.Equal(dc.AllowCaps, docker.DefaultAllowCaps) {
		t.Fatalf("defaults: %+v", dc)
	}
	set, err := load(t, `  docker {
    enabled = false
    endpoint = "tcp://127.0.0.1:2375"
    allow_privileged = true
    allow_caps = ["NET_ADMIN"]
    volumes_enabled = true
    image_gc = false
    image_gc_delay = "10m"
    pull_timeout = "30s"
  }
`)
	if err != nil {
		t.Fatal(err)
	}
	dc = set.Client.Docker.driverConfig()
	if !dc.Disabled || dc.Endpoint != "tcp://127.0.0.1:2375" || !dc.AllowPrivileged || !dc.VolumesEnabled || !dc.NoImageGC ||
		dc.ImageGCDelay != 10*time.Minute || dc.PullTimeout != 30*time.Second || !slices.Equal(dc.AllowCaps, []string{"NET_ADMIN"}) {
		t.Fatalf("set: %+v", dc)
	}
	for body, want := range map[string]string{
		"  docker {\n    image_gc_delay = \"soon\"\n  }\n": "client.docker.image_gc_delay",
		"  docker {\n    allow_caps = [\"A B\"]\n  }\n":    "client.docker.allow_caps[0]",
		"  docker {\n    endpoint = \"/var/run/x\"\n  }\n": "client.docker.endpoint",
	} {
		if _, err := load(t, body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}
