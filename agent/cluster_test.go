package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/state"
)

// testServer is one in-process server agent of a test cluster.
type testServer struct {
	t   *testing.T
	cfg *Config
	a   *Agent
	log *lockedBuffer
	// hc sends the test's requests; nil means http.DefaultClient.
	hc *http.Client
}

// lockedBuffer collects an agent's logs; they are printed if the test
// fails.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freePorts returns n TCP ports that were free a moment ago on loopback
// (and, for gossip, free for UDP too: memberlist binds both).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var keep []io.Closer
	defer func() {
		for _, c := range keep {
			c.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			l.Close()
			continue
		}
		keep = append(keep, l, u)
		ports = append(ports, p)
	}
	return ports
}

// newTestCluster starts n servers with bootstrap_expect = n, each told to
// join the others' gossip addresses, and waits until all know a leader.
// Each mod changes every server's config before Finish.
func newTestCluster(t *testing.T, n int, mod ...func(*Config)) []*testServer {
	t.Helper()
	ports := freePorts(t, 3*n)
	var gossip []string
	for i := range n {
		gossip = append(gossip, "127.0.0.1:"+strconv.Itoa(ports[3*i+2]))
	}
	var servers []*testServer
	for i := range n {
		cfg := &Config{
			Name:     fmt.Sprintf("s%d", i+1),
			DataDir:  t.TempDir(),
			BindAddr: "127.0.0.1",
			LogLevel: "warn",
			Ports:    Ports{HTTP: ports[3*i], Raft: ports[3*i+1], Gossip: ports[3*i+2]},
			Server: ServerConfig{
				Enabled:         true,
				BootstrapExpect: n,
				RetryJoin:       gossip,
				RetryInterval:   200 * time.Millisecond,
			},
		}
		for _, m := range mod {
			m(cfg)
		}
		if err := cfg.Finish(); err != nil {
			t.Fatal(err)
		}
		s := &testServer{t: t, cfg: cfg}
		s.start()
		servers = append(servers, s)
	}
	for _, s := range servers {
		if err := s.a.WaitForLeader(ctxT(t, 20*time.Second)); err != nil {
			t.Fatalf("%s: %v", s.cfg.Name, err)
		}
	}
	return servers
}

