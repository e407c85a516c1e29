package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/client/taskinput"
	"github.com/schedhq/sched/state"
)

// lifecycle is where a task runs in its group's life.
type lifecycle int

const (
	lcMain lifecycle = iota
	lcPrestart
	lcPoststart
	lcPoststop
)

func lifecycleOf(t *state.Task) (lifecycle, bool) {
	if t.Lifecycle == nil {
		return lcMain, false
	}
	switch t.Lifecycle.Hook {
	case state.TaskLifecycleHookPrestart:
		return lcPrestart, t.Lifecycle.Sidecar
	case state.TaskLifecycleHookPoststart:
		return lcPoststart, t.Lifecycle.Sidecar
	case state.TaskLifecycleHookPoststop:
		return lcPoststop, false
	}
	return lcMain, false
}

// killRequest is why and how a task is to be killed.
type killRequest struct {
	// event, when set, is recorded before Killing (Sibling Task Failed,
	// Leader Task Dead).
	event   *state.TaskEvent
	reason  string
	noDelay bool
}

// outcome is how one run of a task ended.
type outcome struct {
	kind exitKind
	// killed: the task was killed on request; it is done.
	killed bool
	// fatal: the task cannot succeed by restarting (bad config).
	fatal bool
	// restartNow: a template change asked for a restart that does not
	// count against the restart policy.
	restartNow bool
	// cancelled: the client is shutting down and leaves the task as it is.
	cancelled bool
}

// taskRunner runs one task of an allocation: it prepares its inputs,
// starts it through its driver, waits for it, applies the restart policy,
// and kills it on request. One goroutine (run) does all of that; the other
// methods only post requests to it or read its state.
type taskRunner struct {
	ar      *allocRunner
	name    string
	lc      lifecycle
	sidecar bool
	leader  bool
	drv     driver.Driver
	id      string // driver task ID: <alloc id>/<task>

	mu      sync.Mutex
	task    *state.Task
	ts      *state.TaskState
	handle  *driver.TaskHandle
	tracker *restartTracker
	// env is the environment the task was last started with: baseEnv
	// with the variables of its env templates merged over it.
	env map[string]string
	// baseEnv is env without the template variables: templates are
	// rendered against it, so a template that reads a variable another
	// template defines renders the same before the start and while the
	// task runs.
	baseEnv map[string]string
	kill    *killRequest
	// artifactsDone: artifacts are fetched once per allocation.
	artifactsDone bool
	// rendered: the files of the templates in renderedTemplates are on
	// disk, as last rendered. A restart by the restart policy reuses them
	// unless the policy says render_templates (or the templates changed).
	rendered          bool
	renderedTemplates []*state.Template
	// dirty: the handle changed since the state was last persisted.
	dirty bool

	runOnce   sync.Once
	started   chan struct{} // closed once the task ran (or will not)
	startOnce sync.Once
	done      chan struct{} // closed when run returns
	killCh    chan struct{} // closed on the first kill request
	killOnce  sync.Once
	restartCh chan string // template-driven restarts
}

func newTaskRunner(ar *allocRunner, task *state.Task, restored *persistedTask) *taskRunner {
	lc, sidecar := lifecycleOf(task)
	tr := &taskRunner{
		ar: ar, name: task.Name, lc: lc, sidecar: sidecar, leader: task.Leader,
		id:   ar.id + "/" + task.Name,
		task: task, started: make(chan struct{}), done: make(chan struct{}),
		killCh: make(chan struct{}), restartCh: make(chan string, 1),
	}
	tr.drv = ar.c.drivers[task.Driver]
	var win restartWindow
	if restored != nil && restored.State != nil {
		tr.ts, tr.handle, win = restored.State, restored.Handle, restored.Restart
	} else {
		// Room for the events of a start and a stop (Received, Task
		// Setup, Started, Killing, Terminated, Killed) at once, where
		// growing by appends cost four allocations.
		tr.ts = &state.TaskState{State: state.TaskStatePending, Events: make([]*state.TaskEvent, 0, 6)}
		appendEvent(tr.ts, eventReceived(ar.c.now()))
	}
	tr.tracker = newRestartTracker(ar.restartPolicy(task), tr.oneShot(), win)
	return tr
}

