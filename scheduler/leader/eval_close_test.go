package leader

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// entryLog counts the commands a memRaft applied, by type.
type entryLog struct {
	mu     sync.Mutex
	r      *memRaft
	counts map[store.MessageType]int
}

func (l *entryLog) record(r *memRaft) {
	l.r = r
	l.counts = map[store.MessageType]int{}
	r.after = func(typ store.MessageType, _ uint64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.counts[typ]++
	}
}

// count says how many entries of typ were applied. It takes the Raft
// double's lock first: the store wakes its watchers inside Apply, before
// the double records the entry, so a test that saw an entry's effect in
// the store waits here until that entry is counted too.
func (l *entryLog) count(typ store.MessageType) int {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[typ]
}

// TestRuntimeClosesEvalWithPlan: an evaluation whose plan commits whole
// costs one Raft entry, its plan's, which also closes it: complete, with
// its queued counts, its blocked eval when placements failed.
func TestRuntimeClosesEvalWithPlan(t *testing.T) {
	r := rtNewMemRaft(t)
	for _, name := range []string{"n1", "n2", "n3"} {
		r.registerNode(t, scheduler.MockNode(name))
	}
	var log entryLog
	log.record(r)
	rt := startRuntime(t, r)

	evalID := r.registerJob(t, scheduler.MockJob("web"))
	rtWaitState(t, r.store, 10*time.Second, "web placed", func() bool {
		e, _ := r.store.EvalByID(nil, evalID)
		return e.Status == state.EvalStatusComplete
	})
	e, _ := r.store.EvalByID(nil, evalID)
	allocs := liveAllocs(r.store, "web")
	if len(allocs) != 10 || allocs[0].CreateIndex != e.ModifyIndex {
		t.Fatalf("%d allocations created at %d, eval closed at %d: want 10 written with the eval", len(allocs), allocs[0].CreateIndex, e.ModifyIndex)
	}
	if p, s := (log.count(store.PlanApplyRequestType) + log.count(store.PlanApplyPackedRequestType) + log.count(store.PlanApplyRefRequestType)), log.count(store.EvalStatusUpdateRequestType); p != 1 || s != 0 {
		t.Fatalf("%d plan entries and %d eval status entries, want 1 and 0", p, s)
	}
	// The scheduler planned with the job as stored: the entry names it
	// (PlanApplyRequest.JobRef) rather than carrying it.
	if n := log.count(store.PlanApplyRefRequestType); n != 1 {
		t.Errorf("%d plan entries naming the job by reference, want 1", n)
	}

	// 21 slots, 10 taken: 11 of big's 20 fit; the blocked eval for the
	// other 9 rides with the plan too.
	big := scheduler.MockJob("big")
	big.TaskGroups[0].Count = 20
	bigEval := r.registerJob(t, big)
	rtWaitState(t, r.store, 10*time.Second, "big partly placed and blocked", func() bool {
		e, _ := r.store.EvalByID(nil, bigEval)
		return e.Status == state.EvalStatusComplete
	})
	e, _ = r.store.EvalByID(nil, bigEval)
	blocked, _ := r.store.EvalByID(nil, e.BlockedEval)
	if blocked == nil || blocked.Status != state.EvalStatusBlocked || blocked.CreateIndex != e.ModifyIndex || e.QueuedAllocations["web"] != 9 {
		t.Fatalf("big's eval %+v, its blocked eval %+v: want 9 queued and the blocked eval written with it", e, blocked)
	}
	rtWaitTracked(t, rt, blocked.ID, true)
	if p, s := (log.count(store.PlanApplyRequestType) + log.count(store.PlanApplyPackedRequestType) + log.count(store.PlanApplyRefRequestType)), log.count(store.EvalStatusUpdateRequestType); p != 2 || s != 0 {
		t.Fatalf("%d plan entries and %d eval status entries, want 2 and 0", p, s)
	}
	if st := rt.Applier.Stats(); st.EvalsClosed != 2 {
		t.Fatalf("applier stats %+v, want 2 evals closed", st)
	}
}

