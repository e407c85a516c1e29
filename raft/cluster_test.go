package raft

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// testCluster is three in-process servers on loopback: s1 bootstraps, the
// others join through AddVoter, as the first servers of a real cluster do.
type testCluster struct {
	nodes []*Node
	fsms  []*kvFSM
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	c := &testCluster{}
	for i := range 3 {
		id := fmt.Sprintf("s%d", i+1)
		kv := newKV()
		c.nodes = append(c.nodes, startNode(t, testConfig(t, id, t.TempDir(), i == 0), kv))
		c.fsms = append(c.fsms, kv)
	}
	leader := c.nodes[0]
	waitLeader(t, leader, 5*time.Second)
	for _, n := range c.nodes[1:] {
		if err := leader.AddVoter(n.ID(), n.Addr()); err != nil {
			t.Fatalf("AddVoter(%s): %v", n.ID(), err)
		}
	}
	return c
}

func TestClusterReplicatesAndServesConsistentReadsOnFollowers(t *testing.T) {
	c := newTestCluster(t)
	leader, followers := c.nodes[0], c.nodes[1:]

	servers, err := leader.Configuration()
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 3 {
		t.Fatalf("configuration %+v, want 3 servers", servers)
	}
	for _, s := range servers {
		if !s.Voter || s.Leader != (s.ID == leader.ID()) {
			t.Errorf("server %+v: want a voter, leader only for %s", s, leader.ID())
		}
	}

	for i := range 10 {
		mustApply(t, leader, fmt.Sprintf("k%d", i), fmt.Sprint(i))
	}

	for i, f := range followers {
		kv := c.fsms[i+1]
		t.Run(f.ID(), func(t *testing.T) {
			ctx := ctxT(t, 5*time.Second)
			if err := f.WaitForLeader(ctx); err != nil {
				t.Fatalf("WaitForLeader: %v", err)
			}
			if addr, id := f.Leader(); id != leader.ID() || addr != leader.Addr() {
				t.Errorf("Leader() = %q, %q; want %q, %q", addr, id, leader.Addr(), leader.ID())
			}
			if _, _, err := f.Apply(ctx, setCmd("x", "y")); !errors.Is(err, ErrNotLeader) {
				t.Errorf("Apply on a follower: err = %v, want ErrNotLeader", err)
			}
			if _, err := f.VerifyLeader(ctx); !errors.Is(err, ErrNotLeader) {
				t.Errorf("VerifyLeader on a follower: err = %v, want ErrNotLeader", err)
			}

			// The consistent read of the architecture: write on the
			// leader, get the read index from it, wait for it here, read.
			mustApply(t, leader, "fresh-"+f.ID(), "1")
			ri, err := leader.VerifyLeader(ctx)
			if err != nil {
				t.Fatalf("VerifyLeader: %v", err)
			}
			if err := f.WaitForApplied(ctx, ri); err != nil {
				t.Fatalf("WaitForApplied(%d): %v", ri, err)
			}
			if v, ok := kv.get("fresh-" + f.ID()); !ok || v != "1" {
				t.Errorf("after the read barrier the follower misses the write (got %q, %v)", v, ok)
			}
			if kv.len() < 10 {
				t.Errorf("follower holds %d keys, want at least 10", kv.len())
			}
			if lc := f.LastContact(); time.Since(lc) > 5*time.Second {
				t.Errorf("follower's last contact with the leader is %v ago", time.Since(lc))
			}
		})
	}
}

