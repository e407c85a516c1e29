package raft

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/schedhq/sched/internal/testutil"
)

// testLogger returns a logger whose output is shown only when t fails.
func testLogger(t testing.TB) hclog.Logger {
	buf := &testutil.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:\n%s", buf.String())
		}
	})
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: buf})
}

// testConfig is a config for a node on a free loopback port with timeouts
// short enough for fast failover tests yet loose enough for a busy machine.
func testConfig(t testing.TB, id, dir string, bootstrap bool) Config {
	return Config{
		ID:                 id,
		DataDir:            dir,
		BindAddr:           "127.0.0.1:0",
		Bootstrap:          bootstrap,
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
		Logger:             testLogger(t),
	}
}

// startNode starts a node and shuts it down when the test ends.
func startNode(t testing.TB, cfg Config, fsm FSM) *Node {
	t.Helper()
	n, err := New(cfg, fsm)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg.ID, err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	return n
}

// ctxT returns a context that ends after d or with the test.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitLeader blocks until n leads, via LeaderCh rather than polling.
func waitLeader(t testing.TB, n *Node, d time.Duration) {
	t.Helper()
	if n.IsLeader() {
		return
	}
	timeout := time.After(d)
	for {
		select {
		case v := <-n.LeaderCh():
			if v {
				return
			}
		case <-timeout:
			t.Fatalf("%s did not become leader within %s", n.ID(), d)
		}
	}
}

// mustApply applies a set command and returns its index.
func mustApply(t testing.TB, n *Node, k, v string) uint64 {
	t.Helper()
	idx, _, err := n.Apply(ctxT(t, 10*time.Second), setCmd(k, v))
	if err != nil {
		t.Fatalf("Apply(set %s) on %s: %v", k, n.ID(), err)
	}
	return idx
}

// restartApplied starts a node of cfg (stopped before) on a new KV, waits
// for it to lead and to have applied index last, and returns its KV.
func restartApplied(t testing.TB, cfg Config, last uint64) *kvFSM {
	t.Helper()
	kv := newKV()
	n := startNode(t, cfg, kv)
	waitLeader(t, n, 5*time.Second)
	if err := n.WaitForApplied(ctxT(t, 5*time.Second), last); err != nil {
		t.Fatal(err)
	}
	return kv
}