// start runs the agent on its config (a restart keeps the data dir and
// ports).
func (s *testServer) start() {
	s.t.Helper()
	s.log = &lockedBuffer{}
	a, err := New(s.cfg, slog.New(slog.NewTextHandler(s.log, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		s.t.Fatalf("New(%s): %v", s.cfg.Name, err)
	}
	a.Start()
	s.a = a
	t := s.t
	t.Cleanup(func() {
		a.Shutdown()
		if t.Failed() {
			t.Logf("%s logs:\n%s", s.cfg.Name, s.log.String())
		}
	})
}

func (s *testServer) url(path string) string {
	if s.cfg.TLS.HTTP {
		return "https://" + s.cfg.HTTPAddr() + path
	}
	return "http://" + s.cfg.HTTPAddr() + path
}

// do sends a request and returns status, headers and body.
func (s *testServer) do(method, path string, body any) (int, http.Header, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url(path), r)
	hc := s.hc
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s on %s: %v", method, path, s.cfg.Name, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

// mustJSON sends a request that must answer 200 and decodes the answer.
func (s *testServer) mustJSON(method, path string, body, out any) http.Header {
	s.t.Helper()
	code, h, b := s.do(method, path, body)
	if code != http.StatusOK {
		s.t.Fatalf("%s %s on %s: %d %s", method, path, s.cfg.Name, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return h
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// leaderOf waits until exactly one of servers leads, every one of
// servers names it as its leader and its configuration holds them all,
// and returns it. Waiting for the whole cluster to agree, not just for a
// leader, keeps a server that joined after the first election from
// starting another one under the test's first write.
func leaderOf(t *testing.T, servers []*testServer, d time.Duration) *testServer {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var leaders []*testServer
		for _, s := range servers {
			if s.a.node.IsLeader() {
				leaders = append(leaders, s)
			}
		}
		if len(leaders) == 1 && settled(leaders[0], servers) {
			return leaders[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d leaders after %s", len(leaders), d)
		}
		select {
		case <-servers[0].a.node.LeaderChanged():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// followerOf returns the first of servers that is not leader.
func followerOf(leader *testServer, servers []*testServer) *testServer {
	for _, s := range servers {
		if s != leader {
			return s
		}
	}
	return nil
}

// settled reports whether every one of servers follows leader and
// leader's configuration holds them all.
func settled(leader *testServer, servers []*testServer) bool {
	conf, err := leader.a.node.Configuration()
	if err != nil {
		return false
	}
	voters := map[string]bool{}
	for _, c := range conf {
		voters[c.ID] = true
	}
	for _, s := range servers {
		if _, id := s.a.node.Leader(); id != leader.a.node.ID() || !voters[s.a.node.ID()] {
			return false
		}
	}
	return true
}

func TestClusterFormsForwardsWritesAndReadsConsistently(t *testing.T) {
	servers := newTestCluster(t, 3)
	leader := leaderOf(t, servers, 10*time.Second)

	var conf state.RaftConfiguration
	servers[0].mustJSON("GET", "/v1/operator/raft/configuration", nil, &conf)
	if len(conf.Servers) != 3 {
		t.Fatalf("raft configuration %+v, want 3 servers", conf)
	}
	names := map[string]bool{}
	for _, s := range conf.Servers {
		names[s.Node] = true
		if !s.Voter {
			t.Errorf("%s is not a voter", s.Node)
		}
	}
	if !names["s1"] || !names["s2"] || !names["s3"] {
		t.Errorf("server names %v", names)
	}

	// A write through each server lands once, on the leader, and reads
	// back consistently (no ?stale) from every server at once.
	for i, s := range servers {
		ns := fmt.Sprintf("via-%d", i)
		h := s.mustJSON("PUT", "/v1/namespace/"+ns, map[string]string{"Description": s.cfg.Name}, nil)
		written, _ := strconv.ParseUint(h.Get(schedhttp.HeaderIndex), 10, 64)
		if written == 0 {
			t.Fatalf("write through %s: no index", s.cfg.Name)
		}
		for _, r := range servers {
			var got state.Namespace
			rh := r.mustJSON("GET", "/v1/namespace/"+ns, nil, &got)
			if got.Description != s.cfg.Name {
				t.Errorf("read of %s on %s: %+v", ns, r.cfg.Name, got)
			}
			if rh.Get(schedhttp.HeaderKnownLeader) != "true" {
				t.Errorf("%s: KnownLeader %q", r.cfg.Name, rh.Get(schedhttp.HeaderKnownLeader))
			}
			lc, _ := strconv.Atoi(rh.Get(schedhttp.HeaderLastContact))
			if r == leader && lc != 0 || lc > 2000 {
				t.Errorf("%s: LastContact %dms", r.cfg.Name, lc)
			}
		}
	}

	var leaderAddr string
	servers[1].mustJSON("GET", "/v1/status/leader", nil, &leaderAddr)
	if leaderAddr != leader.a.node.Addr() {
		t.Errorf("status/leader = %q, want %q", leaderAddr, leader.a.node.Addr())
	}
	var peers []string
	servers[2].mustJSON("GET", "/v1/status/peers", nil, &peers)
	if len(peers) != 3 {
		t.Errorf("status/peers = %v", peers)
	}
	var members state.ServerMembers
	servers[0].mustJSON("GET", "/v1/agent/members", nil, &members)
	if len(members.Members) != 3 {
		t.Fatalf("members %+v", members)
	}
	for _, m := range members.Members {
		if m.Status != "alive" || m.Tags["raft_addr"] == "" || m.Tags["http_addr"] == "" || !strings.HasSuffix(m.Name, ".global") {
			t.Errorf("member %+v", m)
		}
	}
	var health state.AgentHealthResponse
	servers[2].mustJSON("GET", "/v1/agent/health", nil, &health)
	if !health.Server.OK {
		t.Errorf("health %+v", health.Server)
	}
	// A blocking query on a follower wakes on a write made through
	// another server.
	var follower, writer *testServer
	for _, s := range servers {
		switch {
		case s == leader:
		case follower == nil:
			follower = s
		default:
			writer = s
		}
	}
	h := follower.mustJSON("GET", "/v1/namespaces", nil, nil)
	index := h.Get(schedhttp.HeaderIndex)
	woke := make(chan string, 1)
	go func() {
		_, bh, _ := follower.do("GET", "/v1/namespaces?index="+index+"&wait=20s", nil)
		woke <- bh.Get(schedhttp.HeaderIndex)
	}()
	writer.mustJSON("PUT", "/v1/namespace/wake-up", map[string]string{}, nil)
	select {
	case got := <-woke:
		if n, _ := strconv.Atoi(got); n <= mustAtoi(index) {
			t.Errorf("blocking query on %s returned index %s, not past %s", follower.cfg.Name, got, index)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("blocking query on follower %s did not wake on a write through %s", follower.cfg.Name, writer.cfg.Name)
	}

	var self state.AgentSelf
	servers[1].mustJSON("GET", "/v1/agent/self", nil, &self)
	if self.Config["Name"] != "s2" || self.Stats["raft"]["state"] != "Follower" && servers[1] != leader {
		t.Errorf("self config %v, raft state %q", self.Config["Name"], self.Stats["raft"]["state"])
	}
}

func TestClusterFailoverKeepsWritesAndRestartedServerCatchesUp(t *testing.T) {
	servers := newTestCluster(t, 3)
	old := leaderOf(t, servers, 10*time.Second)
	var survivors []*testServer
	for _, s := range servers {
		if s != old {
			survivors = append(survivors, s)
		}
	}
	for i := range 5 {
		survivors[0].mustJSON("PUT", fmt.Sprintf("/v1/namespace/before-%d", i), map[string]string{}, nil)
	}
	if err := old.a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// Writes through a survivor wait for the new leader and succeed.
	start := time.Now()
	survivors[1].mustJSON("PUT", "/v1/namespace/after", map[string]string{"Description": "failover"}, nil)
	t.Logf("first write after the leader stopped took %s", time.Since(start))
	newLeader := leaderOf(t, survivors, 10*time.Second)
	for _, s := range survivors {
		var list []*state.Namespace
		s.mustJSON("GET", "/v1/namespaces", nil, &list)
		if len(list) < 7 { // default, before-0..4, after
			t.Errorf("%s lists %d namespaces after failover, want 7", s.cfg.Name, len(list))
		}
	}

	// The old leader restarts on its data dir and ports and catches up.
	old.start()
	var got state.Namespace
	old.mustJSON("GET", "/v1/namespace/after", nil, &got)
	if got.Description != "failover" {
		t.Fatalf("restarted server reads %+v", got)
	}
	if old.a.node.IsLeader() && newLeader.a.node.IsLeader() {
		t.Fatal("two leaders")
	}
}

func TestClusterSnapshotSaveAndRestoreOverHTTP(t *testing.T) {
	servers := newTestCluster(t, 3)
	follower := servers[0]
	if follower.a.node.IsLeader() {
		follower = servers[1]
	}
	follower.mustJSON("PUT", "/v1/namespace/kept", map[string]string{"Description": "before"}, nil)
	code, _, archive := follower.do("GET", "/v1/operator/snapshot", nil)
	if code != http.StatusOK || len(archive) < 20 {
		t.Fatalf("snapshot save: %d, %d bytes", code, len(archive))
	}
	follower.mustJSON("PUT", "/v1/namespace/kept", map[string]string{"Description": "after"}, nil)
	follower.mustJSON("PUT", "/v1/namespace/dropped", map[string]string{}, nil)

	// A damaged archive is refused with a 400 and changes nothing.
	bad := bytes.Clone(archive)
	bad = bad[:len(bad)-10]
	req, _ := http.NewRequest("PUT", follower.url("/v1/operator/snapshot"), bytes.NewReader(bad))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), "invalid snapshot archive") {
		t.Fatalf("damaged restore: %d %s", resp.StatusCode, msg)
	}

	req, _ = http.NewRequest("PUT", follower.url("/v1/operator/snapshot"), bytes.NewReader(archive))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("restore through a follower: %d %s", resp.StatusCode, msg)
	}
	// A write after the restore, then every server shows the saved state.
	follower.mustJSON("PUT", "/v1/namespace/later", map[string]string{}, nil)
	for _, s := range servers {
		var ns state.Namespace
		s.mustJSON("GET", "/v1/namespace/kept", nil, &ns)
		if ns.Description != "before" {
			t.Errorf("%s: kept = %q after restore, want before", s.cfg.Name, ns.Description)
		}
		if code, _, _ := s.do("GET", "/v1/namespace/dropped", nil); code != http.StatusNotFound {
			t.Errorf("%s: a namespace created after the save survived the restore (%d)", s.cfg.Name, code)
		}
	}
}

func TestClusterGracefulLeaveRemovesTheServer(t *testing.T) {
	servers := newTestCluster(t, 3)
	leader := leaderOf(t, servers, 10*time.Second)
	leaving := followerOf(leader, servers)
	leaving.cfg.Server.LeaveOnTerminate = true
	if err := leaving.a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var conf state.RaftConfiguration
		leader.mustJSON("GET", "/v1/operator/raft/configuration", nil, &conf)
		if len(conf.Servers) == 2 {
			for _, s := range conf.Servers {
				if s.Node == leaving.cfg.Name {
					t.Fatalf("%s still in %+v", s.Node, conf.Servers)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server that left is still in the raft configuration: %+v", conf.Servers)
		}
		<-time.After(100 * time.Millisecond)
	}
	var members state.ServerMembers
	leader.mustJSON("GET", "/v1/agent/members", nil, &members)
	for _, m := range members.Members {
		if m.Name == leaving.cfg.Name+".global" && m.Status != "left" {
			t.Errorf("%s is %s in gossip, want left", m.Name, m.Status)
		}
	}
	// The cluster of two keeps accepting writes.
	leader.mustJSON("PUT", "/v1/namespace/after-leave", map[string]string{}, nil)
}

func TestClusterRefusesToMergeAnotherCluster(t *testing.T) {
	a := newTestCluster(t, 1)[0]
	b := newTestCluster(t, 1)[0]
	var join state.JoinResponse
	b.mustJSON("PUT", "/v1/agent/join?address="+a.cfg.Advertise.Gossip, nil, &join)
	if join.NumJoined != 1 {
		t.Fatalf("join %+v", join)
	}
	// Both leaders see the other in gossip, ask it for its peers, and
	// refuse to add a server of another cluster.
	for _, s := range []*testServer{a, b} {
		deadline := time.Now().Add(15 * time.Second)
		for s.a.cluster.refused.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not refuse the other cluster's server", s.cfg.Name)
			}
			<-time.After(50 * time.Millisecond)
		}
		var conf state.RaftConfiguration
		s.mustJSON("GET", "/v1/operator/raft/configuration", nil, &conf)
		if len(conf.Servers) != 1 {
			t.Fatalf("%s merged another cluster: %+v", s.cfg.Name, conf.Servers)
		}
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// In a cluster of servers that run clients too, a follower's client
// reads its allocations from its own server in-process and sends its
// reports by HTTP (its server forwards them to the leader, whose own
// client reports in-process): allocations pinned to the follower's node
// run, the leader's HTTP metrics count the reports, and the follower's
// count no read of the changes endpoint for them. (A first job comes
// before the count: the client's reads before the cluster settled may
// have gone by HTTP, as they should while its server knew no leader.)
func TestClusterFollowerClientReadsInProcessAndReportsByHTTP(t *testing.T) {
	servers := newTestCluster(t, 3, func(c *Config) { c.Client.Enabled = true })
	leader := leaderOf(t, servers, 20*time.Second)
	follower := followerOf(leader, servers)
	nodeID := follower.a.Client().NodeID()
	c := apiClient(t, leader.cfg.HTTPAddr())
	runPinned := func(id string) {
		t.Helper()
		job := mockJob(id, 2)
		job.Constraints = []*state.Constraint{{LTarget: "${node.unique.id}", RTarget: nodeID, Operand: "="}}
		if _, _, err := c.Jobs().Register(context.Background(), job, nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, a := range waitRunning(t, c, id, 2) {
			if a.NodeID != nodeID {
				t.Fatalf("allocation %s on %s, want the follower's node %s", a.ID, a.NodeID, nodeID)
			}
		}
	}
	count := func(s *testServer, route, method string) int {
		_, _, body := s.do(http.MethodGet, "/v1/metrics?format=prometheus", nil)
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "sched_http_request_duration_seconds_count{") &&
				strings.Contains(line, `route="`+route+`"`) && strings.Contains(line, `method="`+method+`"`) {
				f := strings.Fields(line)
				return mustAtoi(f[len(f)-1])
			}
		}
		return 0
	}
	const changes, reports = "/v1/node/:node_id/allocations/changes", "/v1/node/:node_id/allocations"
	runPinned("first")
	readsBefore, reportsBefore := count(follower, changes, http.MethodGet), count(leader, reports, http.MethodPut)
	runPinned("second")
	follower.mustJSON(http.MethodGet, "/v1/jobs", nil, nil) // a read the follower serves and counts
	if count(follower, "/v1/jobs", http.MethodGet) == 0 {
		t.Fatal("the follower's metrics count no read (the check below would prove nothing)")
	}
	if n := count(follower, changes, http.MethodGet); n != readsBefore {
		t.Errorf("the follower's client read its allocations by HTTP: %d reads, %d before", n, readsBefore)
	}
	if n := count(leader, reports, http.MethodPut); n <= reportsBefore {
		t.Errorf("the leader received %d reports by HTTP, %d before the second job: the follower's client must send them so", n, reportsBefore)
	}
}
