package client

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/schedhq/sched/client/taskinput"
	"github.com/schedhq/sched/state"
)

// allocRunner runs one allocation: it builds the allocation directory,
// runs the group's tasks in lifecycle order (prestart, then the main
// tasks with poststart after them, then poststop), stops the siblings of
// a task that failed or of a dead leader, kills everything when the
// servers stop the allocation, and reports each change.
type allocRunner struct {
	c   *Client
	id  string
	ctx context.Context
	dir allocDir
	// wg tracks the task goroutines.
	wg sync.WaitGroup

	mu    sync.Mutex
	a     *state.Allocation
	tasks []*taskRunner // in group order
	// stopping: the servers (or GC) asked for the allocation to stop.
	stopping bool
	noDelay  bool
	// failed and desc: an allocation-level failure.
	failed     bool
	desc       string
	terminalAt time.Time
	health     *state.AllocDeploymentStatus
	// healthFor is the deployment the running health watcher judges for,
	// and healthStop ends that watcher: an update that moves the
	// allocation to another deployment starts a new one (health.go).
	healthFor  string
	healthStop chan struct{}
	// destroyed: the directory and state are gone; nothing is written
	// again.
	destroyed bool
	// groupRegistered: the group's services are registered.
	groupRegistered bool
	// uid is the allocation's workload uid (workload_user.go); 0: none.
	// noUser: the allocation ran before without one, and keeps so.
	uid    uint32
	noUser bool

	stopCh   chan struct{}
	stopOnce sync.Once
	changed  chan struct{}
	// dirsMu guards dirsBuilt (the directory tree is built: ensureDirs)
	// and dirsGone (destroy removed it; it is not built again).
	dirsMu    sync.Mutex
	dirsBuilt bool
	dirsGone  bool
	// restored: a previous client run left the allocation (its directory
	// may be there).
	restored bool
	// healthKick wakes the deployment health watcher (health.go).
	healthKick chan struct{}
	done       chan struct{}
	persistMu  sync.Mutex
	// persisted is the allocation as last written to the journal
	// (persistMu): a task's change writes only the runner's state while
	// the servers sent no new version.
	persisted *state.Allocation
}

// newAllocRunner makes the runner of a; restored is what a previous
// client run persisted about it (nil for a new allocation).
func newAllocRunner(c *Client, a *state.Allocation, restored *persistedRun) *allocRunner {
	ar := &allocRunner{
		c: c, id: a.ID, ctx: c.ctx, a: a,
		dir:     allocDir{Root: c.allocPath(a.ID)},
		stopCh:  make(chan struct{}),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),

		healthKick: make(chan struct{}, 1),
	}
	if restored != nil {
		ar.restored = true
		ar.failed, ar.desc, ar.terminalAt = restored.Failed, restored.Description, restored.TerminalAt
		ar.restoreUser(restored)
	}
	if tg := ar.group(); tg != nil {
		for _, t := range tg.Tasks {
			var pt *persistedTask
			if restored != nil {
				pt = restored.Tasks[t.Name]
			}
			ar.tasks = append(ar.tasks, newTaskRunner(ar, t, pt))
		}
	}
	if (restored != nil && restored.Stopping) || a.ServerTerminal() {
		ar.stopping, ar.noDelay = true, noShutdownDelay(a)
		ar.stopOnce.Do(func() { close(ar.stopCh) })
	}
	return ar
}

func noShutdownDelay(a *state.Allocation) bool {
	p := a.DesiredTransition.NoShutdownDelay
	return p != nil && *p
}

func (ar *allocRunner) alloc() *state.Allocation {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.a
}

// group is the allocation's task group in its job.
func (ar *allocRunner) group() *state.TaskGroup {
	a := ar.alloc()
	if a.Job == nil {
		return nil
	}
	for _, tg := range a.Job.TaskGroups {
		if tg.Name == a.TaskGroup {
			return tg
		}
	}
	return nil
}

func (ar *allocRunner) batch() bool {
	a := ar.alloc()
	return a.Job != nil && (a.Job.Type == state.JobTypeBatch || a.Job.Type == state.JobTypeSysBatch)
}

