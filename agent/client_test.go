package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

func TestClientConfigBlock(t *testing.T) {
	a := writeConfig(t, `
data_dir = "/d"
client {
  enabled           = true
  servers           = ["10.0.0.1:4646"]
  node_class        = "web"
  node_pool         = "edge"
  meta              = { rack = "r1", zone = "a" }
  network_interface = "eth0"
  max_kill_timeout  = "45s"
  gc_interval       = "2m"
  gc_max_allocs     = 7
  gc_alloc_age      = "3h"
  intro_token       = "70000000-0000-4000-8000-000000000001"
  reserved {
    cpu            = 500
    memory         = 256
    disk           = 1024
    reserved_ports = "22,80"
  }
  host_network "public" {
    cidr           = "203.0.113.0/24"
    reserved_ports = "22"
  }
}
`)
	b := writeConfig(t, `
client {
  meta = { zone = "b" }
  host_network "public" { interface = "eth1" }
  host_network "private" { cidr = "10.0.0.0/8" }
}
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
	cc := c.Client
	checks := []struct {
		name      string
		got, want any
	}{
		{"enabled", cc.Enabled, true},
		{"servers", strings.Join(cc.Servers, ","), "10.0.0.1:4646"},
		{"node_class", cc.NodeClass, "web"},
		{"node_pool", cc.NodePool, "edge"},
		{"meta kept", cc.Meta["rack"], "r1"},
		{"meta overridden", cc.Meta["zone"], "b"},
		{"network_interface", cc.NetworkInterface, "eth0"},
		{"max_kill_timeout", cc.MaxKillTimeout, 45 * time.Second},
		{"gc_interval", cc.GCInterval, 2 * time.Minute},
		{"gc_max_allocs", cc.GCMaxAllocs, 7},
		{"gc_alloc_age", cc.GCAllocAge, 3 * time.Hour},
		{"intro_token", cc.IntroToken, "70000000-0000-4000-8000-000000000001"},
		{"reserved", cc.Reserved, ReservedConfig{CPU: 500, MemoryMB: 256, DiskMB: 1024, ReservedPorts: "22,80"}},
		{"host network merged", *cc.HostNetworks["public"], HostNetworkConfig{CIDR: "203.0.113.0/24", Interface: "eth1", ReservedPorts: "22"}},
		{"host network added", cc.HostNetworks["private"].CIDR, "10.0.0.0/8"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestClientConfigErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`client { enabled = true }`, "client.servers: a client-only agent needs"},
		{`client {
  enabled = true
  servers = ["x:1"]
  max_kill_timeout = "5"
}`, "client.max_kill_timeout"},
		{`client {
  enabled = true
  servers = ["x:1"]
  reserved { reserved_ports = "80-70" }
}`, "client.reserved.reserved_ports"},
		{`client {
  enabled = true
  servers = ["x:1"]
  host_network "p" { cidr = "nope" }
}`, `client.host_network "p": cidr`},
		{`client {
  enabled = true
  servers = ["x:1"]
  bogus = 1
}`, "bogus"},
	} {
		c := &Config{DataDir: "/d"}
		err := c.LoadFile(writeConfig(t, tc.body))
		if err == nil {
			err = c.Finish()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v, want %q", tc.body, err, tc.want)
		}
	}
}

// startDevAgent runs `-dev` in process on free ports with its own data
// dir; mod, when given, changes the config before it is finished.
func startDevAgent(t *testing.T, mod ...func(*Config)) *Agent {
	t.Helper()
	ports := freePorts(t, 3)
	cfg := &Config{Name: "dev", LogLevel: "warn", Ports: Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]}}
	cfg.applyDev()
	for _, m := range mod {
		m(cfg)
	}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	if err := a.WaitForLeader(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	return a
}

func apiClient(t *testing.T, addr string) *api.Client {
	c, err := api.NewClient(api.Config{Address: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mockJob is a service job of count mock tasks that run until stopped.
func mockJob(id string, count int) *state.Job {
	return &state.Job{ID: id, Type: state.JobTypeService, Datacenters: []string{"*"},
		TaskGroups: []*state.TaskGroup{{Name: "g", Count: count, Tasks: []*state.Task{{
			Name: "t", Driver: "mock", Config: map[string]any{"stdout_string": "hello from mock\n"},
			Resources: &state.Resources{CPU: 10, MemoryMB: 10},
		}}}}}
}

// waitRunning waits until count allocations of job run.
func waitRunning(t *testing.T, c *api.Client, job string, count int) []*state.Allocation {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		allocs, _, err := c.Jobs().Allocations(context.Background(), job, false, nil)
		running := 0
		for _, a := range allocs {
			if a.ClientStatus == state.AllocClientStatusRunning {
				running++
			}
		}
		if err == nil && running == count {
			out := make([]*state.Allocation, 0, count)
			for _, s := range allocs {
				if s.ClientStatus != state.AllocClientStatusRunning {
					continue
				}
				a, _, err := c.Allocations().Info(context.Background(), s.ID, &api.QueryOptions{Namespace: s.Namespace})
				if err != nil {
					t.Fatalf("allocation %s: %v", s.ID, err)
				}
				out = append(out, a)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d allocations running (err %v)", running, count, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval of a deadline-bounded wait
	}
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	return getAs(t, http.DefaultClient, url, "", nil) // client_auth_test.go
}

func TestDevAgentRunsAClient(t *testing.T) {
	a := startDevAgent(t)
	if a.Client() == nil {
		t.Fatal("-dev has no client")
	}
	c := apiClient(t, a.HTTPAddr())
	if _, _, err := c.Jobs().Register(context.Background(), mockJob("web", 2), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := waitRunning(t, c, "web", 2)
	node, _, err := c.Nodes().Info(context.Background(), a.Client().NodeID(), nil)
	if err != nil || node.Status != state.NodeStatusReady || node.Drivers["mock"] == nil || node.HTTPAddr != a.HTTPAddr() {
		t.Fatalf("node %+v, %v", node, err)
	}
	// The in-process client serves /v1/client/* for its allocations.
	id := allocs[0].ID
	if code, body := getBody(t, "http://"+a.HTTPAddr()+"/v1/client/allocation/"+id+"/stats"); code != 200 || !strings.Contains(body, `"Tasks"`) {
		t.Fatalf("stats: %d %s", code, body)
	}
	if code, body := getBody(t, "http://"+a.HTTPAddr()+"/v1/client/fs/logs/"+id+"?task=t&type=stdout&plain=true"); code != 200 || !strings.Contains(body, "hello from mock") {
		t.Fatalf("logs: %d %q", code, body)
	}
}

// A dev agent with ACLs on introduces its own client: the node registers
// without any token configured, while a stranger's register is refused.
func TestDevAgentWithACLsRegistersItsClient(t *testing.T) {
	a := startDevAgent(t, func(c *Config) { c.ACL.Enabled = true })
	ctx := ctxT(t, 20*time.Second)
	if err := a.Client().WaitRegistered(ctx); err != nil {
		t.Fatalf("the dev agent's client did not register: %v", err)
	}
	stranger := &state.Node{ID: state.NewID(), SecretID: state.NewID(), Datacenter: "dc1"}
	c, err := api.NewClient(api.Config{Address: "http://" + a.HTTPAddr(), Token: stranger.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Nodes().Register(ctx, stranger, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a stranger registered a node with a self-chosen secret: %v", err)
	}
}

func TestClientOnlyAgent(t *testing.T) {
	srv := startSchedulerAgent(t)
	ports := freePorts(t, 3)
	cfg := &Config{Name: "worker-1", DataDir: t.TempDir(), LogLevel: "warn",
		Ports:  Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Client: ClientConfig{Enabled: true, Servers: []string{"http://" + srv.HTTPAddr()}, NodeClass: "worker", Meta: map[string]string{"k": "v"}}}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	if a.Store() != nil {
		t.Fatal("a client-only agent opened a state store")
	}
	c := apiClient(t, srv.HTTPAddr())
	if _, _, err := c.Jobs().Register(context.Background(), mockJob("batch", 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := waitRunning(t, c, "batch", 1)
	if allocs[0].NodeID != a.Client().NodeID() {
		t.Fatalf("placed on %s, not the client-only agent's node %s", allocs[0].NodeID, a.Client().NodeID())
	}
	node, _, err := c.Nodes().Info(context.Background(), allocs[0].NodeID, nil)
	if err != nil || node.NodeClass != "worker" || node.Meta["k"] != "v" || node.Name != "worker-1" {
		t.Fatalf("node %+v, %v", node, err)
	}
	// The client agent answers /v1/agent/self with its node ID, and the
	// server proxies an allocation's client endpoints to it.
	code, body := getBody(t, "http://"+a.HTTPAddr()+"/v1/agent/self")
	var self struct {
		Stats map[string]map[string]string `json:"stats"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &self) != nil || self.Stats["client"]["node_id"] != node.ID {
		t.Fatalf("agent/self: %d %s", code, body)
	}
	if code, body := getBody(t, "http://"+srv.HTTPAddr()+"/v1/client/fs/logs/"+allocs[0].ID+"?task=t&plain=true"); code != 200 || !strings.Contains(body, "hello from mock") {
		t.Fatalf("logs through the server: %d %q", code, body)
	}
}

