package raft

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/schedhq/sched/internal/testutil"
)

// fastGossip shortens memberlist's timing so failures are noticed within a
// second on loopback.
func fastGossip(c *memberlist.Config) {
	c.ProbeInterval = 100 * time.Millisecond
	c.ProbeTimeout = 50 * time.Millisecond
	c.GossipInterval = 20 * time.Millisecond
	c.SuspicionMult = 1
	c.PushPullInterval = time.Second
	c.TCPTimeout = time.Second
	c.GossipToTheDeadTime = time.Second
}

// startGossip starts a gossip member on a free loopback port, shut down
// with the test.
func startGossip(t testing.TB, meta ServerMeta, key []byte) *Gossip {
	t.Helper()
	if meta.Region == "" {
		meta.Region = "global"
	}
	g, err := NewGossip(GossipConfig{
		BindAddr:   "127.0.0.1:0",
		Meta:       meta,
		EncryptKey: key,
		Logger:     testLogger(t),
		tune:       fastGossip,
	})
	if err != nil {
		t.Fatalf("NewGossip(%s): %v", meta.ID, err)
	}
	t.Cleanup(func() { _ = g.Shutdown() })
	return g
}

// waitMembers waits until g sees want (ID → status).
func waitMembers(t testing.TB, g *Gossip, d time.Duration, want map[string]MemberStatus) {
	t.Helper()
	deadline := time.After(d)
	for {
		changed := g.Changed()
		got := map[string]MemberStatus{}
		for _, m := range g.Members() {
			got[m.ID] = m.Status
		}
		match := len(got) >= len(want)
		for id, st := range want {
			if got[id] != st {
				match = false
			}
		}
		if match {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s: members %v after %s, want %v", g.Local().ID, got, d, want)
		}
	}
}

func TestGossipMembersMetadataLeaveAndFailure(t *testing.T) {
	var gs []*Gossip
	for i := range 3 {
		id := fmt.Sprintf("g%d", i+1)
		gs = append(gs, startGossip(t, ServerMeta{ID: id, Name: "server-" + id, RaftAddr: id + ":4647", HTTPAddr: id + ":4646", BootstrapExpect: 3}, nil))
	}
	// Joining our own address counts for nothing.
	if n, err := gs[0].Join([]string{gs[0].LocalAddr()}); err == nil || n != 0 {
		t.Errorf("joining only ourselves: n=%d err=%v, want an error", n, err)
	}
	for _, g := range gs[1:] {
		if n, err := g.Join([]string{gs[0].LocalAddr()}); err != nil || n != 1 {
			t.Fatalf("Join: n=%d err=%v", n, err)
		}
	}
	all := map[string]MemberStatus{"g1": MemberAlive, "g2": MemberAlive, "g3": MemberAlive}
	for _, g := range gs {
		waitMembers(t, g, 5*time.Second, all)
	}
	m, ok := gs[0].Member("g3")
	if !ok || m.Name != "server-g3" || m.HTTPAddr != "g3:4646" || m.RaftAddr != "g3:4647" || m.BootstrapExpect != 3 || m.Region != "global" {
		t.Fatalf("g1's view of g3: %+v", m)
	}

	// Metadata changes spread.
	if err := gs[2].UpdateMeta(func(m *ServerMeta) { m.HTTPAddr = "g3:9999"; m.ID = "ignored" }); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "g1 to see g3's new HTTP address", func() bool {
		m, _ := gs[0].Member("g3")
		return m.HTTPAddr == "g3:9999"
	})

	// A graceful leave is "left", a crash is "failed".
	if err := gs[1].Leave(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = gs[1].Shutdown()
	waitMembers(t, gs[0], 5*time.Second, map[string]MemberStatus{"g2": MemberLeft})
	_ = gs[2].Shutdown()
	waitMembers(t, gs[0], 10*time.Second, map[string]MemberStatus{"g2": MemberLeft, "g3": MemberFailed})
}

func TestGossipEncryptionKeepsOutStrangers(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a := startGossip(t, ServerMeta{ID: "a"}, key)
	b := startGossip(t, ServerMeta{ID: "b"}, key)
	plain := startGossip(t, ServerMeta{ID: "plain"}, nil)
	other := startGossip(t, ServerMeta{ID: "other"}, bytes.Repeat([]byte{8}, 32))

	if _, err := b.Join([]string{a.LocalAddr()}); err != nil {
		t.Fatalf("same key: %v", err)
	}
	waitMembers(t, a, 5*time.Second, map[string]MemberStatus{"a": MemberAlive, "b": MemberAlive})
	for _, g := range []*Gossip{plain, other} {
		if _, err := g.Join([]string{a.LocalAddr()}); err == nil {
			t.Errorf("%s joined an encrypted pool", g.Local().ID)
		}
	}
	if _, ok := a.Member("plain"); ok {
		t.Error("a lists the member without a key")
	}
	if _, ok := a.Member("other"); ok {
		t.Error("a lists the member with another key")
	}
	if _, err := NewGossip(GossipConfig{BindAddr: "127.0.0.1:0", Meta: ServerMeta{ID: "x"}, EncryptKey: []byte("short")}); err == nil || !strings.Contains(err.Error(), "16, 24 or 32") {
		t.Errorf("5-byte key: err = %v", err)
	}
}

