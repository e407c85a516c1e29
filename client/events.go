package client

import (
	"fmt"
	"strconv"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// newEvent returns an event of type typ at now with its display message.
// Its Details are nil until setDetail sets one: most events have none,
// and an empty map, which JSON leaves out as it does nil, was one of a
// task start's allocations per event.
func newEvent(typ string, now time.Time, msg string) *state.TaskEvent {
	return &state.TaskEvent{Type: typ, Time: now.UnixNano(), Message: msg, DisplayMessage: msg}
}

// setDetail sets one of ev's Details.
func setDetail(ev *state.TaskEvent, k, v string) {
	if ev.Details == nil {
		ev.Details = make(map[string]string, 2)
	}
	ev.Details[k] = v
}

// The event constructors below fill the §6 fields each type carries, and
// a DisplayMessage that `sched alloc status` prints as is.

func eventReceived(now time.Time) *state.TaskEvent {
	return newEvent(state.TaskReceived, now, "Task received by client")
}

func eventSetup(now time.Time) *state.TaskEvent {
	return newEvent(state.TaskSetup, now, "Building Task Directory")
}

func eventStarted(now time.Time) *state.TaskEvent {
	return newEvent(state.TaskStarted, now, "Task started by client")
}

func eventTerminated(now time.Time, res *driver.ExitResult) *state.TaskEvent {
	ev := newEvent(state.TaskTerminated, now, "")
	ev.ExitCode, ev.Signal = res.ExitCode, res.Signal
	ev.DisplayMessage = fmt.Sprintf("Exit Code: %d", res.ExitCode)
	if res.Signal != 0 {
		ev.DisplayMessage += fmt.Sprintf(", Signal: %d", res.Signal)
	}
	if res.Err != nil {
		ev.Message = res.Err.Error()
		ev.DisplayMessage += ", Exit Message: " + res.Err.Error()
	}
	setDetail(ev, "exit_code", strconv.Itoa(res.ExitCode))
	setDetail(ev, "signal", strconv.Itoa(res.Signal))
	if res.OOMKilled {
		setDetail(ev, "oom_killed", "true")
	}
	return ev
}

func eventRestarting(now time.Time, delay time.Duration, reason string) *state.TaskEvent {
	ev := newEvent(state.TaskRestarting, now, "")
	ev.StartDelay, ev.RestartReason = int64(delay), reason
	ev.DisplayMessage = fmt.Sprintf("Task restarting in %v", delay.Round(time.Millisecond))
	if reason != "" {
		ev.DisplayMessage = reason + ": " + ev.DisplayMessage
	}
	setDetail(ev, "start_delay", strconv.FormatInt(int64(delay), 10))
	setDetail(ev, "restart_reason", reason)
	return ev
}

func eventNotRestarting(now time.Time, reason string, fails bool) *state.TaskEvent {
	ev := newEvent(state.TaskNotRestarting, now, reason)
	ev.RestartReason, ev.FailsTask = reason, fails
	setDetail(ev, "restart_reason", reason)
	if fails {
		setDetail(ev, "fails_task", "true")
	}
	return ev
}

func eventKilling(now time.Time, timeout time.Duration, reason string) *state.TaskEvent {
	ev := newEvent(state.TaskKilling, now, "")
	ev.KillTimeout, ev.KillReason = timeout, reason
	ev.DisplayMessage = fmt.Sprintf("Sent interrupt. Waiting %v before force killing", timeout)
	if reason != "" {
		ev.DisplayMessage = reason + ": " + ev.DisplayMessage
	}
	setDetail(ev, "kill_timeout", timeout.String())
	setDetail(ev, "kill_reason", reason)
	return ev
}

func eventKilled(now time.Time, err error) *state.TaskEvent {
	ev := newEvent(state.TaskKilled, now, "Task successfully killed")
	if err != nil {
		ev.KillError = err.Error()
		ev.DisplayMessage = "Task killed with error: " + err.Error()
		setDetail(ev, "kill_error", err.Error())
	}
	return ev
}

func eventSignaling(now time.Time, sig, reason string) *state.TaskEvent {
	ev := newEvent(state.TaskSignaling, now, "")
	ev.TaskSignal, ev.TaskSignalReason = sig, reason
	ev.DisplayMessage = "Task being sent a signal: " + sig
	if reason != "" {
		ev.DisplayMessage += " (" + reason + ")"
	}
	setDetail(ev, "signal", sig)
	setDetail(ev, "reason", reason)
	return ev
}

func eventDriverFailure(now time.Time, err error) *state.TaskEvent {
	ev := newEvent(state.TaskDriverFailure, now, "")
	ev.DriverError = err.Error()
	ev.DisplayMessage = "Failed to start task: " + err.Error()
	setDetail(ev, "driver_error", err.Error())
	return ev
}

func eventSetupFailure(now time.Time, err error, fails bool) *state.TaskEvent {
	ev := newEvent(state.TaskSetupFailure, now, "")
	ev.SetupError, ev.FailsTask = err.Error(), fails
	ev.DisplayMessage = "Task setup failed: " + err.Error()
	setDetail(ev, "setup_error", err.Error())
	return ev
}

func eventFailedValidation(now time.Time, err error) *state.TaskEvent {
	ev := newEvent(state.TaskFailedValidation, now, "")
	ev.ValidationError, ev.FailsTask = err.Error(), true
	ev.DisplayMessage = "Task failed validation: " + err.Error()
	setDetail(ev, "validation_error", err.Error())
	return ev
}

func eventSiblingFailed(now time.Time, sibling string) *state.TaskEvent {
	ev := newEvent(state.TaskSiblingFailed, now, "")
	ev.FailedSibling = sibling
	ev.DisplayMessage = fmt.Sprintf("Task's sibling %q failed", sibling)
	setDetail(ev, "failed_sibling", sibling)
	return ev
}

func eventLeaderDead(now time.Time) *state.TaskEvent {
	return newEvent(state.TaskLeaderDead, now, "Leader Task in Group dead")
}

func eventDriverMessage(now time.Time, msg string) *state.TaskEvent {
	ev := newEvent(state.TaskDriverMessage, now, msg)
	ev.DriverMessage = msg
	setDetail(ev, "driver_message", msg)
	return ev
}

// appendEvent adds ev to ts.Events, keeping the first event (Received)
// and the newest MaxTaskEvents-1. The events already there are never
// changed in place (a full list is replaced by a new one), so that the
// copies of a task state for reports and the journal share them
// (taskRunner.stateCopyLocked).
func appendEvent(ts *state.TaskState, ev *state.TaskEvent) {
	if n := len(ts.Events); n >= MaxTaskEvents && n > 0 {
		out := make([]*state.TaskEvent, 0, MaxTaskEvents)
		out = append(out, ts.Events[0])
		out = append(out, ts.Events[n-MaxTaskEvents+2:]...)
		ts.Events = append(out, ev)
		return
	}
	ts.Events = append(ts.Events, ev)
}
