package leader

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// startRuntime runs every leader service of a runtime on r's store, as the
// agent does on gaining leadership, and stops them in reverse at the end.
func startRuntime(t *testing.T, r *memRaft) *Runtime {
	t.Helper()
	return startRuntimeBroker(t, r, BrokerConfig{})
}

// startRuntimeBroker is startRuntime with the broker configured by cfg.
func startRuntimeBroker(t *testing.T, r *memRaft, cfg BrokerConfig) *Runtime {
	t.Helper()
	return startRuntimeConfig(t, RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 2,
		Blocked: BlockedConfig{UnblockCoalesce: time.Millisecond}, Broker: cfg})
}

// startRuntimeConfig builds a runtime of cfg and starts its services,
// stopping them in reverse order when the test ends.
func startRuntimeConfig(t *testing.T, cfg RuntimeConfig) *Runtime {
	t.Helper()
	rt, err := NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	services := rt.Services()
	for i, s := range services {
		if err := s.Start(context.Background()); err != nil {
			t.Fatalf("start %s: %v", s.Name(), err)
		}
		t.Cleanup(services[len(services)-1-i].Stop)
	}
	return rt
}

// liveAllocs lists a job's allocations that are not terminal.
func liveAllocs(store *store.Store, jobID string) []*state.Allocation {
	allocs, _ := store.AllocsByJob(nil, state.DefaultNamespace, jobID, false)
	var out []*state.Allocation
	for _, a := range allocs {
		if !a.Terminal() {
			out = append(out, a)
		}
	}
	return out
}

// TestRuntimePlacesJobsEndToEnd wires the store, a Raft double, the
// broker, blocked evals, workers, the plan applier and the real
// schedulers: a registered job is placed; a job too big for the cluster
// places what fits and blocks, and is placed in full once nodes join; a
// stopped job's allocations stop.
func TestRuntimePlacesJobsEndToEnd(t *testing.T) {
	r := rtNewMemRaft(t)
	for _, name := range []string{"n1", "n2", "n3"} {
		r.registerNode(t, scheduler.MockNode(name))
	}
	rt := startRuntime(t, r)

	web := scheduler.MockJob("web") // 10 × 500 MHz; a MockNode takes 7.
	evalID := r.registerJob(t, web)
	rtWaitState(t, r.store, 10*time.Second, "web placed", func() bool {
		e, _ := r.store.EvalByID(nil, evalID)
		return len(liveAllocs(r.store, "web")) == 10 && e.Status == state.EvalStatusComplete
	})
	sum, _ := r.store.JobSummaryByID(nil, state.DefaultNamespace, "web")
	if got := sum.Summary["web"]; got.Starting != 10 || got.Queued != 0 {
		t.Fatalf("web summary = %+v, want 10 starting and none queued", got)
	}

	// 21 slots, 10 taken: 11 of big's 20 fit, the rest block.
	big := scheduler.MockJob("big")
	big.TaskGroups[0].Count = 20
	bigEval := r.registerJob(t, big)
	var blockedID string
	rtWaitState(t, r.store, 10*time.Second, "big partly placed and blocked", func() bool {
		e, _ := r.store.EvalByID(nil, bigEval)
		blockedID = e.BlockedEval
		return len(liveAllocs(r.store, "big")) == 11 && e.Status == state.EvalStatusComplete && blockedID != ""
	})
	rtWaitTracked(t, rt, blockedID, true)
	sum, _ = r.store.JobSummaryByID(nil, state.DefaultNamespace, "big")
	if got := sum.Summary["web"]; got.Queued != 9 {
		t.Fatalf("big summary = %+v, want 9 queued", got)
	}
	for _, name := range []string{"n4", "n5"} {
		r.registerNode(t, scheduler.MockNode(name))
	}
	rtWaitState(t, r.store, 10*time.Second, "big placed once nodes joined", func() bool {
		e, _ := r.store.EvalByID(nil, blockedID)
		return len(liveAllocs(r.store, "big")) == 20 && e.Status == state.EvalStatusComplete
	})
	rtWaitTracked(t, rt, blockedID, false)
	sum, _ = r.store.JobSummaryByID(nil, state.DefaultNamespace, "big")
	if got := sum.Summary["web"]; got.Queued != 0 || got.Starting != 20 {
		t.Fatalf("big summary = %+v, want 20 starting and none queued", got)
	}

	r.must(t, store.JobDeregisterRequestType, &store.JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web",
		Eval: &state.Evaluation{ID: "stop-web", Priority: 50, Type: state.JobTypeService, TriggeredBy: state.EvalTriggerJobDeregister,
			Status: state.EvalStatusPending}})
	rtWaitState(t, r.store, 10*time.Second, "web stopped", func() bool { return len(liveAllocs(r.store, "web")) == 0 })

	if st := rt.Workers.Stats(); st.Acked < 3 || st.Nacked != 0 {
		t.Fatalf("worker stats = %+v, want at least 3 acked (web, big, its blocked eval) and none nacked", st)
	}
	if _, err := rt.Heartbeat(scheduler.MockNode("n1").ID); err != nil {
		t.Fatalf("heartbeat while leading: %v", err)
	}
}