// oneShot tasks are done once they exit 0.
func (tr *taskRunner) oneShot() bool {
	if tr.ar.batch() {
		return true
	}
	return tr.lc != lcMain && !tr.sidecar
}

// start runs the task's goroutine (once).
func (tr *taskRunner) start() {
	tr.runOnce.Do(func() {
		tr.ar.wg.Add(1)
		go func() {
			defer tr.ar.wg.Done()
			tr.run()
		}()
	})
}

// requestKill asks the task to stop; the first request wins. A task never
// started is marked dead at once.
func (tr *taskRunner) requestKill(k killRequest) {
	tr.killOnce.Do(func() {
		tr.mu.Lock()
		tr.kill = &k
		tr.mu.Unlock()
		close(tr.killCh)
	})
	tr.runOnce.Do(func() {
		// Never started: nothing runs, so nothing to kill.
		defer tr.ar.kick()
		defer close(tr.done)
		defer tr.markStarted()
		if !tr.isDead() {
			tr.setState(func(ts *state.TaskState) { ts.State = state.TaskStateDead; ts.FinishedAt = tr.ar.c.now() })
		}
	})
}

func (tr *taskRunner) killRequested() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

// markStarted closes started (once) and wakes the alloc runner, which
// may be waiting on it.
func (tr *taskRunner) markStarted() {
	tr.startOnce.Do(func() {
		close(tr.started)
		tr.ar.kick()
	})
}

// Restart implements taskinput.ChangeHandler: a template changed and the
// task must restart (outside the restart policy's count).
func (tr *taskRunner) Restart(ctx context.Context, reason string) error {
	select {
	case tr.restartCh <- reason:
	default: // a restart is already pending
	}
	return nil
}

// Signal implements taskinput.ChangeHandler.
func (tr *taskRunner) Signal(ctx context.Context, sig string) error {
	tr.emit(eventSignaling(tr.ar.c.now(), sig, "template re-rendered"))
	if tr.drv == nil {
		return errors.New("no driver")
	}
	return tr.drv.SignalTask(tr.id, sig)
}

// snapshot copies the task state for reporting and persisting.
func (tr *taskRunner) snapshot() *persistedTask {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var h *driver.TaskHandle
	if tr.handle != nil {
		cp := *tr.handle
		h = &cp
	}
	return &persistedTask{State: tr.stateCopyLocked(), Handle: h, Restart: tr.tracker.window()}
}

// stateCopy copies the task state alone, for a report.
func (tr *taskRunner) stateCopy() *state.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.stateCopyLocked()
}

// stateCopyLocked copies the task state. The copy shares the runner's
// events (capped, so that an append to the copy cannot reach them):
// appendEvent never changes an event already in the list, it appends
// past the copies' length or replaces the list. tr.mu must be held.
func (tr *taskRunner) stateCopyLocked() *state.TaskState {
	ts := *tr.ts
	ts.Events = slices.Clip(ts.Events)
	return &ts
}

// taskState is the task's state (pending, running, dead).
func (tr *taskRunner) taskState() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ts.State
}

func (tr *taskRunner) isDead() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ts.State == state.TaskStateDead
}

func (tr *taskRunner) failed() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ts.Failed
}

func (tr *taskRunner) currentTask() *state.Task {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.task
}

// durableState is the part of a task state a restarted client needs at
// once; a change to anything else (an event) is persisted with the next
// change of this.
type durableState struct {
	State    string
	Failed   bool
	Restarts uint64
}

func durableOf(ts *state.TaskState) durableState {
	return durableState{ts.State, ts.Failed, ts.Restarts}
}

// setState changes the task state under the lock and tells the alloc
// runner, which reports it, and persists it when what changed matters
// to a restarted client (the state, the handle, the restart count).
func (tr *taskRunner) setState(fn func(ts *state.TaskState), events ...*state.TaskEvent) {
	tr.mu.Lock()
	before := durableOf(tr.ts)
	if fn != nil {
		fn(tr.ts)
	}
	for _, ev := range events {
		appendEvent(tr.ts, ev)
	}
	durable := tr.dirty || durableOf(tr.ts) != before
	tr.dirty = false
	tr.mu.Unlock()
	tr.ar.taskChanged(durable)
}