// restartPolicy is the task's policy, else the group's.
func (ar *allocRunner) restartPolicy(t *state.Task) *state.RestartPolicy {
	if t.RestartPolicy != nil {
		return t.RestartPolicy
	}
	if tg := ar.group(); tg != nil && tg.RestartPolicy != nil {
		return tg.RestartPolicy
	}
	return state.DefaultRestartPolicy(ar.alloc().Job.Type)
}

// envFor builds task t's environment.
func (ar *allocRunner) envFor(t *state.Task) map[string]string {
	c := ar.c
	return buildEnv(&envInput{
		Alloc: ar.alloc(), Group: ar.group(), Task: t, Node: c.nodeSnapshot(), Region: c.cfg.Region,
		IP: c.ip, HostNetworkIPs: c.hostNetIPs,
		AllocDir: ar.dir.Shared(), TaskDir: ar.dir.TaskDir(t.Name),
		LocalDir: ar.dir.LocalDir(t.Name), SecretsDir: ar.dir.SecretsDir(t.Name),
	})
}

// taskInput is what client/taskinput needs about task t.
func (ar *allocRunner) taskInput(t *state.Task, env map[string]string) *taskinput.Input {
	a, tg, node := ar.alloc(), ar.group(), ar.c.nodeSnapshot()
	var jobMeta, groupMeta map[string]string
	var payload []byte
	if a.Job != nil {
		jobMeta, payload = a.Job.Meta, a.Job.Payload
	}
	if tg != nil {
		groupMeta = tg.Meta
	}
	in := &taskinput.Input{
		Task: t, TaskDir: ar.dir.TaskDir(t.Name), LocalDir: ar.dir.LocalDir(t.Name),
		Env: env, Meta: taskinput.MergeMeta(jobMeta, groupMeta, t.Meta),
		NodeAttrs: node.Attributes, Node: node, Payload: payload,
	}
	if t.User == "" && ar.c.users != nil {
		// The task runs as the allocation's workload user (ownDirs): the
		// files written for it are its own, whatever their perms.
		in.Owner = ar.workloadUID()
	}
	return in
}

// run is the allocation's life. It returns when every task is dead, or
// at once when the client shuts down.
func (ar *allocRunner) run() {
	defer close(ar.done)
	if ar.terminal() {
		ar.report()
		return
	}
	if ar.group() == nil {
		ar.fail("the allocation's task group is not in its job")
		return
	}
	if err := ar.acquireUser(); err != nil {
		ar.fail(err.Error())
		return
	}
	if ar.needsDirs() {
		if err := ar.ensureDirs(); err != nil {
			ar.fail(err.Error())
			return
		}
	}
	if err := ar.setupNetwork(); err != nil { // network.go
		ar.fail(err.Error())
		return
	}
	ar.report()
	ar.watchHealth()
	if !ar.lifecycle() {
		return // the client is shutting down
	}
	ar.teardownNetwork()
	ar.mu.Lock()
	ar.terminalAt = ar.c.now()
	ar.mu.Unlock()
	ar.persist()
	ar.report()
}

// needsDirs reports whether a task of the allocation needs its directory
// tree before it starts (taskNeedsDirs). A restored allocation whose tree
// is there builds it again, which resets its modes.
func (ar *allocRunner) needsDirs() bool {
	if ar.restored {
		if _, err := os.Stat(ar.dir.Root); err == nil {
			return true
		}
	}
	for _, t := range ar.tasks {
		if taskNeedsDirs(t.currentTask(), t.drv) {
			return true
		}
	}
	return false
}

// ensureDirs builds the allocation's directory tree (every task's) and
// hands it to the workload uid, once; it is not built again after
// destroy removed it.
func (ar *allocRunner) ensureDirs() error {
	ar.dirsMu.Lock()
	defer ar.dirsMu.Unlock()
	if ar.dirsBuilt {
		return nil
	}
	if ar.dirsGone {
		return fmt.Errorf("allocation %s: its directory was removed", ar.id)
	}
	names := make([]string, len(ar.tasks))
	for i, t := range ar.tasks {
		names[i] = t.name
	}
	if err := ar.dir.build(names); err != nil {
		return err
	}
	if err := ar.ownDirs(); err != nil {
		return err
	}
	ar.dirsBuilt = true
	return nil
}

