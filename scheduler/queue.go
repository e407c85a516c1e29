package scheduler

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// The queue's order (docs/queue.md), shared by the leader's eval broker
// and the positions /v1/evaluations shows. Evaluations go by effective
// priority, highest first: the priority plus one for every AgingStep the
// evaluation has existed (from its CreateTime), at most MaxAgingBoost, so
// a low-priority job waiting behind a stream of higher ones is not starved
// for ever. Within an effective priority, the namespace with the lowest
// weighted share goes first: its live allocations divided by its weight
// (the namespace's meta key WeightMetaKey, 1 to MaxNamespaceWeight,
// default 1). Then the older evaluation (lower CreateIndex).
const (
	AgingStep     = time.Minute
	MaxAgingBoost = 25
	// WeightMetaKey is the namespace meta key holding its fair-share
	// weight.
	WeightMetaKey = "sched.weight"
	// MaxNamespaceWeight bounds a namespace's weight.
	MaxNamespaceWeight = 1000
)

// EffectivePriority is an evaluation's priority aged at now.
func EffectivePriority(e *state.Evaluation, now time.Time) int {
	return AgedPriority(e, now, AgingStep)
}

// AgedPriority is EffectivePriority with one point of aging every step
// instead of every AgingStep (a step of 0 means AgingStep).
func AgedPriority(e *state.Evaluation, now time.Time, step time.Duration) int {
	if step <= 0 {
		step = AgingStep
	}
	if e.CreateTime == 0 {
		return e.Priority
	}
	age := now.Sub(time.Unix(0, e.CreateTime))
	if age <= 0 {
		return e.Priority
	}
	return e.Priority + int(min(int64(MaxAgingBoost), int64(age/step)))
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

// ShareState is what NamespaceShares reads; the store satisfies it.
type ShareState interface {
	NamespaceByName(ws memdb.WatchSet, name string) (*state.Namespace, error)
	Jobs(ws memdb.WatchSet, ns, prefix string) ([]*state.Job, error)
	JobSummaryByID(ws memdb.WatchSet, ns, jobID string) (*state.JobSummary, error)
}

// NamespaceShares returns the weighted share of each of namespaces: live
// allocations (starting or running, as the job summaries count them) over
// the namespace's weight. It reads every job of those namespaces.
func NamespaceShares(st ShareState, namespaces []string) map[string]float64 {
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

// QueueBefore orders two evaluations of effective priorities agedA and
// agedB and namespace shares shareA and shareB as the queue delivers
// them: negative when a goes first.
func QueueBefore(a *state.Evaluation, agedA int, shareA float64, b *state.Evaluation, agedB int, shareB float64) int {
	return cmp.Or(cmp.Compare(agedB, agedA), cmp.Compare(shareA, shareB), cmp.Compare(a.CreateIndex, b.CreateIndex))
}

// QueuePositions returns the place (1 for the next) each of evals has in
// the queue's order at now, with the namespaces' shares (nil: equal).
func QueuePositions(evals []*state.Evaluation, shares map[string]float64, now time.Time) map[string]int {
	sorted := slices.Clone(evals)
	aged := make(map[*state.Evaluation]int, len(evals))
	for _, e := range evals {
		aged[e] = EffectivePriority(e, now)
	}
	slices.SortStableFunc(sorted, func(a, b *state.Evaluation) int {
		return QueueBefore(a, aged[a], shares[a.Namespace], b, aged[b], shares[b.Namespace])
	})
	out := make(map[string]int, len(sorted))
	for i, e := range sorted {
		out[e.ID] = i + 1
	}
	return out
}
