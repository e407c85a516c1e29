package leader

import (
	"context"
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// rtStartFeed runs the broker, blocked evals and the eval feed on r's store.
func rtStartFeed(t *testing.T, r *memRaft) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 1,
		Blocked: BlockedConfig{UnblockCoalesce: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Service{rt.Broker, rt.Blocked, rt.feed} {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
	}
	return rt
}

// rtBlockedEval returns a blocked evaluation of job that saw the state at
// snapshot, eligible for the classes in elig.
func rtBlockedEval(id, job string, snapshot uint64, elig map[string]bool) *state.Evaluation {
	e := rtEval(id, job, 50)
	e.Status = state.EvalStatusBlocked
	e.TriggeredBy = state.EvalTriggerQueuedAllocs
	e.ClassEligibility = elig
	e.SnapshotIndex = snapshot
	return e
}

// rtClassNode returns a ready node of a computed class.
func rtClassNode(name, class string) *state.Node {
	n := scheduler.MockNode(name)
	n.ComputedClass = class
	return n
}

// rtWaitTracked waits until blocked evals track (or stop tracking) an eval.
func rtWaitTracked(t *testing.T, rt *Runtime, id string, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		changed := rt.Blocked.Changed()
		if rt.Blocked.Tracked(id) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("eval %s tracked = %v, want %v", id, !want, want)
		}
		rtWaitUnblockChange(changed, deadline)
	}
}

// rtWaitUnblockSeen waits until blocked evals have seen a capacity change of
// class at index or later.
func rtWaitUnblockSeen(t *testing.T, rt *Runtime, class string, index uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		changed := rt.Blocked.Changed()
		rt.Blocked.mu.Lock()
		seen := rt.Blocked.unblocked[class]
		rt.Blocked.mu.Unlock()
		if seen >= index {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("capacity change of class %s at %d not seen (at %d)", class, index, seen)
		}
		rtWaitUnblockChange(changed, deadline)
	}
}

// rtWaitUnblockChange blocks until blocked evals change or the deadline
// passes.
func rtWaitUnblockChange(changed <-chan struct{}, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	}
}

func TestBlockedEvalsUnblockOnNodeOfEligibleClass(t *testing.T) {
	r := rtNewMemRaft(t)
	rt := rtStartFeed(t, r)
	r.putEvals(t, rtBlockedEval("b1", "web", r.index, map[string]bool{"class-a": true, "class-b": false}))
	rtWaitTracked(t, rt, "b1", true)

	idx := r.registerNode(t, rtClassNode("nb", "class-b"))
	rtWaitUnblockSeen(t, rt, "class-b", idx)
	if !rt.Blocked.Tracked("b1") {
		t.Fatal("a node of an ineligible class unblocked the evaluation")
	}
	r.registerNode(t, rtClassNode("na", "class-a"))
	rtWaitTracked(t, rt, "b1", false)
	rtWaitBroker(t, rt.Broker, "b1 re-enqueued", func(st *BrokerStats) bool { return st.TotalReady == 1 })
	if e, _ := rtDequeueNow(t, rt.Broker); e == nil || e.ID != "b1" {
		t.Fatalf("broker delivered %v, want b1", e)
	}
}

func TestBlockedEvalsUnblockOnUnseenClassAndEscaped(t *testing.T) {
	r := rtNewMemRaft(t)
	rt := rtStartFeed(t, r)
	escaped := rtBlockedEval("esc", "db", r.index, map[string]bool{"class-x": false})
	escaped.EscapedComputedClass = true
	r.putEvals(t, escaped, rtBlockedEval("unseen", "web", r.index, map[string]bool{"class-a": false}))
	rtWaitTracked(t, rt, "esc", true)
	rtWaitTracked(t, rt, "unseen", true)
	// A class the scheduler never saw may fit; an escaped evaluation
	// unblocks on any change, even of a class it found ineligible.
	r.registerNode(t, rtClassNode("nx", "class-x"))
	rtWaitTracked(t, rt, "esc", false)
	rtWaitTracked(t, rt, "unseen", false)
}