// fail ends an allocation that cannot run at all: every task is marked
// dead and failed with a Setup Failure event.
func (ar *allocRunner) fail(msg string) {
	ar.mu.Lock()
	ar.failed, ar.desc, ar.terminalAt = true, msg, ar.c.now()
	ar.mu.Unlock()
	for _, t := range ar.tasks {
		t.runOnce.Do(func() {
			t.markStarted()
			close(t.done)
		})
		t.setDead(true, eventSetupFailure(ar.c.now(), errString(msg), true))
	}
	ar.persist()
	ar.report()
}

type errString string

func (e errString) Error() string { return string(e) }

// waitResult is how a wait of the lifecycle ended.
type waitResult int

const (
	waitMet waitResult = iota
	waitStopped
	waitCancelled
)

// waitUntil waits until cond holds (re-checked on every task change),
// the allocation is stopped, or the client shuts down.
func (ar *allocRunner) waitUntil(cond func() bool) waitResult {
	for {
		if cond() {
			return waitMet
		}
		select {
		case <-ar.changed:
		case <-ar.stopCh:
			return waitStopped
		case <-ar.ctx.Done():
			return waitCancelled
		}
	}
}

func (ar *allocRunner) byLifecycle(lc lifecycle, sidecar ...bool) []*taskRunner {
	var out []*taskRunner
	for _, t := range ar.tasks {
		if t.lc == lc && (len(sidecar) == 0 || t.sidecar == sidecar[0]) {
			out = append(out, t)
		}
	}
	return out
}

func allDone(ts []*taskRunner) func() bool {
	return func() bool {
		for _, t := range ts {
			select {
			case <-t.done:
			default:
				return false
			}
		}
		return true
	}
}

func allStarted(ts []*taskRunner) func() bool {
	return func() bool {
		for _, t := range ts {
			select {
			case <-t.started:
			default:
				return false
			}
		}
		return true
	}
}

