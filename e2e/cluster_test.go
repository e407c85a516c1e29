//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// jobIndexes lists the jobs with the prefix through s (a consistent read
// unless stale) as ID → JobModifyIndex.
func jobIndexes(t *testing.T, s *server, prefix string, stale bool) (map[string]uint64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, _, err := s.client().Jobs().List(ctx, &api.QueryOptions{Prefix: prefix, AllowStale: stale})
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(list))
	for _, j := range list {
		out[j.ID] = j.JobModifyIndex
	}
	return out, nil
}

// missing returns the acknowledged jobs absent from got, or present with
// another JobModifyIndex.
func missing(acked, got map[string]uint64) []string {
	var out []string
	for id, idx := range acked {
		if got[id] != idx {
			out = append(out, fmt.Sprintf("%s@%d (found @%d)", id, idx, got[id]))
		}
	}
	sort.Strings(out)
	return out
}

// runCLI runs the sched binary with args against addr.
func runCLI(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(schedBin, args...)
	cmd.Env = append(os.Environ(), "SCHED_ADDR="+addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestClusterWritesThroughEveryServerReadConsistentlyEverywhere(t *testing.T) {
	// With gossip encryption on: the servers still find each other.
	c := newLoopCluster(t, 3, `encrypt = "c2NoZWQtZTJlLWdvc3NpcC1rZXktMzItYnl0ZXMhISE="`)
	c.startAll()
	leader := c.leader(20 * time.Second)
	ctx := context.Background()

	for i, via := range c.servers {
		job := smallJob(fmt.Sprintf("every-%d", i))
		resp, _, err := via.client().Jobs().Register(ctx, job, nil, nil)
		if err != nil {
			t.Fatalf("register through %s: %v", via.name, err)
		}
		// Read back at once from every server, consistent by default: a
		// follower that has not yet applied the write must wait for it.
		for _, from := range c.servers {
			got, qm, err := from.client().Jobs().Info(ctx, job.ID, nil)
			if err != nil {
				t.Fatalf("read %s (written through %s) from %s: %v", job.ID, via.name, from.name, err)
			}
			if got.JobModifyIndex != resp.JobModifyIndex || !qm.KnownLeader {
				t.Errorf("%s on %s: JobModifyIndex %d (want %d), KnownLeader %v", job.ID, from.name, got.JobModifyIndex, resp.JobModifyIndex, qm.KnownLeader)
			}
			if from != leader && qm.LastContact > 2*time.Second {
				t.Errorf("%s: LastContact %s", from.name, qm.LastContact)
			}
		}
	}

	self, err := c.servers[0].client().Agent().Self(ctx)
	if err != nil || self.Stats["serf"]["encrypted"] != "true" {
		t.Errorf("agent/self gossip stats %v, %v: want encrypted", self.Stats["serf"], err)
	}

	// The CLI sees the same cluster through any server.
	out, err := runCLI(t, c.servers[1].addr(), "server", "members")
	if err != nil || strings.Count(out, "alive") != 3 || strings.Count(out, "true") != 1 {
		t.Errorf("sched server members: %v\n%s", err, out)
	}
	out, err = runCLI(t, c.servers[2].addr(), "operator", "raft", "list-peers")
	if err != nil || strings.Count(out, "leader") != 1 || strings.Count(out, "follower") != 2 || !strings.Contains(out, leader.raftAddr()) {
		t.Errorf("sched operator raft list-peers: %v\n%s", err, out)
	}

	// Snapshot save through a follower (served by the leader), a write,
	// then restore through another follower: the write is undone
	// everywhere.
	snap := filepath.Join(t.TempDir(), "cluster.snap")
	followers := c.others(leader)
	if out, err := runCLI(t, followers[0].addr(), "operator", "snapshot", "save", snap); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	if _, _, err := followers[0].client().Jobs().Register(ctx, smallJob("after-save"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if out, err := runCLI(t, followers[1].addr(), "operator", "snapshot", "restore", snap); err != nil || !strings.Contains(out, "Snapshot Restored") {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	if _, _, err := leader.client().Jobs().Register(ctx, smallJob("after-restore"), nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.servers {
		got, err := jobIndexes(t, s, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got["after-save"]; ok {
			t.Errorf("%s still has a job written after the snapshot was saved", s.name)
		}
		if _, ok := got["every-2"]; !ok || got["after-restore"] == 0 {
			t.Errorf("%s after restore: %v", s.name, got)
		}
	}
}

// ack is one acknowledged register.
type ack struct {
	id     string
	index  uint64
	evalID string
	sent   time.Time
	acked  time.Time
	via    string
}

// writeLoad registers jobs from clients goroutines, each sending to the
// servers in turn (two thirds of writes go through a follower), until ctx
// ends. A failed register is not acknowledged; the client moves on.
func writeLoad(ctx context.Context, c *loopCluster, clients int, prefix string, onAck func(ack)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				s := c.servers[(w+i)%len(c.servers)]
				if !s.alive() {
					continue
				}
				id := fmt.Sprintf("%s-%02d-%05d", prefix, w, i)
				sent := time.Now()
				rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				resp, _, err := s.client().Jobs().Register(rctx, smallJob(id), nil, nil)
				cancel()
				if err != nil {
					continue
				}
				onAck(ack{id: id, index: resp.JobModifyIndex, evalID: resp.EvalID, sent: sent, acked: time.Now(), via: s.name})
			}
		}()
	}
	return &wg
}

func TestClusterLeaderKillUnderLoadLosesNothing(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	old := c.leader(20 * time.Second)

	var (
		mu       sync.Mutex
		acked    = map[string]uint64{}
		killedAt time.Time
		firstAck time.Duration // kill → first ack of a write sent after it
		after    int
	)
	enough := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	wg := writeLoad(ctx, c, 8, "kill", func(a ack) {
		mu.Lock()
		defer mu.Unlock()
		acked[a.id] = a.index
		if killedAt.IsZero() {
			if len(acked) == 300 {
				killedAt = time.Now()
				old.kill()
			}
			return
		}
		if a.sent.After(killedAt) {
			if firstAck == 0 {
				firstAck = a.acked.Sub(killedAt)
			}
			after++
			if after >= 300 {
				once.Do(func() { close(enough) })
			}
		}
	})
	select {
	case <-enough:
	case <-time.After(90 * time.Second):
		t.Error("fewer than 300 writes acknowledged within 90s of the leader kill")
	}
	cancel()
	wg.Wait()
	t.Logf("failover: leader SIGKILL → first acknowledged write sent after it: %s (%d writes acknowledged, %d after the kill)", firstAck, len(acked), after)
	if firstAck > 5*time.Second {
		t.Errorf("failover took %s", firstAck)
	}

	newLeader := c.leader(20 * time.Second)
	if newLeader == old {
		t.Fatal("the killed server still leads")
	}
	for _, s := range c.alive() {
		got, err := jobIndexes(t, s, "kill-", false)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if m := missing(acked, got); len(m) > 0 {
			t.Fatalf("%s lost %d acknowledged writes: %v", s.name, len(m), m[:min(5, len(m))])
		}
	}

	// The new leader runs the scheduler: the evaluation of a job
	// registered now is picked up and finished (with no client agents it
	// cannot place anything, but it must not stay pending).
	resp, _, err := newLeader.client().Jobs().Register(context.Background(), smallJob("after-failover"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var evalStatus string
	testutil.WaitForErr(t, 30*time.Second, "the new leader to process an evaluation", func() error {
		e, _, err := newLeader.client().Evaluations().Info(context.Background(), resp.EvalID, nil)
		if err != nil {
			return err
		}
		if evalStatus = e.Status; e.Status == "pending" {
			return fmt.Errorf("evaluation %s is %s", e.ID, e.Status)
		}
		return nil
	})
	t.Logf("evaluation of a job registered after the failover: %s", evalStatus)

	// The killed server restarts on its data dir and catches up.
	old.launch()
	old.waitReady(60 * time.Second)
	got, err := jobIndexes(t, old, "kill-", false)
	if err != nil {
		t.Fatal(err)
	}
	if m := missing(acked, got); len(m) > 0 {
		t.Fatalf("restarted server misses %d acknowledged writes: %v", len(m), m[:min(5, len(m))])
	}
}

func TestClusterWholeRestartKeepsWritesAndEvaluations(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	c.leader(20 * time.Second)

	var mu sync.Mutex
	acks := map[string]ack{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var once sync.Once
	wg := writeLoad(ctx, c, 6, "whole", func(a ack) {
		mu.Lock()
		defer mu.Unlock()
		acks[a.id] = a
		if len(acks) >= 200 {
			once.Do(func() { close(done) })
		}
	})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("200 writes not acknowledged within 60s")
	}
	// Allocations the scheduler made so far (none without client agents
	// to place them on: the client agent is a later issue), to check that
	// they survive too.
	allocs, _, err := c.servers[0].client().Allocations().List(context.Background(), &api.QueryOptions{AllowStale: true})
	if err != nil {
		t.Fatal(err)
	}
	// Kill everything while writes are still in flight.
	for _, s := range c.servers {
		s.kill()
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()

	c.startAll()
	leader := c.leader(30 * time.Second)
	acked := map[string]uint64{}
	for id, a := range acks {
		acked[id] = a.index
	}
	for _, s := range c.servers {
		got, err := jobIndexes(t, s, "whole-", false)
		if err != nil {
			t.Fatal(err)
		}
		if m := missing(acked, got); len(m) > 0 {
			t.Fatalf("%s lost %d acknowledged writes over a whole-cluster restart: %v", s.name, len(m), m[:min(5, len(m))])
		}
	}
	cl := leader.client()
	evals, _, err := cl.Evaluations().List(context.Background(), &api.QueryOptions{PerPage: 0})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]*state.Evaluation{}
	for _, e := range evals {
		have[e.ID] = e
	}
	for id, a := range acks {
		if a.evalID == "" {
			continue
		}
		e, ok := have[a.evalID]
		if !ok {
			t.Fatalf("evaluation %s of acknowledged job %s lost over the restart", a.evalID, id)
		}
		if e.JobID != id {
			t.Fatalf("evaluation %s belongs to %s, want %s", e.ID, e.JobID, id)
		}
	}
	for _, a := range allocs {
		if _, _, err := cl.Allocations().Info(context.Background(), a.ID, nil); err != nil {
			t.Fatalf("allocation %s lost over the restart: %v", a.ID, err)
		}
	}
	t.Logf("%d acknowledged jobs, their evaluations and %d allocations survived a SIGKILL of all three servers", len(acks), len(allocs))
}
