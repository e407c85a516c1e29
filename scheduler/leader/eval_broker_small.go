package leader

import (
	"context"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Small jobs' evaluations are queued apart so that workers of their own
// (RuntimeConfig.SmallWorkers) can take them without taking the large
// ones. Placing a job of one allocation takes the scheduler tens of
// microseconds and its worker then waits milliseconds for the plan's
// Raft commit: a burst of such jobs is bound by how many commits are in
// flight at once, not by the cores, and more workers let more of them
// share each disk write. A job of a thousand allocations is the other way
// round: its worker computes for tens of milliseconds, and more workers
// computing at once only compete for the cores and plan from staler
// states (a million placements took a third longer with 32 workers than
// with 6). The general workers take from both queues, by the queue's
// order across them; the small-job workers from the small jobs' only.

// SmallJobAllocs is the most allocations a job may ask for (the sum of
// its task groups' counts) for its evaluations to be a small job's.
const SmallJobAllocs = 16

// readyKey names a ready queue: an evaluation type, and whether it holds
// small jobs' evaluations.
type readyKey struct {
	typ   string
	small bool
}

// SetSmall sets how the broker tells an evaluation of a small job, which
// DequeueSmall may deliver; nil (the default) tells none, and
// DequeueSmall then delivers nothing. The broker calls it under its lock
// as an evaluation becomes ready.
func (b *EvalBroker) SetSmall(fn func(*state.Evaluation) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.small = fn
}

// DequeueSmall is Dequeue for a worker that takes only small jobs'
// evaluations (SetSmall), in the queue's order among them.
func (b *EvalBroker) DequeueSmall(ctx context.Context, types []string, timeout time.Duration) (*state.Evaluation, string, error) {
	return b.dequeue(ctx, types, timeout, true)
}

// outrankedLocked reports whether a small-job worker must leave it, the
// next small job's evaluation, to wait: it was released by a capacity
// change, and a large job's evaluation of higher effective priority
// released alike waits for a general worker. The freed room goes to the
// higher priority first, as gatedLocked keeps it once that one is
// delivered; its ack wakes the small-job workers (gatedByLocked).
func (b *EvalBroker) outrankedLocked(it *heapItem, types []string) bool {
	if it.eval.Status != state.EvalStatusBlocked {
		return false
	}
	for _, t := range types {
		q := b.ready[readyKey{typ: t}]
		if q != nil && q.Len() > 0 && q.items[0].eval.Status == state.EvalStatusBlocked && q.items[0].aged > it.aged {
			return true
		}
	}
	return false
}

// StoreSmall tells, from st, an evaluation of a small job: a service or
// batch job (system jobs place on every eligible node) that asks for at
// most SmallJobAllocs allocations. An evaluation whose job is gone is
// not small: it stops whatever the job had.
func StoreSmall(st *store.Store) func(*state.Evaluation) bool {
	return func(e *state.Evaluation) bool {
		job, err := st.JobByID(nil, e.Namespace, e.JobID)
		if err != nil || job == nil {
			return false
		}
		return smallJob(job)
	}
}

// smallJob reports whether job is a small job (StoreSmall).
func smallJob(job *state.Job) bool {
	if job.Type != state.JobTypeService && job.Type != state.JobTypeBatch {
		return false
	}
	n := 0
	for _, tg := range job.TaskGroups {
		n += tg.Count
		if n > SmallJobAllocs {
			return false
		}
	}
	return true
}