// lifecycle runs the tasks in order. It returns false when the client
// shut down before the allocation finished.
func (ar *allocRunner) lifecycle() bool {
	pre := ar.byLifecycle(lcPrestart)
	preBlocking := ar.byLifecycle(lcPrestart, false)
	mains := ar.byLifecycle(lcMain)
	post := ar.byLifecycle(lcPoststart)

	for _, t := range pre {
		t.start()
	}
	switch ar.waitUntil(allDone(preBlocking)) {
	case waitCancelled:
		return false
	case waitStopped:
		return ar.stopAll()
	}
	for _, t := range preBlocking {
		if t.failed() {
			ar.killAll(killRequest{event: eventSiblingFailed(ar.c.now(), t.name), reason: "prestart task " + t.name + " failed"})
			return ar.runPoststop()
		}
	}

	for _, t := range mains {
		t.start()
	}
	switch ar.waitUntil(allStarted(mains)) {
	case waitCancelled:
		return false
	case waitStopped:
		return ar.stopAll()
	}
	ar.registerGroupServices()
	for _, t := range post {
		t.start()
	}

	// Watch the main tasks (and non-sidecar poststart tasks): one that
	// fails for good takes its siblings down, and so does a dead leader.
	handled := map[*taskRunner]bool{}
	watched := append(slices.Clone(mains), ar.byLifecycle(lcPoststart, false)...)
	for {
		res := ar.waitUntil(func() bool {
			for _, t := range watched {
				if !handled[t] && isClosed(t.done) {
					return true
				}
			}
			return allDone(mains)()
		})
		switch res {
		case waitCancelled:
			return false
		case waitStopped:
			return ar.stopAll()
		}
		for _, t := range watched {
			if handled[t] || !isClosed(t.done) {
				continue
			}
			handled[t] = true
			switch {
			case t.failed():
				ar.killAll(killRequest{event: eventSiblingFailed(ar.c.now(), t.name), reason: "task " + t.name + " failed"})
			case t.leader:
				ar.killAll(killRequest{event: eventLeaderDead(ar.c.now()), reason: "leader task " + t.name + " is dead"})
			}
		}
		if allDone(mains)() {
			break
		}
	}
	ar.deregisterGroupServices()
	// The main work is over: sidecars and poststart tasks go.
	rest := append(ar.byLifecycle(lcPrestart, true), post...)
	ar.killTasks(rest, killRequest{reason: "main tasks finished"})
	return ar.runPoststop()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// stopAll kills the allocation on the servers' request: group services
// leave first, then the group's shutdown delay passes, then the leader,
// the other tasks, the sidecars; then poststop tasks run.
func (ar *allocRunner) stopAll() bool {
	ar.deregisterGroupServices()
	ar.mu.Lock()
	noDelay := ar.noDelay
	ar.mu.Unlock()
	if tg := ar.group(); tg != nil && tg.ShutdownDelay != nil && *tg.ShutdownDelay > 0 && !noDelay {
		if !ar.c.sleep(ar.ctx, *tg.ShutdownDelay, nil) {
			return false
		}
	}
	k := killRequest{reason: "allocation stopped", noDelay: noDelay}
	var leaders, others, sidecars []*taskRunner
	for _, t := range ar.tasks {
		switch {
		case t.lc == lcPoststop:
		case t.leader:
			leaders = append(leaders, t)
		case t.sidecar:
			sidecars = append(sidecars, t)
		default:
			others = append(others, t)
		}
	}
	ar.killTasks(leaders, k)
	ar.killTasks(others, k)
	ar.killTasks(sidecars, k)
	if ar.ctx.Err() != nil {
		return false
	}
	return ar.runPoststop()
}

// killAll kills every task but the poststop ones, sidecars last.
func (ar *allocRunner) killAll(k killRequest) {
	var first, sidecars []*taskRunner
	for _, t := range ar.tasks {
		switch {
		case t.lc == lcPoststop:
		case t.sidecar:
			sidecars = append(sidecars, t)
		default:
			first = append(first, t)
		}
	}
	ar.killTasks(first, k)
	ar.killTasks(sidecars, killRequest{reason: k.reason, noDelay: k.noDelay})
}

// killTasks kills ts concurrently and waits for them (or for shutdown).
func (ar *allocRunner) killTasks(ts []*taskRunner, k killRequest) {
	for _, t := range ts {
		if isClosed(t.done) {
			continue
		}
		kk := k
		if kk.event != nil {
			ev := *kk.event
			kk.event = &ev
		}
		t.requestKill(kk)
	}
	for _, t := range ts {
		select {
		case <-t.done:
		case <-ar.ctx.Done():
			return
		}
	}
}

// runPoststop runs the poststop tasks to completion.
func (ar *allocRunner) runPoststop() bool {
	post := ar.byLifecycle(lcPoststop)
	for _, t := range post {
		t.start()
	}
	for _, t := range post {
		select {
		case <-t.done:
		case <-ar.ctx.Done():
			return false
		}
	}
	return true
}

// registerGroupServices registers the group's services once the main
// tasks run.
func (ar *allocRunner) registerGroupServices() {
	s, tg := ar.c.services, ar.group()
	if s == nil || tg == nil || len(tg.Services) == 0 {
		return
	}
	ar.mu.Lock()
	ar.groupRegistered = true
	ar.mu.Unlock()
	var env map[string]string
	if len(ar.tasks) > 0 {
		env = ar.envFor(ar.tasks[0].currentTask())
	}
	if err := s.RegisterGroup(ar.ctx, ar.alloc(), env, ar.dir.Shared()); err != nil {
		ar.c.log.Warn("group service registration failed", "alloc", ar.id, "error", err)
	}
}

func (ar *allocRunner) deregisterGroupServices() {
	ar.mu.Lock()
	ar.groupRegistered = false
	ar.mu.Unlock()
	if s, tg := ar.c.services, ar.group(); s != nil && tg != nil && len(tg.Services) > 0 {
		_ = s.DeregisterAlloc(ar.id)
	}
}

// stop asks the allocation to stop (the servers' desired status).
func (ar *allocRunner) stop(noDelay bool) {
	ar.mu.Lock()
	first := !ar.stopping
	ar.stopping = true
	ar.noDelay = ar.noDelay || noDelay
	ar.mu.Unlock()
	ar.stopOnce.Do(func() { close(ar.stopCh) })
	if first {
		ar.persist()
	}
}

// update takes a new version of the allocation from the servers: an
// in-place update (new job version) is used by each task from its next
// start on and re-renders templates; a stop kills the allocation.
func (ar *allocRunner) update(a *state.Allocation) {
	ar.mu.Lock()
	ar.a = a
	ar.mu.Unlock()
	ar.persist()
	if a.ServerTerminal() {
		ar.stop(noShutdownDelay(a))
		return
	}
	tg := ar.group()
	if tg == nil {
		return
	}
	ar.watchHealth()
	for _, tr := range ar.tasks {
		t := tg.LookupTask(tr.name)
		if t == nil {
			continue
		}
		tr.updateTask(t)
		if !isClosed(tr.started) || isClosed(tr.done) {
			continue
		}
		// The running task keeps running; what it shows the world follows
		// the new version: its templates and its services.
		if len(t.Templates) > 0 {
			ar.goTracked(func() { ar.rerender(tr, t) })
		}
		if ar.c.services != nil && len(t.Services) > 0 && tr.taskState() == state.TaskStateRunning {
			ar.goTracked(func() {
				if err := ar.c.services.RegisterTask(ar.ctx, ar.alloc(), t, ar.envFor(t), ar.dir.TaskDir(t.Name)); err != nil {
					tr.emit(eventDriverMessage(ar.c.now(), "Service registration failed: "+err.Error()))
				}
			})
		}
	}
	ar.mu.Lock()
	group := ar.groupRegistered
	ar.mu.Unlock()
	if group {
		ar.goTracked(ar.registerGroupServices)
	}
}

// goTracked runs fn in a goroutine the client waits for on Shutdown. The
// caller runs in a goroutine the client already counts (the watcher or an
// alloc runner), so the count is never zero here.
func (ar *allocRunner) goTracked(fn func()) {
	ar.c.wg.Add(1)
	go func() {
		defer ar.c.wg.Done()
		fn()
	}()
}

// rerender renders a running task's templates again after an update and
// applies their change modes.
func (ar *allocRunner) rerender(tr *taskRunner, t *state.Task) {
	var r taskinput.Rerenderer
	r.Now = ar.c.now
	in := ar.taskInput(t, ar.envFor(t))
	if _, err := r.Rerender(ar.ctx, in, tr, tr.emit); err != nil && ar.ctx.Err() == nil {
		tr.emit(eventSetupFailure(ar.c.now(), err, false))
	}
}

// terminal reports whether every task has finished.
func (ar *allocRunner) terminal() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return !ar.terminalAt.IsZero()
}