// setHandle records the driver's handle of the running task (nil once it
// stopped); the next setState persists it.
func (tr *taskRunner) setHandle(h *driver.TaskHandle) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.handle, tr.dirty = h, true
}

func (tr *taskRunner) emit(ev *state.TaskEvent) { tr.setState(nil, ev) }

func (tr *taskRunner) setDead(failed bool, events ...*state.TaskEvent) {
	now := tr.ar.c.now()
	tr.setState(func(ts *state.TaskState) {
		ts.State, ts.FinishedAt = state.TaskStateDead, now
		ts.Failed = ts.Failed || failed
	}, events...)
}

// run is the task's life. It returns when the task is dead for good, or
// at once when the client shuts down (the task is left running, to be
// recovered by the next client on this data dir).
func (tr *taskRunner) run() {
	// The alloc runner waits on done: wake it once done is closed.
	defer tr.ar.kick()
	defer close(tr.done)
	defer tr.markStarted()
	ctx := tr.ar.ctx
	if tr.isDead() {
		return
	}
	if tr.drv == nil {
		tr.setDead(true, eventFailedValidation(tr.ar.c.now(), fmt.Errorf("driver %q is not available on this node", tr.currentTask().Driver)))
		return
	}
	attached, lost := tr.recover()
	tr.mu.Lock()
	first := !attached && !lost && len(tr.ts.Events) <= 1
	tr.mu.Unlock()
	// render: the next start renders the templates again. A restart by
	// the restart policy does so only with RenderTemplates; a start after a
	// template-driven restart always does (it is cheap, and the files are
	// current either way).
	render := true
	for {
		var out outcome
		switch {
		case attached:
			attached = false
			tr.markStarted()
			out = tr.runAttached(ctx)
		case lost:
			lost = false
			out = outcome{kind: exitFailure}
		default:
			if tr.killRequested() {
				tr.setDead(false)
				return
			}
			out = tr.startAndWait(ctx, first, render)
			first = false
		}
		switch {
		case out.cancelled:
			return
		case out.killed:
			tr.setDead(false)
			return
		case out.fatal:
			tr.setDead(true, eventNotRestarting(tr.ar.c.now(), "Error was unrecoverable", true))
			return
		case out.restartNow:
			render = true
			continue
		}
		now := tr.ar.c.now()
		tr.mu.Lock()
		d := tr.tracker.next(out.kind, now, tr.ar.c.jitter())
		render = tr.tracker.policy.RenderTemplates
		tr.mu.Unlock()
		if !d.Restart {
			if d.Reason == reasonSuccessfulExit {
				tr.setDead(false)
			} else {
				tr.setDead(d.Failed, eventNotRestarting(now, d.Reason, d.Failed))
			}
			return
		}
		tr.setState(func(ts *state.TaskState) {
			ts.State, ts.LastRestart = state.TaskStatePending, now
			ts.Restarts++
		}, eventRestarting(now, d.Delay, d.Reason))
		if !tr.ar.c.sleep(ctx, d.Delay, tr.killCh) {
			if ctx.Err() != nil {
				return
			}
			tr.setDead(false)
			return
		}
	}
}

// recover re-attaches to the task a previous client started. attached:
// it runs; lost: it was running and is gone (it counts as a failure).
func (tr *taskRunner) recover() (attached, lost bool) {
	tr.mu.Lock()
	h := tr.handle
	tr.mu.Unlock()
	if h == nil {
		return false, false
	}
	err := tr.drv.RecoverTask(h)
	if err == nil || errors.Is(err, driver.ErrTaskExists) {
		tr.mu.Lock()
		task, base := tr.task, tr.buildEnvLocked()
		tr.mu.Unlock()
		// The task runs with what the previous client rendered: read its
		// env templates back for the services registered with its env. A
		// file that no longer parses leaves them out; the next start
		// reports it.
		env := base
		if tenv, err := taskinput.TemplateEnv(tr.ar.taskInput(task, base)); err == nil {
			env = withTemplateEnv(base, tenv)
		}
		tr.mu.Lock()
		tr.env, tr.baseEnv = env, base
		tr.rendered, tr.renderedTemplates = true, task.Templates
		tr.mu.Unlock()
		return true, false
	}
	now := tr.ar.c.now()
	tr.setHandle(nil)
	tr.setState(func(ts *state.TaskState) {
		ts.State, ts.FinishedAt = state.TaskStatePending, now
	}, eventDriverMessage(now, "Task was lost while the client was down: "+err.Error()))
	return false, true
}

