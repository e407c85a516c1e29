package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/http/mgmt"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/leader"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// startSchedulerAgent runs a one-server agent on free loopback ports and
// waits until it leads.
func startSchedulerAgent(t *testing.T) *Agent {
	t.Helper()
	return startSchedulerAgentWith(t, nil)
}

// startSchedulerAgentWith is startSchedulerAgent with edit applied to the
// config before Finish.
func startSchedulerAgentWith(t *testing.T, edit func(*Config)) *Agent {
	t.Helper()
	var ports []int
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	cfg := &Config{
		Name:     "sched-test",
		DataDir:  t.TempDir(),
		BindAddr: "127.0.0.1",
		LogLevel: "warn",
		Ports:    Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Server:   ServerConfig{Enabled: true, BootstrapExpect: 1},
	}
	if edit != nil {
		edit(cfg)
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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return a
}

// waitStore waits, on the store's writes, until cond holds.
func waitStore(t *testing.T, store *store.Store, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ws := memdb.NewWatchSet()
		store.WatchLatestIndex(ws)
		if cond() {
			return
		}
		if err := ws.WatchCtx(ctx); err != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestSchedulerServicesPlaceRegisteredJob checks the wiring of the
// scheduler's leader services: a job registered over HTTP is placed on a
// node by the leader's broker, workers and plan applier, and the HTTP
// layer's leader services answer heartbeats.
func TestSchedulerServicesPlaceRegisteredJob(t *testing.T) {
	a := startSchedulerAgent(t)
	w := &raftWriter{node: a.node}
	node := scheduler.MockNode("n1")
	if _, _, err := w.Apply(context.Background(), store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: node}); err != nil {
		t.Fatal(err)
	}
	job := scheduler.MockJob("web")
	job.TaskGroups[0].Count = 3
	body, _ := json.Marshal(map[string]any{"Job": job})
	resp, err := http.Post("http://"+a.HTTPAddr()+"/v1/jobs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("register: %d %s", resp.StatusCode, out)
	}
	waitStore(t, a.Store(), "3 allocations placed", func() bool {
		allocs, _ := a.Store().AllocsByJob(nil, state.DefaultNamespace, "web", false)
		live := 0
		for _, al := range allocs {
			if !al.Terminal() && al.NodeID == node.ID {
				live++
			}
		}
		return live == 3
	})
	if a.sched == nil {
		t.Fatal("scheduler runtime not wired")
	}
	ttl, err := a.sched.rt.Heartbeat(node.ID)
	if err != nil || ttl < leader.DefaultMinHeartbeatTTL {
		t.Fatalf("heartbeat = %s, %v; want a TTL of at least %s", ttl, err, leader.DefaultMinHeartbeatTTL)
	}
}

// TestConfigReachesSchedulerAndManagementAPI checks that the server block's
// scheduler keys reach the running scheduler and management_api.rate_limit
// the HTTP server: a node's heartbeat TTL is at least min_heartbeat_ttl,
// and /api/v2/ping announces the configured limit, or none when it is
// disabled.
func TestConfigReachesSchedulerAndManagementAPI(t *testing.T) {
	a := startSchedulerAgentWith(t, func(c *Config) {
		c.Server.MinHeartbeatTTL = time.Hour
		c.ManagementAPI.RateLimit = 7
	})
	w := &raftWriter{node: a.node}
	node := scheduler.MockNode("n1")
	if _, _, err := w.Apply(context.Background(), store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: node}); err != nil {
		t.Fatal(err)
	}
	var ttl time.Duration
	var err error
	// The leader's services start just after leadership is won.
	testutil.WaitFor(t, 5*time.Second, "the leader services to start", func() bool {
		ttl, err = a.sched.rt.Heartbeat(node.ID)
		return !errors.Is(err, leader.ErrNotLeader)
	})
	if err != nil || ttl < time.Hour {
		t.Fatalf("heartbeat = %s, %v; want a TTL of at least min_heartbeat_ttl (1h)", ttl, err)
	}
	if got := pingRateLimit(t, a); got != "7" {
		t.Errorf("%s = %q, want the configured 7", mgmt.HeaderRateLimitLimit, got)
	}

	off := startSchedulerAgentWith(t, func(c *Config) { c.ManagementAPI.RateLimit = -1 })
	if got := pingRateLimit(t, off); got != "" {
		t.Errorf("rate_limit = -1: %s = %q, want no limit", mgmt.HeaderRateLimitLimit, got)
	}
}

// pingRateLimit returns the rate-limit header of GET /api/v2/ping.
func pingRateLimit(t *testing.T, a *Agent) string {
	t.Helper()
	resp, err := http.Get("http://" + a.HTTPAddr() + "/api/v2/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("ping: %d", resp.StatusCode)
	}
	return resp.Header.Get(mgmt.HeaderRateLimitLimit)
}

// TestAPIWritesHoldTheWorkersBack checks the wiring of leader.Foreground:
// the HTTP API's writer counts its writes in flight on the gauge the
// scheduler's workers read, and the client agents' reports are not
// counted (the workers give way to users' writes only).
func TestAPIWritesHoldTheWorkersBack(t *testing.T) {
	a := startSchedulerAgent(t)
	w := a.newWriter()
	if w.fg == nil || w.fg != a.foreground {
		t.Fatal("the HTTP API's writer does not count on the agent's gauge")
	}
	for _, typ := range []store.MessageType{store.AllocClientUpdateRequestType, store.NodeUpsertRequestType, store.NodeUpdateStatusRequestType} {
		if !clientTraffic(typ) {
			t.Errorf("type %d counted as an API write", typ)
		}
	}
	for _, typ := range []store.MessageType{store.JobRegisterRequestType, store.JobDeregisterRequestType, store.JobDispatchRequestType, store.WorkspaceCreateRequestType} {
		if clientTraffic(typ) {
			t.Errorf("type %d not counted as an API write", typ)
		}
	}

	// Writes in flight are seen on the gauge while they wait for Raft,
	// and none is left once they return.
	done := make(chan error, 1)
	go func() {
		for i := range 200 {
			ns := &state.Namespace{Name: fmt.Sprintf("ns-%d", i)}
			if _, _, err := w.Apply(context.Background(), store.NamespaceUpsertRequestType, &store.NamespaceUpsertRequest{Namespaces: []*state.Namespace{ns}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	seen := false
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
			seen = seen || a.foreground.InFlight() > 0
			runtime.Gosched()
		}
	}
	if !seen {
		t.Error("200 API writes made and none seen in flight on the gauge")
	}
	if n := a.foreground.InFlight(); n != 0 {
		t.Errorf("%d writes counted in flight after every write returned", n)
	}
}
