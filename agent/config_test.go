package agent

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/mgmt"
	"github.com/schedhq/sched/scheduler/leader"
	"github.com/schedhq/sched/state"
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

func TestConfigClusterKeys(t *testing.T) {
	p := writeConfig(t, `
data_dir  = "/d"
bind_addr = "10.1.2.3"
advertise {
  http   = "203.0.113.7"
  gossip = "203.0.113.7:9999"
}
server {
  enabled                = true
  bootstrap_expect       = 3
  retry_join             = ["10.1.2.4", "10.1.2.5:4648"]
  retry_interval         = "5s"
  retry_max              = 4
  encrypt                = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY="
  failed_server_grace    = "90s"
  leave_on_terminate     = true
  raft_snapshot_interval = "30s"
  raft_multiplier        = 3
}
`)
	c := &Config{}
	if err := c.LoadFile(p); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatalf("a three-server config is refused: %v", err)
	}
	key, err := c.EncryptKey()
	if err != nil || len(key) != 32 {
		t.Fatalf("encrypt key: %d bytes, %v", len(key), err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"bootstrap_expect", c.Server.BootstrapExpect, 3},
		{"retry_join", strings.Join(c.Server.RetryJoin, ","), "10.1.2.4,10.1.2.5:4648"},
		{"retry_interval", c.Server.RetryInterval, 5 * time.Second},
		{"retry_max", c.Server.RetryMax, 4},
		{"failed_server_grace", c.Server.FailedServerGrace, 90 * time.Second},
		{"leave_on_terminate", c.Server.LeaveOnTerminate, true},
		{"raft_snapshot_interval", c.Server.RaftSnapshotInterval, 30 * time.Second},
		{"raft_multiplier", c.Server.RaftMultiplier, 3},
		{"advertise.http gets the http port", c.Advertise.HTTP, "203.0.113.7:4646"},
		{"advertise.gossip keeps its port", c.Advertise.Gossip, "203.0.113.7:9999"},
		{"advertise.raft defaults to bind", c.Advertise.Raft, "10.1.2.3:4647"},
		{"gossip addr", c.GossipAddr(), "10.1.2.3:4648"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestConfigClusterDefaults(t *testing.T) {
	c := &Config{DataDir: "/d", Server: ServerConfig{Enabled: true}}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.Server.RetryInterval != 30*time.Second || c.Server.FailedServerGrace != 5*time.Minute ||
		c.Server.RaftSnapshotInterval != 2*time.Minute || c.Advertise.HTTP != "127.0.0.1:4646" || c.Server.RaftMultiplier != 1 {
		t.Fatalf("defaults: %+v %+v", c.Server, c.Advertise)
	}
	if key, err := c.EncryptKey(); key != nil || err != nil {
		t.Errorf("no encrypt: key %v err %v", key, err)
	}
}

func TestConfigClusterRejects(t *testing.T) {
	srv := func(s ServerConfig) Config {
		s.Enabled = true
		return Config{DataDir: "/d", Server: s}
	}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"encrypt not base64", srv(ServerConfig{Encrypt: "not base64!"}), "server.encrypt: not valid base64"},
		{"encrypt wrong size", srv(ServerConfig{Encrypt: "c2hvcnQ="}), "the key is 5 bytes"},
		{"negative grace", srv(ServerConfig{FailedServerGrace: -time.Second}), "server.failed_server_grace"},
		{"negative retry max", srv(ServerConfig{RetryMax: -1}), "server.retry_max"},
		{"raft multiplier too high", srv(ServerConfig{RaftMultiplier: 11}), "server.raft_multiplier"},
		{"empty retry_join entry", srv(ServerConfig{RetryJoin: []string{"a", " "}}), "server.retry_join[1]"},
		{"dev with expect 3", Config{DevMode: true, Server: ServerConfig{Enabled: true, BootstrapExpect: 3}}, "dev mode runs a single server"},
		{"wildcard advertise", Config{DataDir: "/d", Server: ServerConfig{Enabled: true}, Advertise: Advertise{Raft: "0.0.0.0"}}, "advertise.raft"},
		{"bad advertise port", Config{DataDir: "/d", Server: ServerConfig{Enabled: true}, Advertise: Advertise{HTTP: "10.0.0.1:http"}}, "advertise.http"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Finish()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	p := writeConfig(t, "server {\n  retry_interval = \"30\"\n}\n")
	if err := (&Config{}).LoadFile(p); err == nil || !strings.Contains(err.Error(), "server.retry_interval") {
		t.Errorf("a duration without units: %v", err)
	}
}

func TestConfigWildcardBindAdvertisesAPrivateIP(t *testing.T) {
	c := &Config{DataDir: "/d", BindAddr: "0.0.0.0", Server: ServerConfig{Enabled: true}}
	err := c.Finish()
	if privateIP() == "" {
		if err == nil || !strings.Contains(err.Error(), "no private IPv4 address") {
			t.Fatalf("no private IP on this machine: Finish() = %v, want an error asking for advertise", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(c.Advertise.Raft, "0.0.0.0") || !strings.HasSuffix(c.Advertise.Raft, ":4647") {
		t.Fatalf("advertised raft address %q", c.Advertise.Raft)
	}
}

// schedulerKeysFile sets every scheduler and management API key to a value
// other than its default.
const schedulerKeysFile = `
data_dir = "/d"
server {
  enabled                   = true
  num_schedulers            = 2
  num_small_schedulers      = 3
  heartbeat_grace           = "15s"
  min_heartbeat_ttl         = "20s"
  max_heartbeats_per_second = 12.5
  failover_heartbeat_ttl    = "7m"
  eval_nack_timeout         = "90s"
  eval_delivery_limit       = 5
  job_gc_interval           = "2m"
  job_gc_threshold          = "6h"
  eval_gc_threshold         = "30m"
  batch_eval_gc_threshold   = "12h"
  node_gc_threshold         = "48h"
  deployment_gc_threshold   = "3h"
  acl_token_gc_threshold    = "2h"
}
management_api {
  rate_limit = 7.5
}
`

func TestConfigSchedulerKeys(t *testing.T) {
	c := &Config{}
	if err := c.LoadFile(writeConfig(t, schedulerKeysFile)); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	s := c.Server
	checks := []struct {
		name      string
		got, want any
	}{
		{"num_schedulers", s.NumSchedulers, 2},
		{"num_small_schedulers", deref(s.NumSmallSchedulers), 3},
		{"heartbeat_grace", s.HeartbeatGrace, 15 * time.Second},
		{"min_heartbeat_ttl", s.MinHeartbeatTTL, 20 * time.Second},
		{"max_heartbeats_per_second", s.MaxHeartbeatsPerSecond, 12.5},
		{"failover_heartbeat_ttl", s.FailoverHeartbeatTTL, 7 * time.Minute},
		{"eval_nack_timeout", s.EvalNackTimeout, 90 * time.Second},
		{"eval_delivery_limit", s.EvalDeliveryLimit, 5},
		{"job_gc_interval", s.JobGCInterval, 2 * time.Minute},
		{"job_gc_threshold", s.JobGCThreshold, 6 * time.Hour},
		{"eval_gc_threshold", s.EvalGCThreshold, 30 * time.Minute},
		{"batch_eval_gc_threshold", s.BatchEvalGCThreshold, 12 * time.Hour},
		{"node_gc_threshold", s.NodeGCThreshold, 48 * time.Hour},
		{"deployment_gc_threshold", s.DeploymentGCThreshold, 3 * time.Hour},
		{"acl_token_gc_threshold", s.ACLTokenGCThreshold, 2 * time.Hour},
		{"management_api.rate_limit", c.ManagementAPI.RateLimit, 7.5},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}

	// The scheduler runtime gets every value in its own field.
	want := leader.RuntimeConfig{
		Workers:      2,
		SmallWorkers: 3,
		JobLimits:    state.JobLimits{MaxGroupCount: 10_000, MaxJobCount: 100_000, MaxJobBytes: 4 << 20},
		Broker:       leader.BrokerConfig{UnackedTimeout: 90 * time.Second, DeliveryLimit: 5},
		Heartbeat: leader.HeartbeatConfig{MinTTL: 20 * time.Second, MaxHeartbeatsPerSecond: 12.5,
			Grace: 15 * time.Second, FailoverTTL: 7 * time.Minute},
		GC: leader.GCConfig{Interval: 2 * time.Minute, EvalThreshold: 30 * time.Minute,
			BatchEvalThreshold: 12 * time.Hour, JobThreshold: 6 * time.Hour,
			NodeThreshold: 48 * time.Hour, DeploymentThreshold: 3 * time.Hour, ACLTokenThreshold: 2 * time.Hour},
	}
	if got := c.Server.runtimeConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("runtimeConfig:\n got %+v\nwant %+v", got, want)
	}

	// A later file that disables the rate limit keeps the other keys.
	if err := c.LoadFile(writeConfig(t, "management_api {\n  rate_limit = -1\n}\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.ManagementAPI.RateLimit != -1 || c.Server.EvalDeliveryLimit != 5 {
		t.Errorf("after the second file: rate_limit %v, eval_delivery_limit %d", c.ManagementAPI.RateLimit, c.Server.EvalDeliveryLimit)
	}
}

func TestConfigSchedulerDefaults(t *testing.T) {
	c := &Config{DataDir: "/d", Server: ServerConfig{Enabled: true}}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	s := c.Server
	checks := []struct {
		name      string
		got, want any
	}{
		{"num_schedulers left to the scheduler (three per core, at least 6)", s.NumSchedulers, 0},
		{"num_small_schedulers left unset", s.NumSmallSchedulers == nil, true},
		{"num_small_schedulers unset: the scheduler's default", s.runtimeConfig().SmallWorkers, leader.DefaultSmallWorkers()},
		{"heartbeat_grace", s.HeartbeatGrace, leader.DefaultHeartbeatGrace},
		{"min_heartbeat_ttl", s.MinHeartbeatTTL, leader.DefaultMinHeartbeatTTL},
		{"max_heartbeats_per_second", s.MaxHeartbeatsPerSecond, leader.DefaultMaxHeartbeatsPerSecond},
		{"failover_heartbeat_ttl", s.FailoverHeartbeatTTL, leader.DefaultFailoverHeartbeatTTL},
		{"eval_nack_timeout", s.EvalNackTimeout, leader.DefaultUnackedTimeout},
		{"eval_delivery_limit", s.EvalDeliveryLimit, leader.DefaultDeliveryLimit},
		{"job_gc_interval", s.JobGCInterval, leader.DefaultGCInterval},
		{"job_gc_threshold", s.JobGCThreshold, leader.DefaultJobGCThreshold},
		{"eval_gc_threshold", s.EvalGCThreshold, leader.DefaultEvalGCThreshold},
		{"batch_eval_gc_threshold", s.BatchEvalGCThreshold, leader.DefaultBatchEvalGCThreshold},
		{"node_gc_threshold", s.NodeGCThreshold, leader.DefaultNodeGCThreshold},
		{"deployment_gc_threshold", s.DeploymentGCThreshold, leader.DefaultDeploymentGCThreshold},
		{"acl_token_gc_threshold", s.ACLTokenGCThreshold, leader.DefaultACLTokenGCThreshold},
		{"management_api.rate_limit", c.ManagementAPI.RateLimit, float64(mgmt.DefaultRateLimit)},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	// num_small_schedulers = 0 is none, not the default.
	c = &Config{}
	if err := c.LoadFile(writeConfig(t, "data_dir = \"/d\"\nserver {\n  enabled = true\n  num_small_schedulers = 0\n}\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil || c.Server.runtimeConfig().SmallWorkers != 0 {
		t.Errorf("num_small_schedulers = 0: %v small workers, %v; want none", c.Server.runtimeConfig().SmallWorkers, err)
	}
	// "0s" is unset, as for the other duration keys.
	c = &Config{}
	if err := c.LoadFile(writeConfig(t, "data_dir = \"/d\"\nserver {\n  enabled = true\n  eval_gc_threshold = \"0s\"\n}\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil || c.Server.EvalGCThreshold != leader.DefaultEvalGCThreshold {
		t.Errorf("eval_gc_threshold = \"0s\": %v, %v; want the default", c.Server.EvalGCThreshold, err)
	}
}

func TestConfigSchedulerRejects(t *testing.T) {
	load := func(body string) error {
		c := &Config{}
		if err := c.LoadFile(writeConfig(t, "data_dir = \"/d\"\n"+body)); err != nil {
			return err
		}
		return c.Finish()
	}
	server := func(kv string) string { return "server {\n  enabled = true\n  " + kv + "\n}\n" }
	type rejectCase struct {
		name, body, want string
	}
	var cases []rejectCase
	for _, k := range serverDurations {
		cases = append(cases,
			rejectCase{"negative " + k.name, server(k.name + ` = "-1s"`), "server." + k.name + ": must not be negative"},
			rejectCase{k.name + " without units", server(k.name + ` = "10"`), "server." + k.name + `: "10" is not a duration`})
	}
	cases = append(cases,
		rejectCase{"negative num_schedulers", server("num_schedulers = -1"), "server.num_schedulers: -1 is not between 0 and 128"},
		rejectCase{"too many schedulers", server("num_schedulers = 129"), "server.num_schedulers: 129 is not between 0 and 128"},
		rejectCase{"zero heartbeat rate", server("max_heartbeats_per_second = 0"), "server.max_heartbeats_per_second: must be greater than 0"},
		rejectCase{"negative heartbeat rate", server("max_heartbeats_per_second = -5"), "server.max_heartbeats_per_second: -5 is not a number greater than 0"},
		rejectCase{"zero delivery limit", server("eval_delivery_limit = 0"), "server.eval_delivery_limit: must be at least 1"},
		rejectCase{"negative delivery limit", server("eval_delivery_limit = -2"), "server.eval_delivery_limit: -2 is less than 1"},
		rejectCase{"zero rate limit", "server { enabled = true }\nmanagement_api { rate_limit = 0 }\n", "management_api.rate_limit: 0 is not a limit"},
		rejectCase{"unknown management_api key", "server { enabled = true }\nmanagement_api { rate = 5 }\n", `"rate"`},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := load(tc.body)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}

	// The same checks hold for a Config built in code.
	srv := func(s ServerConfig) Config {
		s.Enabled = true
		return Config{DataDir: "/d", Server: s}
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"num_schedulers", srv(ServerConfig{NumSchedulers: 500}), "server.num_schedulers"},
		{"num_small_schedulers over", srv(ServerConfig{NumSmallSchedulers: ptr(513)}), "server.num_small_schedulers"},
		{"num_small_schedulers negative", srv(ServerConfig{NumSmallSchedulers: ptr(-1)}), "server.num_small_schedulers"},
		{"NaN heartbeat rate", srv(ServerConfig{MaxHeartbeatsPerSecond: nan}), "server.max_heartbeats_per_second"},
		{"infinite heartbeat rate", srv(ServerConfig{MaxHeartbeatsPerSecond: math.Inf(1)}), "server.max_heartbeats_per_second"},
		{"negative nack timeout", srv(ServerConfig{EvalNackTimeout: -time.Second}), "server.eval_nack_timeout"},
		{"NaN rate limit", Config{DataDir: "/d", Server: ServerConfig{Enabled: true}, ManagementAPI: ManagementAPIConfig{RateLimit: nan}}, "management_api.rate_limit"},
	} {
		if err := tc.cfg.Finish(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Finish() = %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

// A file the server or management_api block refuses changes nothing of
// the config it was merged into.
func TestConfigRefusedFileChangesNothing(t *testing.T) {
	c := &Config{}
	if err := c.LoadFile(writeConfig(t, schedulerKeysFile)); err != nil {
		t.Fatal(err)
	}
	before := *c
	for _, body := range []string{
		"data_dir = \"/other\"\nserver {\n  num_schedulers = 4\n  job_gc_threshold = \"1d\"\n}\n",
		"log_level = \"debug\"\nserver { eval_delivery_limit = 0 }\n",
		"server { num_schedulers = 8 }\nmanagement_api { rate_limit = 0 }\n",
	} {
		if err := c.LoadFile(writeConfig(t, body)); err == nil {
			t.Fatalf("accepted:\n%s", body)
		}
		if !reflect.DeepEqual(*c, before) {
			t.Fatalf("a refused file changed the config:\n%s\ngot  %+v\nwant %+v", body, *c, before)
		}
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// deref returns what p points to, or T's zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
