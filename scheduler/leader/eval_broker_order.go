package leader

import (
	"container/heap"
	"slices"
	"strconv"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The queue's order (docs/queue.md). Ready evaluations are delivered by
// effective priority, highest first: the evaluation's priority plus one
// for every AgingStep it has existed (from its CreateTime), at most
// MaxAgingBoost, so a low-priority job waiting behind a stream of higher
// ones is not starved for ever. Within an effective priority, when
// evaluations of several namespaces are ready, the namespace with the
// lowest weighted share goes first: its live allocations divided by its
// weight (the namespace's meta key WeightMetaKey, 1 to MaxNamespaceWeight,
// default 1). Then the older evaluation (lower CreateIndex) goes first.
const (
	AgingStep     = time.Minute
	MaxAgingBoost = 25
	// WeightMetaKey is the namespace meta key holding its fair-share
	// weight.
	WeightMetaKey = "sched.weight"
	// MaxNamespaceWeight bounds a namespace's weight.
	MaxNamespaceWeight = 1000
)

// effectivePriority is an evaluation's priority aged at now.
func effectivePriority(e *state.Evaluation, now time.Time) int {
	if e.CreateTime == 0 {
		return e.Priority
	}
	age := now.Sub(time.Unix(0, e.CreateTime))
	if age <= 0 {
		return e.Priority
	}
	return e.Priority + int(min(int64(MaxAgingBoost), int64(age/AgingStep)))
}

// NamespaceWeight reads a namespace's fair-share weight from its meta:
// 1 when unset or not a whole number in 1..MaxNamespaceWeight.
func NamespaceWeight(ns *state.Namespace) int {
	if ns == nil {
		return 1
	}
	w, err := strconv.Atoi(ns.Meta[WeightMetaKey])
	if err != nil || w < 1 || w > MaxNamespaceWeight {
		return 1
	}
	return w
}

// StoreShares returns the weighted share of each of namespaces in st:
// live allocations (pending or running, as the job summaries count them)
// over the namespace's weight. It reads every job of those namespaces:
// the broker calls it only when evaluations of more than one namespace
// are ready.
func StoreShares(st *store.Store) func(namespaces []string) map[string]float64 {
	return func(namespaces []string) map[string]float64 {
		out := make(map[string]float64, len(namespaces))
		for _, name := range namespaces {
			ns, _ := st.NamespaceByName(nil, name)
			live := 0
			jobs, _ := st.Jobs(nil, name, "")
			for _, j := range jobs {
				s, _ := st.JobSummaryByID(nil, name, j.ID)
				if s == nil {
					continue
				}
				for _, tg := range s.Summary {
					live += tg.Running + tg.Starting
				}
			}
			out[name] = float64(live) / float64(NamespaceWeight(ns))
		}
		return out
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
	for _, it := range q.items {
		it.share = shares[it.eval.Namespace]
	}
	heap.Init(q)
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
		if d.eval.Status == state.EvalStatusBlocked && effectivePriority(d.eval, now) > it.aged {
			return true
		}
	}
	return false
}

// QueuePositions returns the place (1 for the next) each of evals would
// have in the queue's order, by effective priority at now, weighted share
// (shares may be nil) and age: what /v1/evaluations shows of blocked
// evaluations.
func QueuePositions(evals []*state.Evaluation, shares map[string]float64, now time.Time) map[string]int {
	items := make([]*heapItem, len(evals))
	for i, e := range evals {
		items[i] = &heapItem{eval: e, aged: effectivePriority(e, now), share: shares[e.Namespace], seq: uint64(i)}
	}
	slices.SortFunc(items, func(a, b *heapItem) int {
		if readyBefore(a, b) {
			return -1
		}
		if readyBefore(b, a) {
			return 1
		}
		return 0
	})
	out := make(map[string]int, len(items))
	for i, it := range items {
		out[it.eval.ID] = i + 1
	}
	return out
}
