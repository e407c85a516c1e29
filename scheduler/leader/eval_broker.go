package leader

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Broker defaults.
const (
	DefaultNackDelay           = 1 * time.Second
	DefaultSubsequentNackDelay = 20 * time.Second
	DefaultUnackedTimeout      = 60 * time.Second
	DefaultDeliveryLimit       = 3
	DefaultFailedFollowUpDelay = 1 * time.Minute
)

// BrokerConfig tunes the EvalBroker. Every zero field means its default.
type BrokerConfig struct {
	// NackDelay is how long an evaluation waits after its first nack
	// before it is delivered again (DefaultNackDelay).
	NackDelay time.Duration
	// SubsequentNackDelay is the wait after later nacks: an evaluation
	// that failed twice is likely to fail again soon
	// (DefaultSubsequentNackDelay).
	SubsequentNackDelay time.Duration
	// UnackedTimeout is how long a delivered evaluation may stay neither
	// acked nor nacked before the broker nacks it for the worker, which
	// has probably hung (DefaultUnackedTimeout).
	UnackedTimeout time.Duration
	// DeliveryLimit is how many times an evaluation is delivered before it
	// is marked failed (DefaultDeliveryLimit).
	DeliveryLimit int
	// FailedFollowUpDelay is the least wait of the follow-up evaluation
	// created for a failed one; a random share of up to the same again is
	// added, so the follow-ups of many failures spread out
	// (DefaultFailedFollowUpDelay).
	FailedFollowUpDelay time.Duration
	// AgingStep is how long an evaluation waits for each point of aging
	// in the queue's order (scheduler.AgingStep; docs/queue.md).
	AgingStep time.Duration
}

func (c BrokerConfig) withDefaults() BrokerConfig {
	c.NackDelay = cmp.Or(c.NackDelay, DefaultNackDelay)
	c.SubsequentNackDelay = cmp.Or(c.SubsequentNackDelay, DefaultSubsequentNackDelay)
	c.UnackedTimeout = cmp.Or(c.UnackedTimeout, DefaultUnackedTimeout)
	c.DeliveryLimit = cmp.Or(c.DeliveryLimit, DefaultDeliveryLimit)
	c.FailedFollowUpDelay = cmp.Or(c.FailedFollowUpDelay, DefaultFailedFollowUpDelay)
	c.AgingStep = cmp.Or(c.AgingStep, scheduler.AgingStep)
	return c
}

// Errors of the broker's Ack, Nack and OutstandingReset.
var (
	// ErrNotOutstanding: the evaluation is not delivered (it was acked,
	// nacked, or redelivered to someone else since).
	ErrNotOutstanding = errors.New("evaluation is not outstanding")
	// ErrTokenMismatch: the token is not the one of the evaluation's
	// current delivery.
	ErrTokenMismatch = errors.New("evaluation token does not match")
)