// gossipServer is a raft node with its gossip member.
type gossipServer struct {
	node   *Node
	gossip *Gossip
	fsm    *kvFSM
	dir    string
	cfg    Config
}

// startGossipServer starts a node (no single-server bootstrap) and its
// gossip member advertising it. dir "" makes a new data dir; meta.ID must
// match a reused dir's server.
func startGossipServer(t *testing.T, id, dir string, expect int, tweak func(*Config)) *gossipServer {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := testConfig(t, id, dir, false)
	if tweak != nil {
		tweak(&cfg)
	}
	kv := newKV()
	n, err := New(cfg, kv)
	if err != nil {
		t.Fatalf("New(%s): %v", id, err)
	}
	g := startGossip(t, ServerMeta{ID: id, Name: id, RaftAddr: n.Addr(), BootstrapExpect: expect}, nil)
	s := &gossipServer{node: n, gossip: g, fsm: kv, dir: dir, cfg: cfg}
	t.Cleanup(s.stop)
	return s
}

func (s *gossipServer) stop() {
	_ = s.gossip.Shutdown()
	_ = s.node.Shutdown()
}

// probeNodes is a StateProbe over in-process nodes.
func probeNodes(servers ...*gossipServer) StateProbe {
	return func(_ context.Context, m Member) (bool, error) {
		for _, s := range servers {
			if s.node.ID() == m.ID {
				return s.node.HasState(), nil
			}
		}
		return false, fmt.Errorf("unknown server %s", m.ID)
	}
}

// bootstrapAll runs BootstrapWithGossip on every server and waits for all
// of them to return.
func bootstrapAll(t *testing.T, servers []*gossipServer, expect int) {
	t.Helper()
	errs := make(chan error, len(servers))
	ctx := ctxT(t, 20*time.Second)
	for _, s := range servers {
		go func() { errs <- s.node.BootstrapWithGossip(ctx, s.gossip, expect, probeNodes(servers...)) }()
	}
	for range servers {
		if err := <-errs; err != nil {
			t.Fatalf("BootstrapWithGossip: %v", err)
		}
	}
}

// leaderOf waits until one of servers leads and returns it.
func leaderOf(t *testing.T, servers []*gossipServer, d time.Duration) *gossipServer {
	t.Helper()
	var leader *gossipServer
	testutil.WaitFor(t, d, "a leader", func() bool {
		for _, s := range servers {
			if s.node.IsLeader() {
				leader = s
				return true
			}
		}
		return false
	})
	return leader
}

