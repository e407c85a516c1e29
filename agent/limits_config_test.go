package agent

import (
	"strings"
	"testing"
	"time"
)

func TestLimitsBlock(t *testing.T) {
	c := &Config{}
	if err := c.LoadFile(writeConfig(t, `
data_dir = "/d"
server { enabled = true }
limits {
  http_max_conns_per_client = 7
  http_read_timeout         = "5s"
  http_write_timeout        = "20s"
  http_max_header_bytes     = 4096
  max_blocking_queries      = 500
}
`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	want := LimitsConfig{HTTPMaxConnsPerClient: 7, HTTPReadTimeout: 5 * time.Second, HTTPReadHeaderTimeout: DefaultHTTPReadHeaderTimeout,
		HTTPWriteTimeout: 20 * time.Second, HTTPIdleTimeout: DefaultHTTPIdleTimeout, HTTPMaxHeaderBytes: 4096,
		MaxBlockingQueries: 500}
	if c.Limits != want {
		t.Errorf("limits %+v, want %+v", c.Limits, want)
	}

	// Defaults: a production agent caps connections, a dev agent does not.
	prod := &Config{DataDir: "/d", Server: ServerConfig{Enabled: true}}
	if err := prod.Finish(); err != nil || prod.Limits.HTTPMaxConnsPerClient != DefaultHTTPMaxConnsPerClient {
		t.Errorf("production default cap %d (%v)", prod.Limits.HTTPMaxConnsPerClient, err)
	}
	if prod.Limits.MaxBlockingQueries != DefaultMaxBlockingQueries {
		t.Errorf("default max_blocking_queries %d", prod.Limits.MaxBlockingQueries)
	}
	dev := &Config{}
	dev.applyDev()
	if err := dev.Finish(); err != nil || dev.Limits.HTTPMaxConnsPerClient != 0 {
		t.Errorf("dev cap %d (%v), want none", dev.Limits.HTTPMaxConnsPerClient, err)
	}

	bad := &Config{}
	if err := bad.LoadFile(writeConfig(t, "limits {\n  http_idle_timeout = \"soon\"\n}\n")); err == nil || !strings.Contains(err.Error(), "limits.http_idle_timeout") {
		t.Errorf("bad duration: %v", err)
	}
	uncapped := &Config{DataDir: "/d", Server: ServerConfig{Enabled: true}, Limits: LimitsConfig{MaxBlockingQueries: -1}}
	if err := uncapped.Finish(); err != nil || uncapped.Limits.MaxBlockingQueries != -1 {
		t.Errorf("max_blocking_queries = -1: %d (%v), want no cap", uncapped.Limits.MaxBlockingQueries, err)
	}
	negative := &Config{DataDir: "/d", Server: ServerConfig{Enabled: true}, Limits: LimitsConfig{MaxBlockingQueries: -2}}
	if err := negative.Finish(); err == nil || !strings.Contains(err.Error(), "limits.max_blocking_queries") {
		t.Errorf("max_blocking_queries = -2: %v", err)
	}
}

// raw_exec is off unless enabled, and a root client runs tasks as nobody
// and never as root; -dev turns it on as the agent's own user.
func TestRawExecBlock(t *testing.T) {
	prod := &Config{}
	if err := prod.LoadFile(writeConfig(t, "data_dir = \"/d\"\nclient {\n  enabled = true\n  servers = [\"10.0.0.1:4646\"]\n}\n")); err != nil {
		t.Fatal(err)
	}
	if err := prod.Finish(); err != nil {
		t.Fatal(err)
	}
	if r := prod.Client.RawExec; r.Enabled || r.DefaultUser != "nobody" || len(r.DeniedUsers) != 1 || r.DeniedUsers[0] != "root" {
		t.Errorf("production raw_exec %+v, want off, nobody, root denied", r)
	}
	on := &Config{}
	if err := on.LoadFile(writeConfig(t, `
data_dir = "/d"
client {
  enabled = true
  servers = ["10.0.0.1:4646"]
  raw_exec {
    enabled      = true
    default_user = "sched-task"
  }
}
`)); err != nil {
		t.Fatal(err)
	}
	if err := on.Finish(); err != nil {
		t.Fatal(err)
	}
	if r := on.Client.RawExec; !r.Enabled || r.DefaultUser != "sched-task" || len(r.DeniedUsers) != 1 {
		t.Errorf("configured raw_exec %+v", r)
	}
	dev := &Config{}
	dev.applyDev()
	if err := dev.LoadFile(writeConfig(t, "client {\n  raw_exec {\n    denied_users = [\"root\"]\n  }\n}\n")); err != nil {
		t.Fatal(err)
	}
	if err := dev.Finish(); err != nil {
		t.Fatal(err)
	}
	if r := dev.Client.RawExec; !r.Enabled || r.DefaultUser != "" || len(r.DeniedUsers) != 1 {
		t.Errorf("dev raw_exec with a denied_users file %+v, want on, the agent's user, root denied", r)
	}
}
