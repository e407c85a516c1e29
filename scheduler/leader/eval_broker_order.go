package leader

import (
	"container/heap"
	"slices"
	"sync"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The queue's order is scheduler's (scheduler/queue.go): effective
// priority with aging, then the namespaces' weighted shares, then age.

// effectivePriority is scheduler.EffectivePriority with the broker's
// aging step.
func (b *EvalBroker) effectivePriority(e *state.Evaluation, now time.Time) int {
	return scheduler.AgedPriority(e, now, b.cfg.AgingStep)
}

// StoreShares returns the broker's view of the namespaces' weighted
// shares in st (scheduler.NamespaceShares), read again only when a job
// summary, job or namespace changed since, or a namespace is new: reading
// walks every job of those namespaces, and a burst of dequeues should not
// repeat it. The broker calls it only when evaluations of more than one
// namespace are ready.
func StoreShares(st *store.Store) func(namespaces []string) map[string]float64 {
	var (
		mu     sync.Mutex
		cached map[string]float64
		index  uint64
	)
	return func(namespaces []string) map[string]float64 {
		mu.Lock()
		defer mu.Unlock()
		latest := max(st.Index(store.TableJobSummary), st.Index(store.TableJobs), st.Index(store.TableNamespaces))
		stale := cached == nil || latest != index
		for _, ns := range namespaces {
			if _, ok := cached[ns]; !ok {
				stale = true
			}
		}
		if stale {
			cached, index = scheduler.NamespaceShares(st, namespaces), latest
		}
		return cached
	}
}

// SetShares sets how the broker learns the weighted share of namespaces;
// nil (the default) orders evaluations of the same effective priority
// by age only.
func (b *EvalBroker) SetShares(fn func(namespaces []string) map[string]float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shares = fn
}

// EnqueueAll adds evaluations at once, so that a worker waiting for work
// sees them all ordered, rather than the first one enqueued (blocked
// evaluations released together).
func (b *EvalBroker) EnqueueAll(evals []*state.Evaluation) {
	if len(evals) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range evals {
		b.enqueueLocked(e)
	}
}

// refreshSharesLocked re-orders a ready queue by the namespaces' current
// shares when it holds evaluations of more than one namespace (shares
// change as allocations are placed). O(n) in the queue's length, only
// then.
func (b *EvalBroker) refreshSharesLocked(q *evalHeap) {
	if b.shares == nil || q.Len() < 2 {
		return
	}
	var names []string
	for _, it := range q.items {
		if !slices.Contains(names, it.eval.Namespace) {
			names = append(names, it.eval.Namespace)
			if len(names) > 64 {
				break
			}
		}
	}
	if len(names) < 2 {
		return
	}
	shares := b.shares(names)
	changed := false
	for _, it := range q.items {
		if s := shares[it.eval.Namespace]; s != it.share {
			it.share, changed = s, true
		}
	}
	if changed {
		heap.Init(q)
	}
}

// gatedByLocked reports whether a ready queue's next evaluation may have
// been held back by gatedLocked for the released evaluation d, so that
// d's ack must wake the waiting workers: one released alike, of lower
// effective priority. A burst of released evaluations of one priority
// (a thousand blocked jobs and a freed node) then wakes no one on each
// ack: every worker but the one acking was woken as they became ready,
// and none of them was held back.
func (b *EvalBroker) gatedByLocked(d *state.Evaluation) bool {
	dp := b.effectivePriority(d, b.now())
	for _, q := range b.ready {
		if q.Len() > 0 && q.items[0].eval.Status == state.EvalStatusBlocked && q.items[0].aged < dp {
			return true
		}
	}
	return false
}

// gatedLocked reports whether the next ready evaluation must wait: a
// blocked evaluation released by a capacity change is not delivered while
// one of higher effective priority released alike is delivered and not
// acknowledged, so freed capacity goes to the higher one first however
// many workers there are. Unblocked evaluations of one priority still run
// side by side.
func (b *EvalBroker) gatedLocked(it *heapItem) bool {
	if it.eval.Status != state.EvalStatusBlocked {
		return false
	}
	now := b.now()
	for _, d := range b.unack {
		if d.eval.Status == state.EvalStatusBlocked && b.effectivePriority(d.eval, now) > it.aged {
			return true
		}
	}
	return false
}