func TestBlockedEvalsUnblockWhenAllocStops(t *testing.T) {
	r := rtNewMemRaft(t)
	node := rtClassNode("full", "class-a")
	r.registerNode(t, node)
	job := scheduler.MockJob("web")
	r.registerJob(t, job)
	stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
	alloc := &state.Allocation{ID: "a1", Namespace: job.Namespace, JobID: job.ID, TaskGroup: "web", NodeID: node.ID,
		EvalID: "x", DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusRunning}
	r.must(t, store.PlanApplyRequestType, &store.PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{alloc}})

	rt := rtStartFeed(t, r)
	r.putEvals(t, rtBlockedEval("b1", "other", r.index, map[string]bool{"class-a": true, "class-probe": false}))
	rtWaitTracked(t, rt, "b1", true)
	// A running allocation changing does not unblock.
	r.must(t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: []*state.Allocation{
		{ID: "a1", ClientStatus: state.AllocClientStatusRunning, ClientDescription: "still running"}}})
	idx := r.registerNode(t, rtClassNode("probe", "class-probe"))
	rtWaitUnblockSeen(t, rt, "class-probe", idx)
	if !rt.Blocked.Tracked("b1") {
		t.Fatal("an allocation that kept running unblocked the evaluation")
	}
	r.must(t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: []*state.Allocation{
		{ID: "a1", ClientStatus: state.AllocClientStatusComplete}}})
	rtWaitTracked(t, rt, "b1", false)
}

func TestBlockedEvalsKeepOnePerJob(t *testing.T) {
	r := rtNewMemRaft(t)
	rt := rtStartFeed(t, r)
	r.putEvals(t, rtBlockedEval("old", "web", r.index, map[string]bool{"class-a": true}))
	rtWaitTracked(t, rt, "old", true)
	r.putEvals(t, rtBlockedEval("new", "web", r.index, map[string]bool{"class-a": true}))
	rtWaitTracked(t, rt, "new", true)
	if rt.Blocked.Tracked("old") {
		t.Fatal("the older blocked evaluation of the job is still tracked")
	}
	rtWaitState(t, r.store, 5*time.Second, "old cancelled", func() bool {
		e, _ := r.store.EvalByID(nil, "old")
		return e.Status == state.EvalStatusCancelled
	})
	if st := rt.Blocked.Stats(); st.TotalBlocked != 1 {
		t.Fatalf("blocked = %d, want 1", st.TotalBlocked)
	}
}

func TestBlockedEvalsUntrackedAfterSuccessfulEval(t *testing.T) {
	r := rtNewMemRaft(t)
	rt := rtStartFeed(t, r)
	r.putEvals(t, rtBlockedEval("b1", "web", r.index, map[string]bool{"class-a": true}))
	rtWaitTracked(t, rt, "b1", true)
	done := rtEval("e2", "web", 50)
	done.Status = state.EvalStatusComplete
	r.putEvals(t, done)
	rtWaitTracked(t, rt, "b1", false)
	rtWaitState(t, r.store, 5*time.Second, "b1 cancelled", func() bool {
		e, _ := r.store.EvalByID(nil, "b1")
		return e.Status == state.EvalStatusCancelled
	})
}

func TestBlockedEvalsMissedUnblockRequeuesAtOnce(t *testing.T) {
	cases := []struct {
		name     string
		snapshot uint64
		elig     map[string]bool
		tracked  bool
	}{
		{"change after snapshot", 5, map[string]bool{"a": true}, false},
		{"change before snapshot", 12, map[string]bool{"a": true}, true},
		{"ineligible class", 5, map[string]bool{"a": false}, true},
		{"unseen class", 5, map[string]bool{"b": true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rtNewMemRaft(t)
			b := rtStartBroker(t, r, BrokerConfig{})
			blocked := NewBlockedEvals(BlockedConfig{}, r.store, b, r, rtLog(), nil)
			blocked.mu.Lock()
			blocked.enabled = true
			blocked.mu.Unlock()
			blocked.Unblock("a", 10)
			blocked.Block(rtBlockedEval("e", "web", tc.snapshot, tc.elig))
			if got := blocked.Tracked("e"); got != tc.tracked {
				t.Fatalf("tracked = %v, want %v", got, tc.tracked)
			}
			st, _ := b.Stats()
			if wantReady := !tc.tracked; (st.TotalReady == 1) != wantReady {
				t.Fatalf("ready = %d, want re-enqueued = %v", st.TotalReady, wantReady)
			}
		})
	}
}
