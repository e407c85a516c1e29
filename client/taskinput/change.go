package taskinput

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/schedhq/sched/state"
)

// ChangeAction is what a set of re-rendered templates asks of the running
// task, merged over every changed template:
//
//   - any template with ChangeMode "restart" makes Restart true (a restart
//     makes any signal moot, so Signals is then empty);
//   - otherwise each distinct ChangeSignal of a "signal" template is in
//     Signals, in template order;
//   - "noop" templates ask for nothing.
//
// ChangeMode "script" is not supported: it is treated as noop, and the
// template's path is listed in Unsupported so the task runner can say so
// in an event.
type ChangeAction struct {
	Restart     bool
	Signals     []string
	Unsupported []string
	// Templates are the DestPaths of the changed templates.
	Templates []string
	// Splay is the delay to wait before acting: uniformly random in
	// [0, largest Splay of the changed templates that act).
	Splay time.Duration
}

// Empty reports whether the action asks nothing of the task.
func (a *ChangeAction) Empty() bool { return a == nil || !a.Restart && len(a.Signals) == 0 }

// PlanChange merges the change modes of changed into one action. randN
// picks the splay: it returns a value in [0, n) and may be nil for
// math/rand/v2's Int64N.
func PlanChange(changed []*state.Template, randN func(n int64) int64) *ChangeAction {
	a := &ChangeAction{}
	var maxSplay time.Duration
	for _, t := range changed {
		a.Templates = append(a.Templates, t.DestPath)
		switch t.ChangeMode {
		case state.TemplateChangeModeRestart, "":
			a.Restart = true
		case state.TemplateChangeModeSignal:
			if !slices.Contains(a.Signals, t.ChangeSignal) {
				a.Signals = append(a.Signals, t.ChangeSignal)
			}
		case state.TemplateChangeModeNoop:
			continue
		default:
			a.Unsupported = append(a.Unsupported, t.DestPath)
			continue
		}
		maxSplay = max(maxSplay, t.Splay)
	}
	if a.Restart {
		a.Signals = nil
	}
	if !a.Empty() && maxSplay > 0 {
		if randN == nil {
			randN = rand.Int64N
		}
		a.Splay = time.Duration(randN(int64(maxSplay)))
	}
	return a
}

// Event is the "Template Rendered" task event for a, at now. Message names
// the changed files and what is done about them; Details carries
// "templates" (comma-separated DestPaths) and "change_mode" (restart,
// signal, noop), plus "signals" and "splay" when they apply.
func (a *ChangeAction) Event(now time.Time) *state.TaskEvent {
	mode := state.TemplateChangeModeNoop
	switch {
	case a.Restart:
		mode = state.TemplateChangeModeRestart
	case len(a.Signals) > 0:
		mode = state.TemplateChangeModeSignal
	}
	files := strings.Join(a.Templates, ", ")
	details := map[string]string{"templates": strings.Join(a.Templates, ","), "change_mode": mode}
	msg := fmt.Sprintf("Rendered %s", files)
	switch mode {
	case state.TemplateChangeModeRestart:
		msg += "; restarting the task"
	case state.TemplateChangeModeSignal:
		msg += "; signaling the task with " + strings.Join(a.Signals, ", ")
		details["signals"] = strings.Join(a.Signals, ",")
	}
	if a.Splay > 0 {
		msg += fmt.Sprintf(" after a splay of %s", a.Splay.Round(time.Millisecond))
		details["splay"] = a.Splay.String()
	}
	if len(a.Unsupported) > 0 {
		msg += "; change mode script is not supported for " + strings.Join(a.Unsupported, ", ")
		details["unsupported"] = strings.Join(a.Unsupported, ",")
	}
	return &state.TaskEvent{
		Type:           EventTemplateRendered,
		Time:           now.UnixNano(),
		Message:        msg,
		DisplayMessage: msg,
		Details:        details,
	}
}

// ChangeHandler is the running task as a Rerenderer sees it: the task
// runner implements it.
type ChangeHandler interface {
	// Restart restarts the task because templates changed.
	Restart(ctx context.Context, reason string) error
	// Signal sends signal to the task.
	Signal(ctx context.Context, signal string) error
}

// Rerenderer re-renders a running task's templates and acts on a change.
// Its zero value uses the real clock and math/rand/v2; tests set After and
// RandN.
type Rerenderer struct {
	// After is the clock for the splay wait; nil means time.After.
	After func(d time.Duration) <-chan time.Time
	// RandN returns a value in [0, n); nil means math/rand/v2's Int64N.
	RandN func(n int64) int64
	// Now stamps events; nil means time.Now.
	Now func() time.Time
}

// Rerender renders in's templates again. When any content changed, it
// plans the action (PlanChange), reports the "Template Rendered" event to
// emit (nil emit is allowed) before waiting, waits the splay, and then
// restarts or signals the task through h. It returns the action (nil when
// nothing changed). A canceled ctx ends the splay wait with ctx.Err() and
// no action taken.
func (r *Rerenderer) Rerender(ctx context.Context, in *Input, h ChangeHandler, emit func(*state.TaskEvent)) (*ChangeAction, error) {
	changed, err := RenderTemplates(in)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return nil, nil
	}
	a := PlanChange(changed, r.RandN)
	if emit != nil {
		now := time.Now
		if r.Now != nil {
			now = r.Now
		}
		emit(a.Event(now()))
	}
	if a.Empty() {
		return a, nil
	}
	if a.Splay > 0 {
		after := time.After
		if r.After != nil {
			after = r.After
		}
		select {
		case <-after(a.Splay):
		case <-ctx.Done():
			return a, ctx.Err()
		}
	}
	if a.Restart {
		return a, h.Restart(ctx, "template re-rendered: "+strings.Join(a.Templates, ", "))
	}
	for _, sig := range a.Signals {
		if err := h.Signal(ctx, sig); err != nil {
			return a, fmt.Errorf("signal %s: %w", sig, err)
		}
	}
	return a, nil
}