// TestPlanApplierClosesEvalOnlyWhenWhole: a plan with a node left out is
// committed without its evaluation's closing; the same plan committed
// whole closes the evaluation in its entry.
func TestPlanApplierClosesEvalOnlyWhenWhole(t *testing.T) {
	r := rtNewMemRaft(t)
	job := scheduler.MockJob("web")
	r.registerJob(t, job)
	stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
	for _, n := range []*state.Node{rtSmallNode("n1"), rtSmallNode("n2")} {
		r.registerNode(t, n)
	}
	r.putEvals(t, rtEval("e1", "web", 50))
	rt := rtStartApplier(t, r)
	e := rtMustEval(t, r, "e1")
	rt.Broker.Enqueue(e)
	e, tok := rtDequeueNow(t, rt.Broker)

	ids := &schedtest.IDs{}
	submit := func(cpu int) *scheduler.PlanResult {
		t.Helper()
		done := e.Copy()
		done.Status = state.EvalStatusComplete
		done.QueuedAllocations = map[string]int{"web": 0}
		fits, other := rtAlloc(ids.Next(), scheduler.MockNode("n1").ID, 100, 100, 100), rtAlloc(ids.Next(), scheduler.MockNode("n2").ID, cpu, 100, 100)
		fits.Job, other.Job = stored, stored
		plan := &scheduler.Plan{EvalID: e.ID, EvalToken: tok, Priority: 50, Job: stored, EvalUpdate: done,
			NodeAllocation: map[string][]*state.Allocation{fits.NodeID: {fits}, other.NodeID: {other}}}
		pending, err := rt.Plans.Enqueue(plan)
		if err != nil {
			t.Fatal(err)
		}
		res, err := pending.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := submit(5000) // n2 has 1000 MHz
	if res.EvalUpdated || res.RefreshIndex == 0 || len(res.NodeAllocation) != 1 {
		t.Fatalf("partial plan: %+v, want one node committed and the eval not closed", res)
	}
	if got := rtMustEval(t, r, "e1"); got.Status != state.EvalStatusPending {
		t.Fatalf("eval after a partial commit is %s, want pending", got.Status)
	}
	res = submit(100)
	if !res.EvalUpdated || res.RefreshIndex != 0 {
		t.Fatalf("whole plan: %+v, want the eval closed", res)
	}
	got := rtMustEval(t, r, "e1")
	if got.Status != state.EvalStatusComplete || got.ModifyIndex != res.AllocIndex {
		t.Fatalf("eval after a whole commit is %s at %d, want complete at %d", got.Status, got.ModifyIndex, res.AllocIndex)
	}
}

// TestLeaderChangeAfterPlanLosesNothing stops the leader's services
// between an evaluation's plan and its ack, then starts a new leader on
// the same state. An evaluation whose plan closed it is not run again; one
// whose plan committed without its status (an older leader, or a partial
// commit) is run again and finds nothing more to place.
func TestLeaderChangeAfterPlanLosesNothing(t *testing.T) {
	for _, closed := range []bool{true, false} {
		name := map[bool]string{true: "closed with the plan", false: "plan without status"}[closed]
		t.Run(name, func(t *testing.T) {
			r := rtNewMemRaft(t)
			for _, n := range []string{"n1", "n2"} {
				r.registerNode(t, scheduler.MockNode(n))
			}
			evalID := r.registerJob(t, scheduler.MockJob("web"))

			// The first leader: the plan commits, the worker never acks.
			first, err := NewRuntime(RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []Service{first.Broker, first.Applier} {
				if err := s.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			eval := rtMustEval(t, r, evalID)
			first.Broker.Enqueue(eval)
			eval, tok := rtDequeueNow(t, first.Broker)
			snap, _ := r.store.Snapshot()
			planner := &workerPlanner{pool: first.Workers, ctx: context.Background(), eval: eval, token: tok, snapIndex: snap.LatestIndex()}
			var p scheduler.Planner = planner
			if !closed {
				p = &lostLeaderPlanner{workerPlanner: planner}
			}
			err = scheduler.NewServiceScheduler(scheduler.Config{Logger: rtLog()}, snap, p).Process(eval.Copy())
			if closed != (err == nil) {
				t.Fatalf("process: %v", err)
			}
			first.Applier.Stop()
			first.Broker.Stop()
			placed := liveAllocs(r.store, "web")
			if len(placed) != 10 {
				t.Fatalf("first leader placed %d, want 10", len(placed))
			}

			var log entryLog
			log.record(r)
			second := startRuntime(t, r)
			if closed {
				// The feed restored the broker synchronously: nothing to run.
				if st, _ := second.Broker.Stats(); st.TotalReady+st.TotalUnacked+st.TotalPending != 0 {
					t.Fatalf("the new leader has evaluations to run: %+v", st)
				}
			} else {
				rtWaitState(t, r.store, 10*time.Second, "eval re-run", func() bool {
					return rtMustEval(t, r, evalID).Status == state.EvalStatusComplete
				})
				if st := second.Applier.Stats(); st.Placements != 0 {
					t.Fatalf("the re-run placed %d more", st.Placements)
				}
			}
			now := liveAllocs(r.store, "web")
			if len(now) != len(placed) || now[0].ID != placed[0].ID {
				t.Fatalf("allocations changed across the leader change: %d, want the same %d", len(now), len(placed))
			}
			if e := rtMustEval(t, r, evalID); e.Status != state.EvalStatusComplete || e.QueuedAllocations["web"] != 0 {
				t.Fatalf("eval = %+v", e)
			}
			if (log.count(store.PlanApplyRequestType) + log.count(store.PlanApplyPackedRequestType) + log.count(store.PlanApplyRefRequestType)) != 0 {
				t.Fatal("the new leader committed a plan")
			}
		})
	}
}

// lostLeaderPlanner commits a plan without its evaluation's status (as an
// older leader did) and then loses leadership: every eval write fails.
type lostLeaderPlanner struct {
	*workerPlanner
}

func (l *lostLeaderPlanner) SubmitPlan(plan *scheduler.Plan) (*scheduler.PlanResult, scheduler.State, error) {
	plan.EvalUpdate, plan.CreatedEvals = nil, nil
	return l.workerPlanner.SubmitPlan(plan)
}

func (l *lostLeaderPlanner) UpdateEval(*state.Evaluation) error  { return ErrNotLeader }
func (l *lostLeaderPlanner) CreateEval(*state.Evaluation) error  { return ErrNotLeader }
func (l *lostLeaderPlanner) ReblockEval(*state.Evaluation) error { return ErrNotLeader }
