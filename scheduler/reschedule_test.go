package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// TestRescheduleFlow fails an allocation and follows it through the
// delayed follow-up eval to its replacement.
func TestRescheduleFlow(t *testing.T) {
	h := schedtest.NewHarness(t)
	for i := range 3 {
		h.UpsertNodes(MockNode(fmt.Sprintf("n%d", i)))
	}
	job := MockJob("web")
	job.TaskGroups[0].Count = 2
	job.TaskGroups[0].ReschedulePolicy = &state.ReschedulePolicy{
		Attempts: 3, Interval: time.Hour, Delay: 30 * time.Second, DelayFunction: state.DelayFunctionExponential, MaxDelay: time.Hour,
	}
	runEval(t, h, job)
	live := h.LiveAllocs("default", "web")
	victim := live[0].CopySkipJob()
	victim.ClientStatus = state.AllocClientStatusFailed
	victim.TaskStates = map[string]*state.TaskState{"web": {State: state.TaskStateDead, Failed: true, FinishedAt: h.Now}}
	h.ClientUpdate(victim)

	// The failure is not due yet: a follow-up eval is scheduled.
	stored, _ := h.Store.JobByID(nil, "default", "web")
	if err := h.Process(NewServiceScheduler, h.NewEval(stored, state.EvalTriggerRetryFailedAlloc)); err != nil {
		t.Fatal(err)
	}
	if len(h.CreatedEvals) != 1 {
		t.Fatalf("created %d evals, want one follow-up", len(h.CreatedEvals))
	}
	follow := h.CreatedEvals[0]
	if follow.TriggeredBy != state.EvalTriggerRetryFailedAlloc || !follow.WaitUntil.Equal(h.Now.Add(30*time.Second)) || follow.Status != state.EvalStatusPending {
		t.Fatalf("follow-up %+v: want alloc-failure, pending, due in 30s", follow)
	}
	got, _ := h.Store.AllocByID(nil, victim.ID)
	if got.FollowupEvalID != follow.ID || got.ClientStatus != state.AllocClientStatusFailed || got.TaskStates["web"] == nil {
		t.Fatalf("failed alloc %+v: want FollowupEvalID set and the client's status kept", got)
	}
	// The follow-up is written in the entry of the plan that names it.
	if fe, _ := h.Store.EvalByID(nil, follow.ID); fe == nil || fe.CreateIndex != got.ModifyIndex {
		t.Fatalf("follow-up eval %+v: want it written with the plan, at %d", fe, got.ModifyIndex)
	}
	if n := len(h.LiveAllocs("default", "web")); n != 1 {
		t.Fatalf("%d live allocations, want 1 until the delay passes", n)
	}

	// Processing the follow-up again before its time creates no second one.
	h.Advance(30 * time.Second)
	stored, _ = h.Store.JobByID(nil, "default", "web")
	if err := h.Process(NewServiceScheduler, follow); err != nil {
		t.Fatal(err)
	}
	got, _ = h.Store.AllocByID(nil, victim.ID)
	next, _ := h.Store.AllocByID(nil, got.NextAllocation)
	if next == nil || got.DesiredStatus != "stop" || got.DesiredDescription != DescRescheduled {
		t.Fatalf("failed alloc %+v: want stopped as rescheduled, with a replacement", got)
	}
	if next.PreviousAllocation != victim.ID || next.Name != victim.Name || next.NodeID == victim.NodeID {
		t.Fatalf("replacement %+v: want linked, same name, another node", next)
	}
	evs := next.RescheduleTracker.Events
	if len(evs) != 1 || evs[0].PrevAllocID != victim.ID || evs[0].PrevNodeID != victim.NodeID || evs[0].Delay != 30*time.Second {
		t.Fatalf("tracker events %+v", evs)
	}
	if len(h.CreatedEvals) != 1 {
		t.Fatalf("created %d evals, want no more follow-ups", len(h.CreatedEvals))
	}
}

func TestRescheduleForceAndLimits(t *testing.T) {
	for _, c := range []struct {
		name    string
		batch   bool
		force   bool
		tracker int // reschedules already in the chain
		placed  bool
	}{
		{"batch attempt left", true, false, 0, true},
		{"batch attempts used", true, false, 1, false},
		{"forced", true, true, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			h.UpsertNodes(MockNode("n0"), MockNode("n1"))
			job := MockBatchJob("web")
			job.TaskGroups[0].Count = 1
			// Default batch policy: 1 attempt in 24h after 5s.
			runEval(t, h, job)
			a := h.LiveAllocs("default", "web")[0].CopySkipJob()
			a.ClientStatus = state.AllocClientStatusFailed
			a.TaskStates = map[string]*state.TaskState{"web": {FinishedAt: h.Now.Add(-time.Minute)}}
			if c.tracker > 0 {
				// Record a reschedule an hour ago, as a scheduler would have.
				r := a.CopySkipJob()
				r.ClientStatus = ""
				r.RescheduleTracker = TrackerOf(h.Now, [2]time.Duration{time.Hour, 5 * time.Second})
				h.UpsertAllocs(r)
			}
			h.ClientUpdate(a)
			stored, _ := h.Store.JobByID(nil, "default", "web")
			e := h.NewEval(stored, state.EvalTriggerJobEvaluate).Copy()
			e.ForceReschedule = c.force
			if err := h.Process(NewBatchScheduler, e); err != nil {
				t.Fatal(err)
			}
			live := h.LiveAllocs("default", "web")
			if placed := len(live) == 1; placed != c.placed {
				t.Fatalf("replacement placed = %v, want %v", placed, c.placed)
			}
			if c.placed && len(live[0].RescheduleTracker.Events) != c.tracker+1 {
				t.Fatalf("tracker %+v: want %d events", live[0].RescheduleTracker.Events, c.tracker+1)
			}
			if len(h.CreatedEvals) != 0 {
				t.Fatalf("created evals %v, want none", h.CreatedEvals)
			}
		})
	}
}