// TestRuntimeStopsCleanly checks that stopping the services fails what is
// in flight with ErrNotLeader rather than hanging, and that the HTTP-facing
// methods then answer ErrNotLeader.
func TestRuntimeStopsCleanly(t *testing.T) {
	r := rtNewMemRaft(t)
	rt, err := NewRuntime(RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	services := rt.Services()
	for _, s := range services {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// A plan queued while the applier stops fails rather than hangs.
	for i := len(services) - 1; i >= 0; i-- {
		services[i].Stop()
	}
	if _, err := rt.Plans.Enqueue(&scheduler.Plan{}); err != ErrNotLeader {
		t.Fatalf("enqueue after stop = %v, want ErrNotLeader", err)
	}
	if _, err := rt.Heartbeat("any"); err != ErrNotLeader {
		t.Fatalf("heartbeat after stop = %v, want ErrNotLeader", err)
	}
	if _, err := rt.BrokerStats(); err != ErrNotLeader {
		t.Fatalf("broker stats after stop = %v, want ErrNotLeader", err)
	}
	// Leadership again: everything starts from state.
	for _, s := range services {
		if err := s.Start(context.Background()); err != nil {
			t.Fatalf("restart %s: %v", s.Name(), err)
		}
	}
	for i := len(services) - 1; i >= 0; i-- {
		services[i].Stop()
	}
}

// TestRuntimeDrainsNodeEndToEnd drains a node with the real schedulers:
// its allocations move one at a time (MaxParallel 1), each batch waiting
// for the previous replacement to run, and the drain completes once the
// node is empty.
func TestRuntimeDrainsNodeEndToEnd(t *testing.T) {
	r := rtNewMemRaft(t)
	a, b := scheduler.MockNode("a"), scheduler.MockNode("b")
	r.registerNode(t, a)
	startRuntime(t, r)
	web := scheduler.MockJob("web")
	web.TaskGroups[0].Count = 2
	r.registerJob(t, web)
	rtWaitState(t, r.store, 10*time.Second, "web placed on a", func() bool { return len(liveAllocs(r.store, "web")) == 2 })
	r.registerNode(t, b)
	r.must(t, store.NodeUpdateDrainRequestType, &store.NodeUpdateDrainRequest{NodeID: a.ID,
		DrainStrategy: &state.DrainStrategy{Deadline: int64(time.Hour), ForceDeadline: time.Now().Add(time.Hour).UnixNano()}})

	onB := func() []*state.Allocation {
		var out []*state.Allocation
		for _, al := range liveAllocs(r.store, "web") {
			if al.NodeID == b.ID {
				out = append(out, al)
			}
		}
		return out
	}
	for batch := 1; batch <= 2; batch++ {
		// Exactly batch on b: had the drainer moved both at once, the
		// count would jump from 0 to 2 and this wait would time out.
		rtWaitState(t, r.store, 10*time.Second, "a replacement on b", func() bool { return len(onB()) == batch })
		// The replacement starts running, as its client would report.
		var running []*state.Allocation
		for _, al := range onB() {
			running = append(running, &state.Allocation{ID: al.ID, ClientStatus: state.AllocClientStatusRunning})
		}
		r.must(t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: running})
	}
	rtWaitState(t, r.store, 10*time.Second, "drain complete", func() bool {
		n, _ := r.store.NodeByID(nil, a.ID)
		return n.DrainStrategy == nil
	})
	if n, _ := r.store.NodeByID(nil, a.ID); n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Fatalf("drained node is %s, want ineligible", n.SchedulingEligibility)
	}
	if got := len(liveAllocs(r.store, "web")); got != 2 {
		t.Fatalf("%d live allocations after the drain, want 2", got)
	}
}

// A stored job over the limits (count 1e9: before the limits, one such
// register ran the leader out of memory, and again after every restart)
// fails its evaluation; the leader goes on scheduling other jobs.
func TestRuntimeFailsEvalOverLimits(t *testing.T) {
	r := rtNewMemRaft(t)
	r.registerNode(t, scheduler.MockNode("n1"))
	rt := startRuntime(t, r)
	huge := scheduler.MockJob("huge")
	huge.TaskGroups[0].Count = 1_000_000_000
	hugeEval := r.registerJob(t, huge)
	rtWaitState(t, r.store, 10*time.Second, "huge's evaluation failed", func() bool {
		e, _ := r.store.EvalByID(nil, hugeEval)
		return e.Status == state.EvalStatusFailed
	})
	if e, _ := r.store.EvalByID(nil, hugeEval); !strings.Contains(e.StatusDescription, "max_group_count") {
		t.Errorf("StatusDescription %q does not name the limit", e.StatusDescription)
	}
	if n := len(liveAllocs(r.store, "huge")); n != 0 {
		t.Errorf("%d allocations placed for a job over the limits", n)
	}
	small := scheduler.MockJob("small")
	small.TaskGroups[0].Count = 1
	smallEval := r.registerJob(t, small)
	rtWaitState(t, r.store, 10*time.Second, "small placed", func() bool {
		e, _ := r.store.EvalByID(nil, smallEval)
		return e.Status == state.EvalStatusComplete && len(liveAllocs(r.store, "small")) == 1
	})
	if st := rt.Workers.Stats(); st.Nacked != 0 {
		t.Errorf("worker stats %+v: the failed evaluation was nacked, to be retried", st)
	}
}

// TestDefaultWorkers: three per core, at least 6, at most 64.
func TestDefaultWorkers(t *testing.T) {
	for cpus, want := range map[int]int{1: 6, 2: 6, 4: 12, 16: 48, 64: 64} {
		if got := defaultWorkers(cpus); got != want {
			t.Errorf("%d cores: %d workers, want %d", cpus, got, want)
		}
	}
}
