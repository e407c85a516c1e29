package client

import (
	"fmt"
	"time"

	"github.com/schedhq/sched/state"
)

// restartWindow is the durable part of a restart tracker: how many
// restarts happened in the interval that began at Start.
type restartWindow struct {
	Start time.Time
	Count int
}

// exitKind is why a task stopped running, as the restart policy sees it.
type exitKind int

const (
	// exitSuccess: the task exited 0.
	exitSuccess exitKind = iota
	// exitFailure: non-zero exit, signal, or the driver lost the task.
	exitFailure
	// exitStartError: the task never started (driver or setup error).
	exitStartError
)

// restartDecision is what the tracker says after an exit.
type restartDecision struct {
	Restart bool
	// Delay before the next start.
	Delay time.Duration
	// Reason is the event's RestartReason.
	Reason string
	// Failed marks a task that will not run again as failed.
	Failed bool
}

// Restart reasons, shown in Restarting and Not Restarting events.
const (
	reasonWithinPolicy   = "Restart within policy"
	reasonNoRestarts     = "Policy allows no restarts"
	reasonSuccessfulExit = "Task completed successfully"
)

// restartTracker applies a RestartPolicy: at most Attempts restarts
// within Interval, each Delay (plus up to 25% jitter) after the exit;
// beyond that, mode "fail" stops the task as failed and mode "delay"
// waits out the interval and starts a new one. It is pure: time and
// jitter come from the caller.
type restartTracker struct {
	policy state.RestartPolicy
	// oneShot tasks are done once they exit 0: batch jobs' tasks and
	// non-sidecar prestart, poststart and poststop tasks.
	oneShot bool
	win     restartWindow
}

func newRestartTracker(p *state.RestartPolicy, oneShot bool, win restartWindow) *restartTracker {
	rt := &restartTracker{oneShot: oneShot, win: win}
	if p != nil {
		rt.policy = *p
	}
	if rt.policy.Mode == "" {
		rt.policy.Mode = state.RestartPolicyModeFail
	}
	return rt
}

// next decides what follows an exit of kind at now; jitter is a number in
// [0, 1) that spreads restart delays.
func (rt *restartTracker) next(kind exitKind, now time.Time, jitter float64) restartDecision {
	if kind == exitSuccess && rt.oneShot {
		return restartDecision{Reason: reasonSuccessfulExit}
	}
	p := rt.policy
	if p.Attempts <= 0 && p.Mode == state.RestartPolicyModeFail {
		return restartDecision{Reason: reasonNoRestarts, Failed: true}
	}
	if rt.win.Start.IsZero() || (p.Interval > 0 && !now.Before(rt.win.Start.Add(p.Interval))) {
		rt.win = restartWindow{Start: now}
	}
	rt.win.Count++
	if rt.win.Count <= p.Attempts {
		return restartDecision{Restart: true, Delay: p.Delay + time.Duration(jitter*0.25*float64(p.Delay)), Reason: reasonWithinPolicy}
	}
	if p.Mode == state.RestartPolicyModeFail {
		return restartDecision{Failed: true,
			Reason: fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q", p.Attempts, p.Interval, p.Mode)}
	}
	// Mode delay: wait until the interval is over, then begin a new one.
	wait := rt.win.Start.Add(p.Interval).Sub(now)
	if wait < p.Delay {
		wait = p.Delay
	}
	return restartDecision{Restart: true, Delay: wait,
		Reason: fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q, delaying for %v", p.Attempts, p.Interval, p.Mode, wait)}
}

// window is the tracker's state to persist.
func (rt *restartTracker) window() restartWindow { return rt.win }
