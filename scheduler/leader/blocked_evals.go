package leader

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// DefaultUnblockCoalesce is the least time between two passes over the
// nodes, or over the allocations, looking for capacity changes.
const DefaultUnblockCoalesce = 50 * time.Millisecond

// BlockedConfig tunes BlockedEvals. Every zero field means its default.
type BlockedConfig struct {
	// UnblockCoalesce is the least time between two passes over the nodes
	// table, or over the allocations table, looking for capacity changes,
	// so a burst of registrations or completions unblocks once rather
	// than once per write (DefaultUnblockCoalesce).
	UnblockCoalesce time.Duration
}

func (c BlockedConfig) withDefaults() BlockedConfig {
	c.UnblockCoalesce = cmp.Or(c.UnblockCoalesce, DefaultUnblockCoalesce)
	return c
}

// BlockedEvals holds evaluations that could not place everything until
// the cluster's capacity changes in a way that may let them, then hands
// them back to the broker.
//
// A blocked evaluation records, per computed node class, whether nodes of
// that class were eligible for the job (ClassEligibility), or that some
// constraint escaped class-based reasoning (EscapedComputedClass). A
// capacity change on a node of class C at index I (the node registered, or
// became ready or eligible; an allocation on it stopped, completed or
// failed) unblocks every evaluation that saw the state before I
// (SnapshotIndex < I) and for which C is eligible or was never seen;
// escaped evaluations unblock on any change. A change that happened before
// an evaluation was blocked but after its snapshot unblocks it at once, so
// no change is missed between the scheduler's snapshot and Block.
//
// One blocked evaluation per job: a newer one replaces an older one, which
// is written as cancelled; a job's blocked evaluation is also untracked
// and cancelled once a later evaluation of the job placed everything.
//
// Capacity changes are found by watching the nodes and allocations tables
// of the store (watch channels on their index rows, not polling), each
// read at most once per UnblockCoalesce; the allocations table is read only
// while some evaluation is blocked.
type BlockedEvals struct {
	cfg    BlockedConfig
	store  *store.Store
	broker *EvalBroker
	raft   Raft
	log    *slog.Logger
	now    func() time.Time
	run    runner

	mu       sync.Mutex
	enabled  bool
	captured map[string]*state.Evaluation
	jobs     map[jobKey]string
	// unblocked holds, per class, the index of its latest capacity
	// change; anyUnblocked the latest of all.
	unblocked    map[string]uint64
	anyUnblocked uint64
	// quotaUnblocked holds, per quota, the index at which its usage
	// last fell (blocked_evals_quota.go).
	quotaUnblocked map[string]uint64
	// quotaPassed is the quota tables' index of the watcher's last pass.
	quotaPassed uint64
	duplicates  []*state.Evaluation
	// kick wakes the cancel writer; trackedCh is closed when the first
	// evaluation is blocked, to wake the capacity watcher.
	kick      chan struct{}
	trackedCh chan struct{}
	// changed is closed and replaced whenever what is tracked or the
	// recorded capacity changes, for whoever waits on blocked evals.
	changed chan struct{}
}

// NewBlockedEvals returns stopped blocked evals that unblock into broker.
func NewBlockedEvals(cfg BlockedConfig, store *store.Store, broker *EvalBroker, raft Raft, log *slog.Logger, now func() time.Time) *BlockedEvals {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	b := &BlockedEvals{cfg: cfg.withDefaults(), store: store, broker: broker, raft: raft, log: log, now: now}
	b.resetLocked()
	return b
}

func (b *BlockedEvals) resetLocked() {
	b.captured = map[string]*state.Evaluation{}
	b.jobs = map[jobKey]string{}
	b.unblocked = map[string]uint64{}
	b.anyUnblocked = 0
	b.quotaUnblocked = map[string]uint64{}
	b.duplicates = nil
	b.kick = make(chan struct{}, 1)
	b.trackedCh = make(chan struct{})
	b.notifyLocked()
}

