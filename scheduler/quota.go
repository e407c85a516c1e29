package scheduler

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// QuotaState is what a State offers when namespaces may have quotas: the
// quota a namespace names and what its namespaces use now.
// *store.StateSnapshot and *store.Store satisfy it; a State that does not
// has no quotas.
type QuotaState interface {
	QuotaOfNamespace(ws memdb.WatchSet, namespace string) (*state.QuotaSpec, state.QuotaResources, error)
}

// quotaCheck is one evaluation's view of its namespace's quota: the limit
// of the job's region, the usage in the snapshot, and what the plan built
// so far adds (placements) or frees (stops). Its zero value (no quota)
// lets everything through.
type quotaCheck struct {
	name  string
	limit *state.QuotaResources
	used  state.QuotaResources
	// freed maps a stopped allocation's ID to what its stop freed, so an
	// unstop gives it back.
	freed map[string]state.QuotaResources
}

// loadQuota reads the quota of job's namespace from st.
func loadQuota(st State, job *state.Job) (quotaCheck, error) {
	qs, ok := st.(QuotaState)
	if !ok || job == nil {
		return quotaCheck{}, nil
	}
	spec, used, err := qs.QuotaOfNamespace(nil, job.Namespace)
	if err != nil || spec == nil {
		return quotaCheck{}, err
	}
	limit := spec.LimitFor(job.Region)
	if limit == nil {
		return quotaCheck{}, nil
	}
	return quotaCheck{name: spec.Name, limit: limit, used: used}, nil
}

// stopped counts the stop of a (as it was before the plan) in the plan.
func (q *quotaCheck) stopped(a *state.Allocation) {
	if q.limit == nil || a.Terminal() {
		return
	}
	d := state.QuotaOfAlloc(a)
	q.used = q.used.Minus(d)
	if q.freed == nil {
		q.freed = map[string]state.QuotaResources{}
	}
	q.freed[a.ID] = d
}

// unstopped takes a stop back out of the count.
func (q *quotaCheck) unstopped(id string) {
	if d, ok := q.freed[id]; ok {
		q.used = q.used.Plus(d)
		delete(q.freed, id)
	}
}

// admit counts placement a when it fits the quota, or returns why not:
// "quota exceeded: memory 4096/4096 MB" (what the quota's namespaces use,
// with the plan so far, against the limit).
func (q *quotaCheck) admit(a *state.Allocation) string {
	if q.limit == nil {
		return ""
	}
	d := state.QuotaOfAlloc(a)
	if dim := q.used.Exceeds(d, q.limit); dim != "" {
		return "quota exceeded: " + dim
	}
	q.used = q.used.Plus(d)
	return ""
}
