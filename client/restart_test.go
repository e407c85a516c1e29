package client

import (
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestRestartTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	policy := func(attempts int, mode string) *state.RestartPolicy {
		return &state.RestartPolicy{Attempts: attempts, Interval: time.Minute, Delay: 10 * time.Second, Mode: mode}
	}
	type step struct {
		kind    exitKind
		at      time.Duration // since t0
		restart bool
		delay   time.Duration
		failed  bool
		reason  string // substring
	}
	cases := []struct {
		name    string
		policy  *state.RestartPolicy
		oneShot bool
		steps   []step
	}{
		{"within attempts, then fail", policy(2, "fail"), false, []step{
			{exitFailure, 0, true, 10 * time.Second, false, reasonWithinPolicy},
			{exitFailure, 15 * time.Second, true, 10 * time.Second, false, reasonWithinPolicy},
			{exitFailure, 30 * time.Second, false, 0, true, `Exceeded allowed attempts 2 in interval 1m0s and mode is "fail"`},
		}},
		{"a new interval resets the count", policy(1, "fail"), false, []step{
			{exitFailure, 0, true, 10 * time.Second, false, reasonWithinPolicy},
			{exitFailure, 61 * time.Second, true, 10 * time.Second, false, reasonWithinPolicy},
			{exitFailure, 70 * time.Second, false, 0, true, "Exceeded"},
		}},
		{"mode delay waits out the interval", policy(1, "delay"), false, []step{
			{exitFailure, 0, true, 10 * time.Second, false, reasonWithinPolicy},
			{exitFailure, 20 * time.Second, true, 40 * time.Second, false, `mode is "delay", delaying for 40s`},
			{exitFailure, 70 * time.Second, true, 10 * time.Second, false, reasonWithinPolicy},
		}},
		{"attempts 0 in mode fail never restart", policy(0, "fail"), false, []step{
			{exitFailure, 0, false, 0, true, reasonNoRestarts},
		}},
		{"a one-shot task that exits 0 is done", policy(2, "fail"), true, []step{
			{exitSuccess, 0, false, 0, false, reasonSuccessfulExit},
		}},
		{"a one-shot task that fails restarts", policy(2, "fail"), true, []step{
			{exitFailure, 0, true, 10 * time.Second, false, reasonWithinPolicy},
		}},
		{"a service task exiting 0 counts as a restart", policy(1, "fail"), false, []step{
			{exitSuccess, 0, true, 10 * time.Second, false, reasonWithinPolicy},
			{exitSuccess, time.Second, false, 0, true, "Exceeded"},
		}},
		{"start errors count too", policy(1, "fail"), false, []step{
			{exitStartError, 0, true, 10 * time.Second, false, reasonWithinPolicy},
			{exitStartError, time.Second, false, 0, true, "Exceeded"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRestartTracker(tc.policy, tc.oneShot, restartWindow{})
			for i, s := range tc.steps {
				d := rt.next(s.kind, t0.Add(s.at), 0)
				if d.Restart != s.restart || d.Delay != s.delay || d.Failed != s.failed || !strings.Contains(d.Reason, s.reason) {
					t.Fatalf("step %d: got %+v, want restart=%v delay=%v failed=%v reason~%q", i, d, s.restart, s.delay, s.failed, s.reason)
				}
			}
		})
	}
}

func TestRestartTrackerJitterAndPersistedWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &state.RestartPolicy{Attempts: 3, Interval: time.Minute, Delay: 8 * time.Second, Mode: "fail"}
	rt := newRestartTracker(p, false, restartWindow{})
	if d := rt.next(exitFailure, t0, 0.5); d.Delay != 9*time.Second {
		t.Fatalf("jitter 0.5 of 25%% of 8s: got delay %v, want 9s", d.Delay)
	}
	// A restarted client picks the window up where it was.
	again := newRestartTracker(p, false, rt.window())
	again.next(exitFailure, t0.Add(time.Second), 0)
	again.next(exitFailure, t0.Add(2*time.Second), 0)
	if d := again.next(exitFailure, t0.Add(3*time.Second), 0); d.Restart {
		t.Fatalf("the fourth failure in the interval restarted: %+v", d)
	}
}