func TestClusterFailoverKeepsAcknowledgedWrites(t *testing.T) {
	c := newTestCluster(t)
	old := c.nodes[0]

	var last uint64
	for i := range 20 {
		last = mustApply(t, old, fmt.Sprintf("k%d", i), fmt.Sprint(i))
	}
	// Both followers have the writes before the leader dies, so either may
	// win; the election restriction guarantees the winner has them anyway.
	for _, f := range c.nodes[1:] {
		if err := f.WaitForApplied(ctxT(t, 5*time.Second), last); err != nil {
			t.Fatalf("%s: %v", f.ID(), err)
		}
	}
	if err := old.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// Whichever survivor wins announces it on its LeaderCh.
	var leader *Node
	deadline := time.After(10 * time.Second)
	for leader == nil {
		select {
		case v := <-c.nodes[1].LeaderCh():
			if v {
				leader = c.nodes[1]
			}
		case v := <-c.nodes[2].LeaderCh():
			if v {
				leader = c.nodes[2]
			}
		case <-deadline:
			t.Fatal("no new leader within 10s of the old one stopping")
		}
	}
	other := c.nodes[3-indexOf(c.nodes, leader)]
	t.Logf("new leader %s", leader.ID())

	ctx := ctxT(t, 10*time.Second)
	ri, err := leader.VerifyLeader(ctx)
	if err != nil {
		t.Fatalf("VerifyLeader on the new leader: %v", err)
	}
	if ri < last {
		t.Errorf("new leader's read index %d is below the last acknowledged write %d", ri, last)
	}
	kv := c.fsms[indexOf(c.nodes, leader)]
	for i := range 20 {
		if v, ok := kv.get(fmt.Sprintf("k%d", i)); !ok || v != fmt.Sprint(i) {
			t.Errorf("k%d lost after failover (got %q, %v)", i, v, ok)
		}
	}

	idx := mustApply(t, leader, "after", "failover")
	if idx <= last {
		t.Errorf("new write index %d not after %d", idx, last)
	}
	if err := other.WaitForApplied(ctx, idx); err != nil {
		t.Fatalf("surviving follower: %v", err)
	}
	if v, _ := c.fsms[indexOf(c.nodes, other)].get("after"); v != "failover" {
		t.Errorf("surviving follower misses the post-failover write")
	}

	if err := leader.RemoveServer(old.ID()); err != nil {
		t.Fatalf("RemoveServer(%s): %v", old.ID(), err)
	}
	servers, err := leader.Configuration()
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 {
		t.Errorf("configuration after removal %+v, want 2 servers", servers)
	}
}

func indexOf(nodes []*Node, n *Node) int {
	for i, m := range nodes {
		if m == n {
			return i
		}
	}
	return -1
}

// A committed entry can reach a follower's FSM before the leader's own FSM
// goroutine applies it. The read index must cover it all the same: were it
// the leader's applied index, the leader would serve a state older than one
// a follower has already served, and reads would go back in time.
func TestReadIndexCoversEntriesAppliedOnFollowersFirst(t *testing.T) {
	c := newTestCluster(t)
	leader, follower := c.nodes[0], c.nodes[1]
	gate := make(chan struct{})
	c.fsms[0].gate = gate // set before any "slow" command exists
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release)

	before := mustApply(t, leader, "k", "old")
	// The term's first VerifyLeader runs a barrier, which a held FSM would
	// block; get it done first.
	if _, err := leader.VerifyLeader(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("VerifyLeader: %v", err)
	}
	type result struct {
		index uint64
		err   error
	}
	applied := make(chan result, 1)
	go func() {
		idx, _, err := leader.Apply(ctxT(t, 10*time.Second), []byte("slow k new"))
		applied <- result{idx, err}
	}()
	// The follower applies the entry while the leader's FSM is held.
	testutil.WaitFor(t, 10*time.Second, "the follower to apply the held entry", func() bool {
		v, _ := c.fsms[1].get("k")
		return v == "new"
	})
	seen := follower.AppliedIndex()
	if got := leader.AppliedIndex(); got >= seen {
		t.Fatalf("leader applied %d, follower %d: the leader was not held back", got, seen)
	}

	ri, err := leader.VerifyLeader(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("VerifyLeader: %v", err)
	}
	if ri < seen {
		t.Fatalf("read index %d is below %d, which a follower has applied (leader applied %d, first write %d)", ri, seen, leader.AppliedIndex(), before)
	}
	// The leader itself must wait for its FSM before it may read.
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := leader.WaitForApplied(short, ri); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForApplied(%d) on the held leader: %v, want a deadline error", ri, err)
	}
	if v, _ := c.fsms[0].get("k"); v != "old" {
		t.Fatalf("held leader already shows %q", v)
	}
	release()
	if err := leader.WaitForApplied(ctxT(t, 10*time.Second), ri); err != nil {
		t.Fatalf("WaitForApplied(%d) after release: %v", ri, err)
	}
	if v, _ := c.fsms[0].get("k"); v != "new" {
		t.Errorf("after the read barrier the leader shows %q, want new", v)
	}
	if r := <-applied; r.err != nil || r.index != ri {
		t.Errorf("held write: index %d, err %v; want index %d", r.index, r.err, ri)
	}
}