// EvalBroker hands evaluations to workers, on the leader only.
//
// Delivery contract: at least once. Every evaluation enqueued is delivered
// to some worker's Dequeue, with a token, until it is acked with that
// token. A worker that fails nacks it, and one that neither acks nor nacks
// within UnackedTimeout is taken to have failed; either way the evaluation
// is delivered again after NackDelay (SubsequentNackDelay from the second
// nack on). After DeliveryLimit deliveries without an ack the broker stops:
// it marks the evaluation failed in state and creates a follow-up
// evaluation (TriggeredBy "failed-follow-up") that waits
// FailedFollowUpDelay plus jitter, so a poisonous evaluation cannot occupy
// workers forever and its job is still looked at again later. An
// evaluation may therefore be processed more than once (a slow worker may
// still finish after its delivery timed out): schedulers are idempotent
// against state, and the plan applier refuses a plan whose token is no
// longer the outstanding one.
//
// Order: evaluations are delivered by priority (highest first), then in
// creation order, across the scheduler types a worker asks for.
//
// Per job, at most one evaluation is in flight (ready or delivered). Later
// evaluations of the same job wait; when the in-flight one is acked, the
// newest waiting one goes next and the older waiting ones are cancelled
// (written as "canceled"): a scheduler reconciles the whole job against
// the latest state, so the newest evaluation does all their work. An
// evaluation enqueued again while delivered (an unblocked evaluation being
// re-blocked) is delivered again after its ack.
//
// Evaluations with a WaitUntil in the future, or a Wait, are held until
// due. The broker is empty while stopped; Start enables it and the
// runtime's feed restores it from the non-terminal evaluations in state.
type EvalBroker struct {
	cfg   BrokerConfig
	raft  Raft
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	run   runner

	mu      sync.Mutex
	enabled bool
	// paused holds deliveries back (eval_broker_pause.go).
	paused bool
	// known holds every evaluation the broker tracks, with the number of
	// times it was delivered.
	known map[string]int
	// inflight maps a job to its evaluation that is ready, delivered, or
	// waiting out a nack delay.
	inflight map[jobKey]string
	// waiting holds the later evaluations of jobs with one in flight.
	waiting map[jobKey][]*state.Evaluation
	// ready holds the ready evaluations by type, those of small jobs
	// apart (eval_broker_small.go).
	ready map[readyKey]*evalHeap
	unack map[string]*delivery
	// requeue holds evaluations enqueued again while delivered.
	requeue map[string]*state.Evaluation
	// delayed holds evaluations until their time; delayTimer fires at the
	// earliest.
	delayed    *evalHeap
	delayTimer *time.Timer
	nackTimers map[string]*time.Timer
	// failed and cancel are written to state by the reaper.
	failed  []*state.Evaluation
	cancel  []*state.Evaluation
	reapCh  chan struct{}
	readyCh chan struct{}
	// smallReadyCh wakes the small-job workers' Dequeues: not closed
	// when a large job's evaluation becomes ready (eval_broker_small.go).
	smallReadyCh chan struct{}
	seq          uint64
	// enqueuedAt records when each ready evaluation became ready.
	enqueuedAt map[string]time.Time
	// shares gives the weighted share of namespaces
	// (eval_broker_order.go).
	shares func(namespaces []string) map[string]float64
	// small tells an evaluation of a small job (eval_broker_small.go).
	small func(*state.Evaluation) bool
}

// delivery is one outstanding delivery of an evaluation.
type delivery struct {
	eval  *state.Evaluation
	token string
	timer *time.Timer
}

// NewEvalBroker returns a stopped broker. raft writes failed and cancelled
// evaluations.
func NewEvalBroker(cfg BrokerConfig, raft Raft, log *slog.Logger, now func() time.Time, newID func() string) *EvalBroker {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = state.NewID
	}
	b := &EvalBroker{cfg: cfg.withDefaults(), raft: raft, log: log, now: now, newID: newID}
	b.resetLocked()
	return b
}

// resetLocked empties the broker, stopping its timers.
func (b *EvalBroker) resetLocked() {
	for _, d := range b.unack {
		d.timer.Stop()
	}
	for _, t := range b.nackTimers {
		t.Stop()
	}
	if b.delayTimer != nil {
		b.delayTimer.Stop()
		b.delayTimer = nil
	}
	b.known = map[string]int{}
	b.inflight = map[jobKey]string{}
	b.waiting = map[jobKey][]*state.Evaluation{}
	b.ready = map[readyKey]*evalHeap{}
	b.unack = map[string]*delivery{}
	b.requeue = map[string]*state.Evaluation{}
	b.delayed = &evalHeap{less: dueBefore}
	b.nackTimers = map[string]*time.Timer{}
	b.failed, b.cancel = nil, nil
	b.reapCh = make(chan struct{}, 1)
	b.enqueuedAt = map[string]time.Time{}
	b.signalLocked()
}

// Name implements Service.
func (b *EvalBroker) Name() string { return "eval-broker" }

// Start enables the broker and its reaper, which writes failed and
// cancelled evaluations.
func (b *EvalBroker) Start(ctx context.Context) error {
	b.mu.Lock()
	b.resetLocked()
	b.enabled = true
	b.mu.Unlock()
	return b.run.start(ctx, b.reap)
}

// Stop disables the broker: waiting Dequeues return ErrNotLeader and
// everything tracked is dropped (the next leader restores it from state).
func (b *EvalBroker) Stop() {
	b.mu.Lock()
	b.enabled = false
	b.resetLocked()
	b.mu.Unlock()
	b.run.stop()
}

