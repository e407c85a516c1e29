package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// trackerOf builds a RescheduleTracker whose events happened at the given
// offsets before now with the given delays.
func trackerOf(now time.Time, events ...[2]time.Duration) *state.RescheduleTracker {
	t := &state.RescheduleTracker{}
	for i, ev := range events {
		t.Events = append(t.Events, &state.RescheduleEvent{
			RescheduleTime: now.Add(-ev[0]).UnixNano(),
			PrevAllocID:    fmt.Sprint("prev-", i),
			Delay:          ev[1],
		})
	}
	return t
}

func TestRescheduleDelays(t *testing.T) {
	now := harnessEpoch
	constant := &state.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: state.DelayFunctionConstant, Unlimited: true}
	exp := &state.ReschedulePolicy{Delay: 10 * time.Second, DelayFunction: state.DelayFunctionExponential, MaxDelay: time.Minute, Unlimited: true}
	fib := &state.ReschedulePolicy{Delay: 10 * time.Second, DelayFunction: state.DelayFunctionFibonacci, MaxDelay: time.Minute, Unlimited: true}
	s := time.Second
	// recent is a reschedule 1s ago, so the chain is not reset.
	recent := func(delays ...time.Duration) [][2]time.Duration {
		var out [][2]time.Duration
		for _, d := range delays {
			out = append(out, [2]time.Duration{s, d})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		policy *state.ReschedulePolicy
		events [][2]time.Duration
		want   time.Duration
	}{
		{"constant first", constant, nil, 5 * s},
		{"constant later", constant, recent(5*s, 5*s), 5 * s},
		{"exponential first", exp, nil, 10 * s},
		{"exponential second", exp, recent(10 * s), 20 * s},
		{"exponential third", exp, recent(10*s, 20*s), 40 * s},
		{"exponential capped", exp, recent(10*s, 20*s, 40*s), time.Minute},
		{"fibonacci first", fib, nil, 10 * s},
		{"fibonacci second", fib, recent(10 * s), 10 * s},
		{"fibonacci third", fib, recent(10*s, 10*s), 20 * s},
		{"fibonacci fourth", fib, recent(10*s, 10*s, 20*s), 30 * s},
		{"fibonacci fifth", fib, recent(10*s, 20*s, 30*s), 50 * s},
		{"fibonacci capped", fib, recent(20*s, 30*s, 50*s), time.Minute},
		// The last replacement ran for an hour: not a crash loop.
		{"chain resets after a long run", exp, [][2]time.Duration{{time.Hour, 40 * s}}, 10 * s},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &state.Allocation{RescheduleTracker: trackerOf(now, c.events...)}
			if got := nextDelay(c.policy, a, now); got != c.want {
				t.Fatalf("nextDelay = %v, want %v", got, c.want)
			}
		})
	}
}

func TestRescheduleAttempts(t *testing.T) {
	now := harnessEpoch
	limited := &state.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: state.DelayFunctionConstant}
	failedAt := func(ago time.Duration, events ...[2]time.Duration) *state.Allocation {
		return &state.Allocation{
			ID:                "a",
			ClientStatus:      state.AllocClientStatusFailed,
			ModifyTime:        now.Add(-ago).UnixNano(),
			RescheduleTracker: trackerOf(now, events...),
		}
	}
	for _, c := range []struct {
		name   string
		policy *state.ReschedulePolicy
		alloc  *state.Allocation
		force  bool
		now    bool
		later  bool
	}{
		{"due now", limited, failedAt(10 * time.Second), false, true, false},
		{"due later", limited, failedAt(time.Second), false, false, true},
		{"one attempt left", limited, failedAt(time.Minute, [2]time.Duration{2 * time.Hour, 0}, [2]time.Duration{10 * time.Minute, 0}), false, true, false},
		{"attempts used within interval", limited, failedAt(time.Minute, [2]time.Duration{20 * time.Minute, 0}, [2]time.Duration{10 * time.Minute, 0}), false, false, false},
		{"no attempts", &state.ReschedulePolicy{Interval: time.Hour}, failedAt(time.Minute), false, false, false},
		{"no policy", nil, failedAt(time.Minute), false, false, false},
		{"unlimited", &state.ReschedulePolicy{Unlimited: true, Delay: time.Second, DelayFunction: state.DelayFunctionConstant},
			failedAt(time.Minute, [2]time.Duration{time.Minute, 0}, [2]time.Duration{time.Minute, 0}, [2]time.Duration{time.Minute, 0}), false, true, false},
		{"forced despite attempts", limited, failedAt(time.Second, [2]time.Duration{20 * time.Minute, 0}, [2]time.Duration{10 * time.Minute, 0}), true, true, false},
		{"forced despite no policy", nil, failedAt(time.Second), true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := judgeReschedule(c.alloc, c.policy, now, "eval", c.force)
			if v.now != c.now || v.later != c.later {
				t.Fatalf("verdict %+v, want now=%v later=%v", v, c.now, c.later)
			}
		})
	}
}

func TestRescheduleTracker(t *testing.T) {
	now := harnessEpoch
	prev := &state.Allocation{ID: "p", NodeID: "n", RescheduleTracker: trackerOf(now,
		[2]time.Duration{3 * time.Hour, time.Second}, [2]time.Duration{time.Minute, 2 * time.Second})}
	limited := &state.ReschedulePolicy{Attempts: 1, Interval: time.Hour}
	tr := nextTracker(prev, limited, now, 7*time.Second)
	// The event 3h ago is outside the interval and dropped.
	if len(tr.Events) != 2 {
		t.Fatalf("%d events, want 2", len(tr.Events))
	}
	last := tr.Events[1]
	if last.PrevAllocID != "p" || last.PrevNodeID != "n" || last.Delay != 7*time.Second || last.RescheduleTime != now.UnixNano() {
		t.Fatalf("last event %+v", last)
	}
	if prev.RescheduleTracker.Events[0].Delay != time.Second || len(prev.RescheduleTracker.Events) != 2 {
		t.Fatal("nextTracker changed the previous allocation's tracker")
	}
}

// TestRescheduleFlow fails an allocation and follows it through the
// delayed follow-up eval to its replacement.
func TestRescheduleFlow(t *testing.T) {
	h := NewHarness(t)
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
	if next == nil || got.DesiredStatus != "stop" || got.DesiredDescription != descRescheduled {
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
			h := NewHarness(t)
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
				r.RescheduleTracker = trackerOf(h.Now, [2]time.Duration{time.Hour, 5 * time.Second})
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
