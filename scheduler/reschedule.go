package scheduler

import (
	"slices"
	"time"

	"github.com/schedhq/sched/state"
)

// Rescheduling tunables.
const (
	// rescheduleTolerance lets an allocation due within this much of now
	// be rescheduled now rather than by a follow-up eval that would fire
	// almost at once.
	rescheduleTolerance = time.Second
	// followupBatchWindow groups failed allocations due within this
	// window of each other under one follow-up eval.
	followupBatchWindow = 5 * time.Second
	// maxTrackedEvents bounds the reschedule history an allocation chain
	// carries when its policy is unlimited.
	maxTrackedEvents = 10
)

// rescheduleVerdict is what the policy says about one failed allocation.
type rescheduleVerdict struct {
	now, later bool
	// at is when the replacement is due; delay is the delay that led
	// there, recorded in the replacement's RescheduleTracker.
	at    time.Time
	delay time.Duration
}

// judgeReschedule applies a group's ReschedulePolicy to a failed
// allocation at time now:
//
//   - forced (the eval's ForceReschedule or the allocation's
//     DesiredTransition.ForceReschedule): reschedule now, whatever the
//     attempts and delays;
//   - no policy, or a limited policy with no attempts: never;
//   - a limited policy whose Attempts reschedules already happened within
//     Interval before now: never (the group stays short until the job
//     changes or a forced reschedule);
//   - otherwise due at the failure time plus the next delay: now when
//     that is at most now (within a second), or when this eval is the
//     follow-up created for it; later otherwise.
func judgeReschedule(a *state.Allocation, p *state.ReschedulePolicy, now time.Time, evalID string, force bool) rescheduleVerdict {
	if force || boolValue(a.DesiredTransition.ForceReschedule) {
		return rescheduleVerdict{now: true, at: now, delay: nextDelay(p, a, failTime(a))}
	}
	if p == nil || (!p.Unlimited && p.Attempts <= 0) {
		return rescheduleVerdict{}
	}
	if !p.Unlimited && attemptsWithin(a.RescheduleTracker, p.Interval, now) >= p.Attempts {
		return rescheduleVerdict{}
	}
	failed := failTime(a)
	delay := nextDelay(p, a, failed)
	at := failed.Add(delay)
	if (a.FollowupEvalID != "" && a.FollowupEvalID == evalID) || !at.After(now.Add(rescheduleTolerance)) {
		return rescheduleVerdict{now: true, at: at, delay: delay}
	}
	return rescheduleVerdict{later: true, at: at, delay: delay}
}

// attemptsWithin counts the reschedules of a chain within interval
// before now; a zero interval counts them all.
func attemptsWithin(t *state.RescheduleTracker, interval time.Duration, now time.Time) int {
	if t == nil {
		return 0
	}
	n := 0
	for _, ev := range t.Events {
		if interval == 0 || now.Sub(time.Unix(0, ev.RescheduleTime)) < interval {
			n++
		}
	}
	return n
}

// nextDelay is the delay before the next replacement of a chain:
//
//   - constant: Delay every time;
//   - exponential: Delay, then twice the previous delay;
//   - fibonacci: Delay, Delay, then the sum of the previous two;
//
// capped at MaxDelay when that is set. A chain whose last allocation ran
// at least MaxDelay before failing starts over at Delay: the failures are
// not a crash loop, and should not wait as if they were.
func nextDelay(p *state.ReschedulePolicy, a *state.Allocation, failed time.Time) time.Duration {
	if p == nil {
		return 0
	}
	var events []*state.RescheduleEvent
	if a.RescheduleTracker != nil {
		events = a.RescheduleTracker.Events
	}
	if len(events) == 0 {
		return p.Delay
	}
	last := events[len(events)-1]
	if p.MaxDelay > 0 && failed.Sub(time.Unix(0, last.RescheduleTime)) >= p.MaxDelay {
		return p.Delay
	}
	d := p.Delay
	switch p.DelayFunction {
	case state.DelayFunctionExponential:
		if last.Delay > 0 {
			d = last.Delay * 2
		}
	case state.DelayFunctionFibonacci:
		if len(events) >= 2 {
			d = last.Delay + events[len(events)-2].Delay
		}
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d
}

// failTime is when an allocation failed: the latest time one of its tasks
// finished, or, when no task reported one, its last modification.
func failTime(a *state.Allocation) time.Time {
	var t time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(t) {
			t = ts.FinishedAt
		}
	}
	if t.IsZero() {
		t = time.Unix(0, a.ModifyTime)
	}
	return t
}

// nextTracker returns the RescheduleTracker of the replacement of prev:
// prev's events, plus this reschedule. A limited policy keeps the events
// within its Interval (those its Attempts count); an unlimited one keeps
// the last few, enough for the delay progression.
func nextTracker(prev *state.Allocation, p *state.ReschedulePolicy, now time.Time, delay time.Duration) *state.RescheduleTracker {
	var events []*state.RescheduleEvent
	if prev.RescheduleTracker != nil {
		for _, ev := range prev.RescheduleTracker.Events {
			events = append(events, ev.Copy())
		}
	}
	if p != nil && !p.Unlimited {
		if p.Interval > 0 {
			events = slices.DeleteFunc(events, func(ev *state.RescheduleEvent) bool {
				return now.Sub(time.Unix(0, ev.RescheduleTime)) >= p.Interval
			})
		}
	} else if len(events) > maxTrackedEvents-1 {
		events = events[len(events)-(maxTrackedEvents-1):]
	}
	events = append(events, &state.RescheduleEvent{
		RescheduleTime: now.UnixNano(),
		PrevAllocID:    prev.ID,
		PrevNodeID:     prev.NodeID,
		Delay:          delay,
	})
	return &state.RescheduleTracker{Events: events}
}

// laterReschedule is a failed allocation waiting for its delay.
type laterReschedule struct {
	alloc *state.Allocation
	at    time.Time
}

// followupEvals groups delayed reschedules into evals: allocations due
// within followupBatchWindow of the first of a batch share one eval,
// which waits until the last of them is due. It returns the evals and,
// per allocation ID, the eval that will reschedule it.
func followupEvals(later []laterReschedule, base *state.Evaluation, job *state.Job, now time.Time, newID func() string) ([]*state.Evaluation, map[string]string) {
	slices.SortStableFunc(later, func(a, b laterReschedule) int { return a.at.Compare(b.at) })
	var evals []*state.Evaluation
	byAlloc := map[string]string{}
	var cur *state.Evaluation
	var start time.Time
	for _, l := range later {
		if cur == nil || l.at.Sub(start) > followupBatchWindow {
			cur = &state.Evaluation{
				ID:                newID(),
				Namespace:         base.Namespace,
				Priority:          base.Priority,
				Type:              base.Type,
				TriggeredBy:       state.EvalTriggerRetryFailedAlloc,
				JobID:             base.JobID,
				Status:            state.EvalStatusPending,
				StatusDescription: "created for delayed rescheduling",
				PreviousEval:      base.ID,
				CreateTime:        now.UnixNano(),
				ModifyTime:        now.UnixNano(),
			}
			if job != nil {
				cur.JobModifyIndex = job.JobModifyIndex
				cur.Priority = job.Priority
			}
			start = l.at
			evals = append(evals, cur)
		}
		cur.WaitUntil = l.at
		byAlloc[l.alloc.ID] = cur.ID
	}
	return evals, byAlloc
}

// boolValue reads an optional flag.
func boolValue(b *bool) bool { return b != nil && *b }
