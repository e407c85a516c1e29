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
	now := testEpoch
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
	now := testEpoch
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
	now := testEpoch
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
