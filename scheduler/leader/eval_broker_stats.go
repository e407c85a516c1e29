package leader

import (
	"container/heap"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// BrokerStats counts what the broker holds.
type BrokerStats struct {
	// TotalReady evaluations wait for a worker.
	TotalReady int
	// TotalUnacked evaluations are delivered and not yet acked.
	TotalUnacked int
	// TotalPending evaluations wait for an earlier one of their job.
	TotalPending int
	// TotalWaiting evaluations wait for their time (delayed, or after a
	// nack).
	TotalWaiting int
	// TotalFailed evaluations reached the delivery limit and are being
	// marked failed.
	TotalFailed int
	// TotalBlocked and TotalEscaped come from blocked evals (Runtime's
	// BrokerStats fills them).
	TotalBlocked int
	TotalEscaped int
	// ByScheduler splits ready and unacked by scheduler type.
	ByScheduler map[string]*SchedulerStats
	// OldestReady is how long the longest-waiting ready evaluation has
	// waited.
	OldestReady time.Duration
}

// SchedulerStats counts one scheduler type's evaluations.
type SchedulerStats struct {
	Ready   int
	Unacked int
}

// Stats returns the broker's counters, or ErrNotLeader when it is
// stopped.
func (b *EvalBroker) Stats() (*BrokerStats, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return nil, ErrNotLeader
	}
	st := &BrokerStats{ByScheduler: map[string]*SchedulerStats{}}
	by := func(t string) *SchedulerStats {
		s := st.ByScheduler[t]
		if s == nil {
			s = &SchedulerStats{}
			st.ByScheduler[t] = s
		}
		return s
	}
	for k, q := range b.ready {
		st.TotalReady += q.Len()
		if q.Len() > 0 {
			by(k.typ).Ready += q.Len()
		}
	}
	for _, d := range b.unack {
		st.TotalUnacked++
		by(d.eval.Type).Unacked++
	}
	for _, w := range b.waiting {
		st.TotalPending += len(w)
	}
	st.TotalWaiting = b.delayed.Len() + len(b.nackTimers)
	st.TotalFailed = len(b.failed)
	now := b.now()
	for _, at := range b.enqueuedAt {
		st.OldestReady = max(st.OldestReady, now.Sub(at))
	}
	return st, nil
}

// heapItem is an evaluation in one of the broker's heaps.
type heapItem struct {
	eval *state.Evaluation
	seq  uint64
	due  time.Time
	// aged is the evaluation's effective priority as it became ready,
	// and share its namespace's weighted share (eval_broker_order.go).
	aged  int
	share float64
}

// readyBefore orders ready evaluations: higher effective priority first,
// then the namespace of lower weighted share, then older (lower
// CreateIndex), then the order they became ready.
func readyBefore(a, b *heapItem) bool {
	if c := scheduler.QueueBefore(a.eval, a.aged, a.share, b.eval, b.aged, b.share); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// dueBefore orders delayed evaluations by due time.
func dueBefore(a, b *heapItem) bool {
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.seq < b.seq
}

// evalHeap is a heap of evaluations under an order.
type evalHeap struct {
	items []*heapItem
	less  func(a, b *heapItem) bool
}

var _ heap.Interface = (*evalHeap)(nil)

func (h *evalHeap) Len() int           { return len(h.items) }
func (h *evalHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *evalHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *evalHeap) Push(x any)         { h.items = append(h.items, x.(*heapItem)) }
func (h *evalHeap) Pop() any {
	n := len(h.items)
	it := h.items[n-1]
	h.items[n-1] = nil
	h.items = h.items[:n-1]
	return it
}
