package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// queueView decorates blocked evaluations with their place in the queue
// and what they wait for (state.Evaluation's QueuePosition, QueueLength
// and WaitReason), computed once per request from every blocked
// evaluation, in the order the leader's broker releases them
// (scheduler.QueuePositions).
type queueView struct {
	h   *api
	pos map[string]int
	n   int
}

// decorate returns e, or for a blocked evaluation a copy with its queue
// fields set.
func (q *queueView) decorate(e *state.Evaluation) *state.Evaluation {
	if e.Status != state.EvalStatusBlocked {
		return e
	}
	if q.pos == nil {
		q.load()
	}
	c := *e
	c.QueuePosition, c.QueueLength = q.pos[e.ID], q.n
	c.WaitReason = q.reason(e)
	return &c
}

// load orders every blocked evaluation.
func (q *queueView) load() {
	all, _ := q.h.store.Evals(nil, "*", "")
	var blocked []*state.Evaluation
	names := map[string]bool{}
	for _, e := range all {
		if e.Status == state.EvalStatusBlocked {
			blocked = append(blocked, e)
			names[e.Namespace] = true
		}
	}
	var shares map[string]float64
	if len(names) > 1 {
		shares = scheduler.NamespaceShares(q.h.store, slices.Sorted(maps.Keys(names)))
	}
	q.pos = scheduler.QueuePositions(blocked, shares, q.h.core.Now())
	q.n = len(blocked)
}

// reason says what a blocked evaluation waits for: its quota, or
// capacity, naming what the evaluation before it found exhausted.
func (q *queueView) reason(e *state.Evaluation) string {
	if e.QuotaLimitReached != "" {
		return fmt.Sprintf("quota %q exhausted: waiting for its usage to fall", e.QuotaLimitReached)
	}
	queued := 0
	for _, n := range e.QueuedAllocations {
		queued += n
	}
	why := "waiting for capacity"
	if prev, _ := q.h.store.EvalByID(nil, e.PreviousEval); prev != nil {
		dims := map[string]bool{}
		for _, m := range prev.FailedTGAllocs {
			if m == nil {
				continue
			}
			for d := range m.DimensionExhausted {
				dims[d] = true
			}
			for _, r := range m.QuotaExhausted {
				dims[r] = true
			}
		}
		if len(dims) > 0 {
			why += " (" + strings.Join(slices.Sorted(maps.Keys(dims)), ", ") + " exhausted)"
		}
	}
	if queued > 0 {
		why += fmt.Sprintf(": %d allocation(s) queued", queued)
	}
	return why
}