// notifyLocked wakes whoever waits on a change.
func (b *BlockedEvals) notifyLocked() {
	if b.changed != nil {
		close(b.changed)
	}
	b.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change of what is tracked
// or of the capacity changes recorded.
func (b *BlockedEvals) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Name implements Service.
func (b *BlockedEvals) Name() string { return "blocked-evals" }

// Start enables tracking, the capacity watcher and the writer of
// cancelled duplicates.
func (b *BlockedEvals) Start(ctx context.Context) error {
	b.mu.Lock()
	b.resetLocked()
	b.enabled = true
	kick := b.kick
	b.mu.Unlock()
	return b.run.start(ctx, b.watchCapacity, func(ctx context.Context) { b.cancelDuplicates(ctx, kick) })
}

// Stop disables tracking and drops what is tracked (the next leader
// restores it from state).
func (b *BlockedEvals) Stop() {
	b.mu.Lock()
	b.enabled = false
	b.resetLocked()
	b.mu.Unlock()
	b.run.stop()
}

// Block tracks a blocked evaluation, or hands it straight back to the
// broker when a capacity change it did not see already happened.
func (b *BlockedEvals) Block(eval *state.Evaluation) {
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	key := jobKeyOf(eval)
	if id, ok := b.jobs[key]; ok && id != eval.ID {
		old := b.captured[id]
		if eval.CreateIndex < old.CreateIndex {
			// An older evaluation of a job that has a newer one blocked.
			b.duplicateLocked(eval)
			b.mu.Unlock()
			return
		}
		b.removeLocked(id)
		b.duplicateLocked(old)
	}
	if b.missedLocked(eval) {
		b.removeLocked(eval.ID)
		b.mu.Unlock()
		b.broker.Enqueue(eval)
		return
	}
	if len(b.captured) == 0 {
		close(b.trackedCh)
	}
	b.captured[eval.ID] = eval
	b.jobs[key] = eval.ID
	b.notifyLocked()
	b.mu.Unlock()
}

// missedLocked reports whether a capacity change that eval may use
// happened after its snapshot.
func (b *BlockedEvals) missedLocked(eval *state.Evaluation) bool {
	if eval.QuotaLimitReached != "" {
		return b.quotaUnblocked[eval.QuotaLimitReached] > eval.SnapshotIndex
	}
	if eval.EscapedComputedClass {
		return b.anyUnblocked > eval.SnapshotIndex
	}
	for class, index := range b.unblocked {
		if index > eval.SnapshotIndex && mayUse(eval, class) {
			return true
		}
	}
	return false
}

// mayUse reports whether capacity on class may help eval: the class was
// eligible, or the scheduler never saw it, or it escaped classes.
func mayUse(eval *state.Evaluation, class string) bool {
	if eval.EscapedComputedClass {
		return true
	}
	eligible, seen := eval.ClassEligibility[class]
	return !seen || eligible
}

// Unblock records a capacity change on nodes of class at index and sends
// the evaluations it may help back to the broker.
func (b *BlockedEvals) Unblock(class string, index uint64) {
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	b.unblocked[class] = max(b.unblocked[class], index)
	b.anyUnblocked = max(b.anyUnblocked, index)
	b.notifyLocked()
	var out []*state.Evaluation
	for id, e := range b.captured {
		if e.SnapshotIndex < index && e.QuotaLimitReached == "" && mayUse(e, class) {
			out = append(out, e)
			b.removeLocked(id)
		}
	}
	b.mu.Unlock()
	b.broker.EnqueueAll(out)
}

// Untrack drops a job's blocked evaluation written before index, and
// cancels it: a later evaluation of the job placed everything.
func (b *BlockedEvals) Untrack(namespace, jobID string, before uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.jobs[jobKey{namespace, jobID}]
	if !ok || b.captured[id].ModifyIndex >= before {
		return
	}
	e := b.captured[id]
	b.removeLocked(id)
	b.duplicateLocked(e)
}

// Remove drops an evaluation, e.g. one that became terminal.
func (b *BlockedEvals) Remove(evalID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(evalID)
}

func (b *BlockedEvals) removeLocked(evalID string) {
	e, ok := b.captured[evalID]
	if !ok {
		return
	}
	delete(b.captured, evalID)
	b.notifyLocked()
	key := jobKeyOf(e)
	if b.jobs[key] == evalID {
		delete(b.jobs, key)
	}
	if len(b.captured) == 0 {
		b.trackedCh = make(chan struct{})
	}
}

// duplicateLocked schedules eval to be written as cancelled.
func (b *BlockedEvals) duplicateLocked(eval *state.Evaluation) {
	b.duplicates = append(b.duplicates, eval)
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// cancelDuplicates writes superseded blocked evaluations as cancelled.
func (b *BlockedEvals) cancelDuplicates(ctx context.Context, kick <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		b.mu.Lock()
		dups := b.duplicates
		b.duplicates = nil
		b.mu.Unlock()
		if len(dups) == 0 {
			continue
		}
		now := b.now().UnixNano()
		out := make([]*state.Evaluation, len(dups))
		for i, e := range dups {
			c := e.Copy()
			c.Status = state.EvalStatusCancelled
			c.StatusDescription = "canceled: superseded by a newer evaluation of the job"
			c.ModifyTime = now
			out[i] = c
		}
		if _, err := retryWrite(ctx, b.raft, b.log, "cancel blocked evaluations", store.EvalUpdateRequestType, &store.EvalUpdateRequest{Evals: out}); err != nil {
			b.log.Error("could not cancel superseded blocked evaluations", "count", len(out), "error", err)
		}
	}
}

// BlockedStats counts the blocked evaluations.
type BlockedStats struct {
	TotalBlocked int
	// TotalEscaped evaluations unblock on any capacity change.
	TotalEscaped int
}

// Stats returns the counters.
func (b *BlockedEvals) Stats() BlockedStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := BlockedStats{TotalBlocked: len(b.captured)}
	for _, e := range b.captured {
		if e.EscapedComputedClass {
			st.TotalEscaped++
		}
	}
	return st
}

// Tracked reports whether an evaluation is blocked here.
func (b *BlockedEvals) Tracked(evalID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.captured[evalID]
	return ok
}

// trackedChan returns a channel that is closed once some evaluation is
// tracked (already closed when one is), and whether one is.
func (b *BlockedEvals) trackedChan() (ch <-chan struct{}, any bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.trackedCh, len(b.captured) > 0
}