// Enabled reports whether the broker is running.
func (b *EvalBroker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// signalLocked wakes every waiting Dequeue.
func (b *EvalBroker) signalLocked() {
	b.signalGeneralLocked()
	if b.smallReadyCh != nil {
		close(b.smallReadyCh)
	}
	b.smallReadyCh = make(chan struct{})
}

// signalGeneralLocked wakes the waiting Dequeues of the general workers
// only.
func (b *EvalBroker) signalGeneralLocked() {
	if b.readyCh != nil {
		close(b.readyCh)
	}
	b.readyCh = make(chan struct{})
}

// Enqueue adds an evaluation. An evaluation the broker already tracks is
// ignored, except that one enqueued again while delivered is delivered
// again after its ack. Nothing happens while the broker is stopped.
func (b *EvalBroker) Enqueue(eval *state.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueueLocked(eval)
}

// enqueueLocked is Enqueue.
func (b *EvalBroker) enqueueLocked(eval *state.Evaluation) {
	if !b.enabled {
		return
	}
	if _, ok := b.known[eval.ID]; ok {
		if _, delivered := b.unack[eval.ID]; delivered {
			b.requeue[eval.ID] = eval
		}
		return
	}
	b.known[eval.ID] = 0
	if due := b.dueTime(eval); due.After(b.now()) {
		b.seq++
		heap.Push(b.delayed, &heapItem{eval: eval, seq: b.seq, due: due})
		b.armDelayLocked()
		return
	}
	b.enqueueJobLocked(eval)
}

// dueTime is when a delayed evaluation becomes ready: WaitUntil, or Wait
// from now. Zero means now.
func (b *EvalBroker) dueTime(eval *state.Evaluation) time.Time {
	if !eval.WaitUntil.IsZero() {
		return eval.WaitUntil
	}
	if eval.Wait > 0 {
		return b.now().Add(eval.Wait)
	}
	return time.Time{}
}

// enqueueJobLocked makes eval ready, or waiting when its job has one in
// flight.
func (b *EvalBroker) enqueueJobLocked(eval *state.Evaluation) {
	key := jobKeyOf(eval)
	if id, busy := b.inflight[key]; busy && id != eval.ID {
		b.waiting[key] = append(b.waiting[key], eval)
		return
	}
	b.inflight[key] = eval.ID
	b.pushReadyLocked(eval)
}

// pushReadyLocked puts eval in its type's ready queue (of small jobs or
// not).
func (b *EvalBroker) pushReadyLocked(eval *state.Evaluation) {
	key := readyKey{typ: eval.Type, small: b.small != nil && b.small(eval)}
	q := b.ready[key]
	if q == nil {
		q = &evalHeap{less: readyBefore}
		b.ready[key] = q
	}
	b.seq++
	heap.Push(q, &heapItem{eval: eval, seq: b.seq, aged: b.effectivePriority(eval, b.now())})
	b.enqueuedAt[eval.ID] = b.now()
	if key.small {
		b.signalLocked()
	} else {
		b.signalGeneralLocked() // nothing for the small-job workers
	}
}

// armDelayLocked sets the delay timer to the earliest delayed evaluation.
func (b *EvalBroker) armDelayLocked() {
	if b.delayTimer != nil {
		b.delayTimer.Stop()
		b.delayTimer = nil
	}
	if b.delayed.Len() == 0 {
		return
	}
	wait := b.delayed.items[0].due.Sub(b.now())
	b.delayTimer = time.AfterFunc(max(wait, 0), b.promoteDelayed)
}

// promoteDelayed moves delayed evaluations that are due to the ready
// queues.
func (b *EvalBroker) promoteDelayed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	now := b.now()
	for b.delayed.Len() > 0 && !b.delayed.items[0].due.After(now) {
		it := heap.Pop(b.delayed).(*heapItem)
		b.enqueueJobLocked(it.eval)
	}
	b.armDelayLocked()
}

// Dequeue returns the next evaluation of one of types, with the token of
// this delivery, waiting for one up to timeout (zero: until ctx ends). It
// returns a nil evaluation and no error when the timeout passes, ctx's
// error when ctx ends, and ErrNotLeader when the broker is stopped.
func (b *EvalBroker) Dequeue(ctx context.Context, types []string, timeout time.Duration) (*state.Evaluation, string, error) {
	return b.dequeue(ctx, types, timeout, false)
}

// dequeue is Dequeue, of small jobs' evaluations only when smallOnly
// (DequeueSmall).
func (b *EvalBroker) dequeue(ctx context.Context, types []string, timeout time.Duration, smallOnly bool) (*state.Evaluation, string, error) {
	var timeoutCh <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutCh = t.C
	}
	for {
		b.mu.Lock()
		if !b.enabled {
			b.mu.Unlock()
			return nil, "", ErrNotLeader
		}
		if !b.paused {
			if eval, token := b.dequeueLocked(types, smallOnly); eval != nil {
				b.mu.Unlock()
				return eval, token, nil
			}
		}
		ch := b.readyCh
		if smallOnly {
			ch = b.smallReadyCh
		}
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-timeoutCh:
			return nil, "", nil
		}
	}
}