// taskChanged reports the tasks' state (and persists it when durable),
// and wakes the lifecycle.
func (ar *allocRunner) taskChanged(durable bool) {
	if durable {
		ar.persist()
	}
	ar.report()
	ar.kick()
}

// kick wakes the lifecycle and the health watcher to look at the tasks
// again.
func (ar *allocRunner) kick() {
	for _, ch := range []chan struct{}{ar.changed, ar.healthKick} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// persist writes the runner's state to the data dir.
func (ar *allocRunner) persist() {
	ar.persistMu.Lock()
	defer ar.persistMu.Unlock()
	if ar.ctx.Err() != nil && !ar.c.destroying() {
		// Shutting down: what is on disk is what the next client must
		// find; a task runner cut short must not overwrite it.
		return
	}
	ar.mu.Lock()
	if ar.destroyed {
		ar.mu.Unlock()
		return
	}
	a := ar.a
	r := &persistedRun{Stopping: ar.stopping,
		Failed: ar.failed, Description: ar.desc, TerminalAt: ar.terminalAt, WorkloadUID: ar.uid}
	ar.mu.Unlock()
	rec := &journalRecord{ID: ar.id, Run: r}
	if a != ar.persisted {
		rec.Alloc = a
	}
	buf := runBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= runBufMax {
			runBufs.Put(buf)
		}
	}()
	if !ar.encodeRun(rec, buf) {
		r.Tasks = make(map[string]*persistedTask, len(ar.tasks))
		for _, t := range ar.tasks {
			r.Tasks[t.name] = t.snapshot()
		}
	}
	if err := ar.c.store.journalPut(rec); err != nil {
		ar.c.log.Warn("persist allocation state", "alloc", ar.id, "error", err)
		return
	}
	ar.persisted = a
}