// startAndWait prepares and starts the task, then waits for it.
func (tr *taskRunner) startAndWait(ctx context.Context, first, render bool) outcome {
	cfg, fatal, err := tr.prepare(ctx, first, render)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{cancelled: true}
		}
		return outcome{kind: exitStartError, fatal: fatal}
	}
	if tr.killRequested() {
		return outcome{killed: true}
	}
	h, err := tr.drv.StartTask(cfg)
	if err != nil {
		now := tr.ar.c.now()
		if errors.Is(err, driver.ErrBadConfig) {
			tr.emit(eventFailedValidation(now, err))
			return outcome{kind: exitStartError, fatal: true}
		}
		tr.emit(eventDriverFailure(now, err))
		return outcome{kind: exitStartError}
	}
	now := tr.ar.c.now()
	tr.setHandle(h)
	tr.setState(func(ts *state.TaskState) {
		ts.State, ts.StartedAt, ts.FinishedAt = state.TaskStateRunning, now, time.Time{}
	}, eventStarted(now))
	tr.markStarted()
	return tr.runAttached(ctx)
}

// buildEnvLocked computes the task's environment from the current
// allocation and task. tr.mu must be held.
func (tr *taskRunner) buildEnvLocked() map[string]string {
	return tr.ar.envFor(tr.task)
}

// prepare builds what the task needs before it starts: its environment,
// artifacts, dispatch payload and templates, and the driver config with
// every ${...} interpolated. Failures are recorded as events; fatal ones
// cannot be cured by a restart.
//
// The templates are rendered when render is set (see run), and whenever
// the files on disk are not those of the task's current templates (the
// first start, a failed render, an in-place update that changed them);
// otherwise the files rendered before are reused. Either way the env
// templates are read back from disk and merged into the environment (see
// withTemplateEnv): a template whose change_mode is signal or noop
// changes the file while the task runs, but the task keeps the
// environment it was started with until its next start.
func (tr *taskRunner) prepare(ctx context.Context, first, render bool) (*driver.TaskConfig, bool, error) {
	c := tr.ar.c
	if first {
		tr.emit(eventSetup(c.now()))
	}
	tr.mu.Lock()
	task := tr.task
	base := tr.buildEnvLocked()
	tr.env, tr.baseEnv = base, base
	fetch := len(task.Artifacts) > 0 && !tr.artifactsDone
	render = render || !tr.rendered || !reflect.DeepEqual(tr.renderedTemplates, task.Templates)
	tr.mu.Unlock()

	// A restart asked for by a template change before this start is moot:
	// the start reads the files as they are now, rendered afresh below or
	// by the change that asked for the restart.
	select {
	case <-tr.restartCh:
	default:
	}
	in := tr.ar.taskInput(task, base)
	if fetch {
		tr.emit(taskinput.ArtifactsEvent(c.now()))
		if err := c.fetcher.FetchArtifacts(ctx, in); err != nil {
			var ae *taskinput.ArtifactError
			if errors.As(err, &ae) {
				tr.emit(ae.Event(c.now()))
			} else {
				tr.emit(eventSetupFailure(c.now(), err, false))
			}
			return nil, false, err
		}
		tr.mu.Lock()
		tr.artifactsDone = true
		tr.mu.Unlock()
	}
	if err := taskinput.WriteDispatchPayload(in); err != nil {
		tr.emit(eventSetupFailure(c.now(), err, false))
		return nil, false, err
	}
	if render {
		if err := tr.renderTemplates(in); err != nil {
			fatal := errors.Is(err, taskinput.ErrEscapes)
			tr.emit(eventSetupFailure(c.now(), err, fatal))
			return nil, fatal, err
		}
	}
	// A malformed env template fails the task, as in Nomad: the error
	// names the template and the line, and restarting renders it the same.
	tenv, err := taskinput.TemplateEnv(in)
	if err != nil {
		tr.emit(eventSetupFailure(c.now(), err, true))
		return nil, true, err
	}
	env := withTemplateEnv(base, tenv)
	tr.mu.Lock()
	tr.env = env
	tr.mu.Unlock()
	mounts, err := ResolveVolumeMounts(c.nodeSnapshot(), tr.ar.group(), task)
	if err != nil {
		tr.emit(eventSetupFailure(c.now(), err, true))
		return nil, true, err
	}
	dir := tr.ar.dir
	return &driver.TaskConfig{
		ID: tr.id, AllocID: tr.ar.id, TaskName: task.Name,
		JobID: tr.ar.alloc().JobID, Namespace: tr.ar.alloc().Namespace,
		Config: interpolateConfig(task.Config, env, c.nodeSnapshot()),
		Env:    env, User: task.User, WorkloadUID: tr.ar.workloadUID(),
		TaskDir: dir.TaskDir(task.Name), LocalDir: dir.LocalDir(task.Name),
		SecretsDir: dir.SecretsDir(task.Name), AllocDir: dir.Shared(),
		LogDir: dir.LogDir(), LogConfig: task.LogConfig,
		// The limits are the allocation's, whatever a template sets.
		CPU: atoiOr(base["SCHED_CPU_LIMIT"]), MemoryMB: atoiOr(base["SCHED_MEMORY_LIMIT"]),
		MemoryMaxMB: memoryMaxOf(tr.ar.alloc(), task), Cores: coresOf(task),
		Ports: tr.ar.taskPorts(task), Emit: tr.driverMessage,
		Mounts: mounts, NetworkMode: networkMode(tr.ar.group()), NetNS: tr.ar.netNSPath(),
	}, false, nil
}