// dequeueLocked pops the best ready evaluation of types (of small jobs
// only when smallOnly) and records its delivery.
func (b *EvalBroker) dequeueLocked(types []string, smallOnly bool) (*state.Evaluation, string) {
	var best *evalHeap
	for _, t := range types {
		for _, small := range [2]bool{true, false} {
			if !small && smallOnly {
				continue
			}
			q := b.ready[readyKey{typ: t, small: small}]
			if q == nil || q.Len() == 0 {
				continue
			}
			b.refreshSharesLocked(q) // eval_broker_order.go
			if best == nil || readyBefore(q.items[0], best.items[0]) {
				best = q
			}
		}
	}
	if best == nil || b.gatedLocked(best.items[0]) || smallOnly && b.outrankedLocked(best.items[0], types) {
		return nil, ""
	}
	eval := heap.Pop(best).(*heapItem).eval
	delete(b.enqueuedAt, eval.ID)
	token := b.newID()
	b.known[eval.ID]++
	d := &delivery{eval: eval, token: token}
	d.timer = time.AfterFunc(b.cfg.UnackedTimeout, func() { b.timeout(eval.ID, token) })
	b.unack[eval.ID] = d
	return eval, token
}

// timeout nacks a delivery that was neither acked nor nacked in time.
func (b *EvalBroker) timeout(evalID, token string) {
	if err := b.Nack(evalID, token); err == nil {
		b.log.Warn("evaluation not acknowledged in time; redelivering", "eval_id", evalID, "timeout", b.cfg.UnackedTimeout)
	}
}

// Outstanding returns the token of an evaluation's current delivery.
func (b *EvalBroker) Outstanding(evalID string) (token string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.unack[evalID]
	if !ok {
		return "", false
	}
	return d.token, true
}

// OutstandingReset restarts the unacked timeout of a delivery, for a
// worker that is still busy with a long evaluation.
func (b *EvalBroker) OutstandingReset(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	d.timer.Reset(b.cfg.UnackedTimeout)
	return nil
}

// deliveryLocked returns the outstanding delivery matching evalID and
// token.
func (b *EvalBroker) deliveryLocked(evalID, token string) (*delivery, error) {
	d, ok := b.unack[evalID]
	if !ok {
		return nil, fmt.Errorf("evaluation %s: %w", evalID, ErrNotOutstanding)
	}
	if d.token != token {
		return nil, fmt.Errorf("evaluation %s: %w", evalID, ErrTokenMismatch)
	}
	return d, nil
}

// Ack ends a delivery successfully: the evaluation leaves the broker, and
// the next evaluation of its job may go.
func (b *EvalBroker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	d.timer.Stop()
	delete(b.unack, evalID)
	delete(b.known, evalID)
	key := jobKeyOf(d.eval)
	delete(b.inflight, key)
	if d.eval.Status == state.EvalStatusBlocked && b.gatedByLocked(d.eval) {
		b.signalLocked() // lifts the gate of lower released evaluations
	}
	if again, ok := b.requeue[evalID]; ok {
		delete(b.requeue, evalID)
		b.known[evalID] = 0
		b.enqueueJobLocked(again)
		return nil
	}
	b.promoteWaitingLocked(key)
	return nil
}

// promoteWaitingLocked sends the newest waiting evaluation of a job and
// cancels the older ones.
func (b *EvalBroker) promoteWaitingLocked(key jobKey) {
	waiting := b.waiting[key]
	delete(b.waiting, key)
	if len(waiting) == 0 {
		return
	}
	newest := 0
	for i, e := range waiting {
		if newerEval(e, waiting[newest]) {
			newest = i
		}
	}
	for i, e := range waiting {
		if i == newest {
			continue
		}
		delete(b.known, e.ID)
		b.cancel = append(b.cancel, e)
	}
	if len(waiting) > 1 {
		b.kickReaperLocked()
	}
	b.inflight[key] = waiting[newest].ID
	b.pushReadyLocked(waiting[newest])
}

// newerEval reports whether a was written after b.
func newerEval(a, b *state.Evaluation) bool {
	if a.ModifyIndex != b.ModifyIndex {
		return a.ModifyIndex > b.ModifyIndex
	}
	if a.CreateIndex != b.CreateIndex {
		return a.CreateIndex > b.CreateIndex
	}
	return a.ID > b.ID
}