// encodeRun encodes rec.Run, its Tasks read from the task runners, into
// rec.runJSON (journal_enc.go): each task's state is written under its
// runner's lock, without the copies of a snapshot (a task state, its
// events, its handle, per task and per put), and outside the journal's
// lock, which the puts of a thousand runners share. It reports false
// when the appenders cannot write the record (journalShapesKnown). buf
// is the buffer to encode into, kept for the next put (runBufs).
func (ar *allocRunner) encodeRun(rec *journalRecord, buf *[]byte) bool {
	if !journalShapesKnown() {
		return false
	}
	b := append((*buf)[:0], `{"Tasks":{`...)
	var err error
	for i, t := range ar.tasks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(state.AppendJSONString(b, t.name), ':')
		t.mu.Lock()
		b, err = appendTaskParts(b, t.ts, t.handle, t.tracker.window())
		t.mu.Unlock()
		if err != nil {
			return false
		}
	}
	b = append(b, '}')
	if b, err = appendRunRest(b, rec.Run); err != nil {
		return false
	}
	*buf, rec.runJSON = b, b
	return true
}

// runBufs are the buffers of encodeRun: a runner's state is encoded a few
// times in its life, and a buffer per runner would be a thousand idle
// buffers on a busy client.
var runBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// runBufMax bounds the buffers kept in runBufs.
const runBufMax = 64 << 10

// status computes the allocation's client status from its tasks.
func (ar *allocRunner) status() (status, desc string, states map[string]*state.TaskState) {
	states = make(map[string]*state.TaskState, len(ar.tasks))
	anyRunning, allDead, anyFailed := false, true, false
	for _, t := range ar.tasks {
		ts := t.stateCopy()
		states[t.name] = ts
		switch ts.State {
		case state.TaskStateRunning:
			anyRunning, allDead = true, false
		case state.TaskStatePending:
			allDead = false
		}
		if ts.Failed && !t.sidecar {
			anyFailed = true
		}
	}
	ar.mu.Lock()
	failed, d := ar.failed, ar.desc
	ar.mu.Unlock()
	switch {
	case failed:
		return state.AllocClientStatusFailed, d, states
	case !allDead && anyRunning:
		return state.AllocClientStatusRunning, "Tasks are running", states
	case !allDead:
		return state.AllocClientStatusPending, "No tasks have started", states
	case anyFailed:
		return state.AllocClientStatusFailed, "Failed tasks", states
	}
	return state.AllocClientStatusComplete, "All tasks have completed", states
}

// report sends the allocation's status to the servers (batched): the
// updater reads it (clientUpdate) when the batch goes, so the changes of
// one batch window cost one report.
func (ar *allocRunner) report() { ar.c.updater.mark(ar) }

// clientUpdate is the allocation's status as the servers are told it.
func (ar *allocRunner) clientUpdate() *state.AllocClientUpdate {
	st, desc, states := ar.status()
	ar.mu.Lock()
	health := ar.health
	ar.mu.Unlock()
	return &state.AllocClientUpdate{ID: ar.id, ClientStatus: st, ClientDescription: desc, TaskStates: states, DeploymentStatus: health}
}

// info is a read-only view for the agent's HTTP endpoints.
func (ar *allocRunner) info() *state.Allocation {
	orig := ar.alloc()
	a := orig.CopySkipJob()
	a.Job = orig.Job // shared and never changed in place
	st, desc, states := ar.status()
	a.ClientStatus, a.ClientDescription, a.TaskStates = st, desc, states
	return a
}

// destroy stops the allocation without delay, waits for its tasks, and
// removes its directory and state.
func (ar *allocRunner) destroy() {
	ar.stop(true)
	select {
	case <-ar.done:
	case <-ar.ctx.Done():
		return
	}
	if s := ar.c.services; s != nil {
		_ = s.DeregisterAlloc(ar.id)
	}
	ar.persistMu.Lock()
	ar.mu.Lock()
	ar.destroyed = true
	ar.mu.Unlock()
	if err := ar.c.store.remove(ar.id); err != nil {
		ar.c.log.Warn("remove alloc state", "alloc", ar.id, "error", err)
	}
	ar.persistMu.Unlock()
	ar.teardownNetwork()
	release := ar.killUser()
	ar.dirsMu.Lock()
	ar.dirsGone = true
	if err := ar.dir.destroy(); err != nil {
		ar.c.log.Warn("remove alloc dir", "alloc", ar.id, "error", err)
	}
	ar.dirsMu.Unlock()
	if release {
		ar.releaseUser()
	}
}

// terminalAtTime is when every task had finished (zero while running).
func (ar *allocRunner) terminalAtTime() time.Time {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.terminalAt
}