// renderTemplates renders in's templates and records which templates the
// files on disk now hold; after a failure they hold none for sure.
func (tr *taskRunner) renderTemplates(in *taskinput.Input) error {
	tr.mu.Lock()
	tr.rendered, tr.renderedTemplates = false, nil
	tr.mu.Unlock()
	changed, err := taskinput.RenderTemplates(in)
	if err != nil {
		return err
	}
	tr.mu.Lock()
	tr.rendered, tr.renderedTemplates = true, in.Task.Templates
	tr.mu.Unlock()
	if len(changed) > 0 {
		tr.emit(newEvent(taskinput.EventTemplateRendered, tr.ar.c.now(), fmt.Sprintf("Rendered %d template(s)", len(changed))))
	}
	return nil
}

// runAttached registers the running task's services, waits for it to
// exit or to be killed or restarted, and records the exit.
func (tr *taskRunner) runAttached(ctx context.Context) outcome {
	c := tr.ar.c
	tr.mu.Lock()
	task, env, base := tr.task, tr.env, tr.baseEnv
	tr.mu.Unlock()
	if c.services != nil && len(task.Services) > 0 {
		if err := c.services.RegisterTask(ctx, tr.ar.alloc(), task, env, tr.ar.dir.TaskDir(task.Name)); err != nil {
			tr.emit(eventDriverMessage(c.now(), "Service registration failed: "+err.Error()))
		}
	}
	if len(task.Templates) > 0 {
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go tr.watchTemplates(wctx, task, base)
	}
	ch, err := tr.drv.WaitTask(ctx, tr.id)
	if err != nil {
		ch = closedExit(&driver.ExitResult{Err: err})
	}
	var res *driver.ExitResult
	out := outcome{}
	select {
	case r, ok := <-ch:
		if !ok {
			return outcome{cancelled: true}
		}
		res = r
	case <-tr.killCh:
		res = tr.doKill(ch)
		out.killed = true
	case reason := <-tr.restartCh:
		timeout := tr.killTimeout(task)
		tr.emit(eventRestarting(c.now(), 0, reason))
		tr.deregister()
		_ = tr.drv.StopTask(tr.id, timeout, task.KillSignal)
		res = waitExit(ch, timeout+5*time.Second)
		out.restartNow = true
	case <-ctx.Done():
		return outcome{cancelled: true}
	}
	if res == nil {
		if ctx.Err() != nil {
			return outcome{cancelled: true}
		}
		res = &driver.ExitResult{Err: errors.New("the task did not exit after it was killed")}
	}
	tr.deregister()
	now := c.now()
	if !out.killed {
		tr.emit(eventTerminated(now, res))
	}
	_ = tr.drv.DestroyTask(tr.id, true)
	tr.setHandle(nil)
	tr.setState(func(ts *state.TaskState) { ts.FinishedAt = now })
	if res.Successful() {
		out.kind = exitSuccess
	} else {
		out.kind = exitFailure
	}
	return out
}