func TestGossipBootstrapsOnceAndNeverAgain(t *testing.T) {
	var servers []*gossipServer
	for i := range 3 {
		servers = append(servers, startGossipServer(t, fmt.Sprintf("s%d", i+1), "", 3, nil))
	}
	// Two servers meet: not enough, nobody bootstraps.
	if _, err := servers[1].gossip.Join([]string{servers[0].gossip.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, servers[0].gossip, 5*time.Second, map[string]MemberStatus{"s1": MemberAlive, "s2": MemberAlive})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := servers[0].node.BootstrapWithGossip(ctx, servers[0].gossip, 3, nil)
	cancel()
	if err == nil || servers[0].node.HasState() {
		t.Fatalf("bootstrapped with two of three servers (err %v)", err)
	}

	if _, err := servers[2].gossip.Join([]string{servers[1].gossip.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	bootstrapAll(t, servers, 3)
	leader := leaderOf(t, servers, 10*time.Second)
	conf, err := leader.node.Configuration()
	if err != nil || len(conf) != 3 {
		t.Fatalf("configuration after bootstrap: %+v, %v", conf, err)
	}
	idx := mustApply(t, leader.node, "k", "v")

	// Restart all three on their data dirs: they have state, so none
	// bootstraps again; the old cluster elects a leader and keeps the
	// write.
	for _, s := range servers {
		s.stop()
	}
	var again []*gossipServer
	for i, s := range servers {
		// Same data dir and same raft address, as a real server restarts.
		addr := s.node.Addr()
		again = append(again, startGossipServer(t, fmt.Sprintf("s%d", i+1), s.dir, 3, func(c *Config) { c.BindAddr = addr }))
		if !again[i].node.HasState() {
			t.Fatalf("%s has no state after restart", s.node.ID())
		}
	}
	for _, s := range again[1:] {
		if _, err := s.gossip.Join([]string{again[0].gossip.LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	bootstrapAll(t, again, 3) // returns at once: every server has state
	if err := again[0].node.BootstrapCluster([]Server{{ID: "s1", Address: again[0].node.Addr()}}); err != ErrHasState {
		t.Fatalf("BootstrapCluster on a server with state: %v, want ErrHasState", err)
	}
	leader = leaderOf(t, again, 10*time.Second)
	if conf, _ := leader.node.Configuration(); len(conf) != 3 {
		t.Fatalf("configuration after restart: %+v", conf)
	}
	if err := leader.node.WaitForApplied(ctxT(t, 5*time.Second), idx); err != nil {
		t.Fatal(err)
	}
	if v, _ := leader.fsm.get("k"); v != "v" {
		t.Fatalf("write lost over a whole-cluster restart: %q", v)
	}
}

func TestGossipFreshServerDoesNotBootstrapBesideACluster(t *testing.T) {
	var servers []*gossipServer
	for i := range 3 {
		servers = append(servers, startGossipServer(t, fmt.Sprintf("s%d", i+1), "", 3, nil))
	}
	for _, s := range servers[1:] {
		if _, err := s.gossip.Join([]string{servers[0].gossip.LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	bootstrapAll(t, servers, 3)
	leaderOf(t, servers, 10*time.Second)
	// A fresh server with the lowest ID arrives: by IDs alone it would be
	// one of the three to bootstrap, but its probe finds that the others
	// already have a cluster, so it does not start one of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	stray := startGossipServer(t, "s0", "", 3, nil) // lowest ID: would be chosen
	if _, err := stray.gossip.Join([]string{servers[0].gossip.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, stray.gossip, 5*time.Second, map[string]MemberStatus{"s0": MemberAlive, "s1": MemberAlive, "s2": MemberAlive, "s3": MemberAlive})
	err := stray.node.BootstrapWithGossip(ctx, stray.gossip, 3, probeNodes(append(servers, stray)...))
	if err == nil || stray.node.HasState() {
		t.Fatalf("a fresh server bootstrapped beside an existing cluster (err %v)", err)
	}
}

// configIDs returns the IDs in n's configuration, sorted.
func configIDs(t *testing.T, n *Node) string {
	t.Helper()
	servers, err := n.Configuration()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

func TestGossipReconcileAddsJoinersAndRemovesLeaversAndTheFailed(t *testing.T) {
	var servers []*gossipServer
	for i := range 3 {
		servers = append(servers, startGossipServer(t, fmt.Sprintf("s%d", i+1), "", 3, nil))
	}
	for _, s := range servers[1:] {
		if _, err := s.gossip.Join([]string{servers[0].gossip.LocalAddr()}); err != nil {
			t.Fatal(err)
		}
	}
	bootstrapAll(t, servers, 3)
	leader := leaderOf(t, servers, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		leader.node.ReconcileMembership(ctx, leader.gossip, ReconcileConfig{Region: "global", FailedGrace: 500 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done })
	idx := mustApply(t, leader.node, "before", "join")

	// A fourth server (no bootstrap_expect: it joins an existing cluster)
	// is added as a voter and receives the log.
	s4 := startGossipServer(t, "s4", "", 0, nil)
	if _, err := s4.gossip.Join([]string{leader.gossip.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "s4 in the configuration", func() bool {
		return configIDs(t, leader.node) == "s1,s2,s3,s4"
	})
	if err := s4.node.WaitForApplied(ctxT(t, 10*time.Second), idx); err != nil {
		t.Fatalf("s4 did not catch up: %v", err)
	}

	// It leaves gracefully: removed at once.
	if err := s4.gossip.Leave(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	s4.stop()
	testutil.WaitFor(t, 10*time.Second, "s4 out of the configuration", func() bool {
		return configIDs(t, leader.node) == "s1,s2,s3"
	})

	// A follower crashes: removed once its grace has passed, since the
	// two alive servers stay a majority of the two that remain.
	var victim *gossipServer
	for _, s := range servers {
		if s != leader {
			victim = s
			break
		}
	}
	victimID, victimAddr := victim.node.ID(), victim.node.Addr()
	victim.stop()
	testutil.WaitFor(t, 15*time.Second, victimID+" removed after failing", func() bool {
		return !strings.Contains(configIDs(t, leader.node), victimID)
	})

	// It comes back on the same data dir and address: added again.
	back := startGossipServer(t, victimID, victim.dir, 3, func(c *Config) { c.BindAddr = victimAddr })
	if _, err := back.gossip.Join([]string{leader.gossip.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, victimID+" re-added", func() bool {
		return configIDs(t, leader.node) == "s1,s2,s3"
	})
	last := mustApply(t, leader.node, "after", "rejoin")
	if err := back.node.WaitForApplied(ctxT(t, 10*time.Second), last); err != nil {
		t.Fatal(err)
	}
	if v, _ := back.fsm.get("after"); v != "rejoin" {
		t.Fatalf("the rejoined server misses a new write")
	}
}