// A dev agent's client reads its allocations from, and reports to, the
// server in its own process (client.Config.Local): its allocations run
// while the server's HTTP metrics show no read of the changes endpoint
// and no report by HTTP, though they show the node's register (over
// HTTP, as ever).
func TestDevAgentClientTalksToItsServerInProcess(t *testing.T) {
	a := startDevAgent(t)
	c := apiClient(t, a.HTTPAddr())
	if _, _, err := c.Jobs().Register(context.Background(), mockJob("web", 3), nil, nil); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, c, "web", 3)
	if a.Client().BatchesSent() == 0 {
		t.Fatal("the client sent no report")
	}
	code, body := getBody(t, "http://"+a.HTTPAddr()+"/v1/metrics?format=prometheus")
	if code != http.StatusOK {
		t.Fatalf("metrics: %d %s", code, body)
	}
	count := func(route, method string) string {
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "sched_http_request_duration_seconds_count{") &&
				strings.Contains(line, `route="`+route+`"`) && strings.Contains(line, `method="`+method+`"`) {
				return line
			}
		}
		return ""
	}
	if count("/v1/node/register", http.MethodPut) == "" && count("/v1/node/register", http.MethodPost) == "" {
		t.Fatalf("no register in the metrics (the check below would prove nothing):\n%s", body)
	}
	for _, r := range []struct{ route, method string }{
		{"/v1/node/:node_id/allocations/changes", http.MethodGet},
		{"/v1/node/:node_id/allocations", http.MethodPut},
		{"/v1/node/:node_id/allocations", http.MethodPost},
	} {
		if line := count(r.route, r.method); line != "" {
			t.Errorf("the client used HTTP: %s", line)
		}
	}
}
