package scheduler

import (
	"maps"
	"slices"

	"github.com/schedhq/sched/state"
)

// enforceQuota is the plan applier's quota check, run on what
// EvaluatePlan accepted of plan: placements that would take the plan's
// namespace quota over its limit, counting the in-flight results of this
// batch (overlay) that are not in snap yet, are left out node by node (in
// node ID order), with the reason as the node's rejection. Stops always
// go through. A plan whose namespace has no quota costs one namespace
// lookup.
func enforceQuota(snap State, overlay map[string][]*state.Allocation, plan *Plan, result *PlanResult) ([]Rejection, error) {
	if len(result.NodeAllocation) == 0 {
		return nil, nil
	}
	qc, err := loadQuota(snap, plan.Job)
	if err != nil || qc.limit == nil {
		return nil, err
	}
	qs := snap.(QuotaState)
	inQuota := map[string]bool{}
	counts := func(ns string) (bool, error) {
		in, ok := inQuota[ns]
		if !ok {
			spec, _, err := qs.QuotaOfNamespace(nil, ns)
			if err != nil {
				return false, err
			}
			in = spec != nil && spec.Name == qc.name
			inQuota[ns] = in
		}
		return in, nil
	}
	live := func(a *state.Allocation) state.QuotaResources {
		if a == nil || a.Terminal() {
			return state.QuotaResources{}
		}
		return state.QuotaOfAlloc(a)
	}
	// over holds this batch's versions of allocations: a placement after
	// a stop of the same allocation wins.
	over := map[string]*state.Allocation{}
	for _, node := range sortedKeys(overlay) {
		for _, a := range overlay[node] {
			over[a.ID] = a
		}
	}
	before := func(id string) (*state.Allocation, error) {
		if a, ok := over[id]; ok {
			return a, nil
		}
		return snap.AllocByID(nil, id)
	}
	used := qc.used
	for _, id := range slices.Sorted(maps.Keys(over)) {
		a := over[id]
		in, err := counts(a.Namespace)
		if err != nil {
			return nil, err
		}
		if !in {
			continue
		}
		old, err := snap.AllocByID(nil, id)
		if err != nil {
			return nil, err
		}
		used = used.Minus(live(old)).Plus(live(a))
	}
	for _, node := range sortedKeys(result.NodeUpdate) {
		for _, a := range result.NodeUpdate[node] {
			old, err := before(a.ID)
			if err != nil {
				return nil, err
			}
			if old == nil {
				continue
			}
			if in, err := counts(old.Namespace); err != nil {
				return nil, err
			} else if in {
				used = used.Minus(live(old))
			}
		}
	}
	var rejected []Rejection
	for _, node := range sortedKeys(result.NodeAllocation) {
		var delta state.QuotaResources
		for _, a := range result.NodeAllocation[node] {
			old, err := before(a.ID)
			if err != nil {
				return nil, err
			}
			delta = delta.Plus(live(a)).Minus(live(old))
		}
		grows := delta.CPU > 0 || delta.MemoryMB > 0 || delta.MemoryMaxMB > 0 || delta.Allocations > 0
		if dim := used.Exceeds(delta, qc.limit); grows && dim != "" {
			delete(result.NodeAllocation, node)
			rejected = append(rejected, Rejection{Node: node, Reason: "quota exceeded: " + dim})
			continue
		}
		used = used.Plus(delta)
	}
	return rejected, nil
}