// Nack ends a delivery unsuccessfully: the evaluation is delivered again
// after the nack delay, or, at the delivery limit, marked failed.
func (b *EvalBroker) Nack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.deliveryLocked(evalID, token)
	if err != nil {
		return err
	}
	d.timer.Stop()
	delete(b.unack, evalID)
	eval := d.eval
	if again, ok := b.requeue[evalID]; ok {
		delete(b.requeue, evalID)
		eval = again
	}
	deliveries := b.known[evalID]
	if deliveries >= b.cfg.DeliveryLimit {
		// The job stays in flight until the reaper has written the
		// failure, so no later evaluation of it overtakes.
		b.failed = append(b.failed, eval)
		b.kickReaperLocked()
		return nil
	}
	delay := b.cfg.NackDelay
	if deliveries > 1 {
		delay = b.cfg.SubsequentNackDelay
	}
	b.nackTimers[evalID] = time.AfterFunc(delay, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.nackTimers[evalID]; !ok || !b.enabled {
			return
		}
		delete(b.nackTimers, evalID)
		b.pushReadyLocked(eval)
	})
	return nil
}

func (b *EvalBroker) kickReaperLocked() {
	select {
	case b.reapCh <- struct{}{}:
	default:
	}
}

// reap writes failed evaluations (with their follow-ups) and cancelled
// ones to state until ctx ends.
func (b *EvalBroker) reap(ctx context.Context) {
	b.mu.Lock()
	kick := b.reapCh
	b.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		b.mu.Lock()
		failed, cancel := b.failed, b.cancel
		b.failed, b.cancel = nil, nil
		b.mu.Unlock()
		for _, e := range failed {
			b.writeFailed(ctx, e)
		}
		if len(cancel) > 0 {
			b.writeCancelled(ctx, cancel)
		}
	}
}

// writeFailed marks an evaluation failed with a delayed follow-up, then
// releases its job.
func (b *EvalBroker) writeFailed(ctx context.Context, eval *state.Evaluation) {
	now := b.now()
	wait := b.cfg.FailedFollowUpDelay + rand.N(b.cfg.FailedFollowUpDelay)
	follow := &state.Evaluation{
		ID:           b.newID(),
		Namespace:    eval.Namespace,
		Priority:     eval.Priority,
		Type:         eval.Type,
		TriggeredBy:  state.EvalTriggerFailedFollowUp,
		JobID:        eval.JobID,
		Status:       state.EvalStatusPending,
		Wait:         wait,
		WaitUntil:    now.Add(wait),
		PreviousEval: eval.ID,
		CreateTime:   now.UnixNano(),
		ModifyTime:   now.UnixNano(),
	}
	failed := eval.Copy()
	failed.Status = state.EvalStatusFailed
	failed.StatusDescription = fmt.Sprintf("evaluation reached its delivery limit (%d)", b.cfg.DeliveryLimit)
	failed.NextEval = follow.ID
	failed.ModifyTime = now.UnixNano()
	req := &store.EvalUpdateRequest{Evals: []*state.Evaluation{failed, follow}}
	if _, err := retryWrite(ctx, b.raft, b.log, "failed evaluation", store.EvalUpdateRequestType, req); err != nil {
		b.log.Error("could not mark evaluation failed", "eval_id", eval.ID, "error", err)
	} else {
		b.log.Warn("evaluation failed after reaching its delivery limit", "eval_id", eval.ID, "job_id", eval.JobID,
			"follow_up_eval_id", follow.ID, "follow_up_in", wait)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	delete(b.known, eval.ID)
	key := jobKeyOf(eval)
	if b.inflight[key] == eval.ID {
		delete(b.inflight, key)
		b.promoteWaitingLocked(key)
	}
}

// writeCancelled marks superseded evaluations cancelled.
func (b *EvalBroker) writeCancelled(ctx context.Context, evals []*state.Evaluation) {
	now := b.now().UnixNano()
	out := make([]*state.Evaluation, len(evals))
	for i, e := range evals {
		c := e.Copy()
		c.Status = state.EvalStatusCancelled
		c.StatusDescription = "canceled after a more recent evaluation of the job was processed"
		c.ModifyTime = now
		out[i] = c
	}
	if _, err := retryWrite(ctx, b.raft, b.log, "cancelled evaluations", store.EvalUpdateRequestType, &store.EvalUpdateRequest{Evals: out}); err != nil {
		b.log.Error("could not cancel superseded evaluations", "count", len(out), "error", err)
	}
}