// watchTemplates renders the running task's templates again every
// TemplateInterval until ctx ends. A change is reported as a "Template
// Rendered" event and acted on through the task runner's ChangeHandler
// methods (Restart, Signal) per the templates' ChangeMode and Splay. env
// is the task's environment without its template variables, as for the
// render before the start.
func (tr *taskRunner) watchTemplates(ctx context.Context, task *state.Task, env map[string]string) {
	c := tr.ar.c
	r := &taskinput.Rerenderer{Now: c.now}
	t := time.NewTicker(c.cfg.TemplateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := r.Rerender(ctx, tr.ar.taskInput(task, env), tr, tr.emit); err != nil && ctx.Err() == nil {
			tr.emit(eventDriverMessage(c.now(), "Template re-render failed: "+err.Error()))
		}
	}
}

// doKill stops the running task: it records why, deregisters its
// services, waits out its shutdown delay, then has the driver send the
// kill signal and, after the kill timeout, SIGKILL the process group.
func (tr *taskRunner) doKill(ch <-chan *driver.ExitResult) *driver.ExitResult {
	c := tr.ar.c
	tr.mu.Lock()
	k, task := *tr.kill, tr.task
	tr.mu.Unlock()
	if k.event != nil {
		tr.emit(k.event)
	}
	tr.deregister()
	if task.ShutdownDelay > 0 && !k.noDelay {
		select {
		case res, ok := <-ch:
			if ok {
				tr.emit(eventTerminated(c.now(), res))
				tr.emit(eventKilled(c.now(), nil))
				return res
			}
		case <-time.After(task.ShutdownDelay):
		}
	}
	timeout := tr.killTimeout(task)
	tr.emit(eventKilling(c.now(), timeout, k.reason))
	err := tr.drv.StopTask(tr.id, timeout, task.KillSignal)
	res := waitExit(ch, timeout+5*time.Second)
	if res != nil {
		tr.emit(eventTerminated(c.now(), res))
	}
	tr.emit(eventKilled(c.now(), err))
	return res
}

func (tr *taskRunner) killTimeout(task *state.Task) time.Duration {
	t := task.KillTimeout
	if t <= 0 {
		t = state.DefaultKillTimeout
	}
	return min(t, tr.ar.c.cfg.MaxKillTimeout)
}

// deregister removes the task's services (idempotent).
func (tr *taskRunner) deregister() {
	if s := tr.ar.c.services; s != nil && len(tr.currentTask().Services) > 0 {
		_ = s.DeregisterTask(tr.ar.id, tr.name)
	}
}

// updateTask takes a new version of the task (an in-place update): it is
// used from the next start on.
func (tr *taskRunner) updateTask(t *state.Task) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.task = t
	tr.tracker.policy = *orDefaultPolicy(tr.ar.restartPolicy(t))
}

func orDefaultPolicy(p *state.RestartPolicy) *state.RestartPolicy {
	if p == nil {
		return &state.RestartPolicy{Mode: state.RestartPolicyModeFail}
	}
	cp := *p
	if cp.Mode == "" {
		cp.Mode = state.RestartPolicyModeFail
	}
	return &cp
}

// waitExit waits up to d for the exit on ch.
func waitExit(ch <-chan *driver.ExitResult, d time.Duration) *driver.ExitResult {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-ch:
		return r
	case <-t.C:
		return nil
	}
}

func closedExit(r *driver.ExitResult) <-chan *driver.ExitResult {
	ch := make(chan *driver.ExitResult, 1)
	ch <- r
	close(ch)
	return ch
}

func atoiOr(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
