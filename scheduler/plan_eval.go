package scheduler

import (
	"fmt"
	"slices"

	"github.com/schedhq/sched/state"
)

// Rejection is a node plan left out, and why.
type Rejection struct {
	Node, Reason string
}

// EvaluatePlan decides what of plan can be committed on top of snap plus
// overlay (allocations by node that are being committed and are not in
// snap yet; nil for none). It is the plan applier's check, pure so it can
// be tested on its own: see PlanApplier for the rules. The result's
// RefreshIndex is set when a node was left out.
func EvaluatePlan(snap State, overlay map[string][]*state.Allocation, plan *Plan) (*PlanResult, []Rejection, error) {
	result := &PlanResult{
		NodeUpdate:     map[string][]*state.Allocation{},
		NodeAllocation: map[string][]*state.Allocation{},
		Deployment:     plan.Deployment,
	}
	if plan.NodePreemptions != nil {
		result.NodePreemptions = map[string][]*state.Allocation{}
	}
	nodes := make([]string, 0, len(plan.NodeUpdate)+len(plan.NodeAllocation))
	for id := range plan.NodeUpdate {
		nodes = append(nodes, id)
	}
	for id := range plan.NodeAllocation {
		if _, ok := plan.NodeUpdate[id]; !ok {
			nodes = append(nodes, id)
		}
	}
	slices.Sort(nodes)
	var rejected []Rejection
	for _, id := range nodes {
		ok, reason, err := evaluateNodePlan(snap, overlay, plan, id)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			rejected = append(rejected, Rejection{Node: id, Reason: reason})
			if plan.AllAtOnce {
				return &PlanResult{RefreshIndex: snap.LatestIndex()}, rejected, nil
			}
			continue
		}
		if u := plan.NodeUpdate[id]; len(u) > 0 {
			result.NodeUpdate[id] = u
		}
		if p := plan.NodeAllocation[id]; len(p) > 0 {
			result.NodeAllocation[id] = p
		}
		if p := plan.NodePreemptions[id]; len(p) > 0 {
			result.NodePreemptions[id] = p
		}
	}
	quotaRejected, err := enforceQuota(snap, overlay, plan, result)
	if err != nil {
		return nil, nil, err
	}
	if len(quotaRejected) > 0 {
		rejected = append(rejected, quotaRejected...)
		if plan.AllAtOnce {
			return &PlanResult{RefreshIndex: snap.LatestIndex()}, rejected, nil
		}
	}
	if len(rejected) > 0 {
		result.RefreshIndex = snap.LatestIndex()
	}
	return result, rejected, nil
}

// evaluateNodePlan checks the part of plan on one node. Its cost depends
// on the plan's allocations on the node, not on how many the node holds:
// the node's load comes from the store's node usage, corrected for this
// batch's earlier results (overlay) and what the plan stops or replaces.
// Only a placement that asks for host ports walks the node's allocations,
// to check them for collisions.
func evaluateNodePlan(snap State, overlay map[string][]*state.Allocation, plan *Plan, nodeID string) (bool, string, error) {
	placed := plan.NodeAllocation[nodeID]
	if len(placed) == 0 {
		// Stopping always fits.
		return true, "", nil
	}
	over := make(map[string]*state.Allocation, len(overlay[nodeID]))
	for _, a := range overlay[nodeID] {
		over[a.ID] = a
	}
	// current is an allocation as it will be before this plan: this
	// batch's version, else the snapshot's; nil when it is not on the
	// node.
	current := func(id string) (*state.Allocation, error) {
		if a, ok := over[id]; ok {
			return a, nil
		}
		a, err := snap.AllocByID(nil, id)
		if err != nil || a == nil || a.NodeID != nodeID {
			return nil, err
		}
		return a, nil
	}
	needsFit, newPlacement, ports := false, false, false
	for _, a := range placed {
		if a.Terminal() {
			continue
		}
		needsFit = true
		old, err := current(a.ID)
		if err != nil {
			return false, "", err
		}
		if old == nil || old.Terminal() {
			newPlacement = true
		}
		ports = ports || len(allocPorts(a.AllocatedResources)) > 0
	}
	if !needsFit {
		// Only bookkeeping on allocations that are done (e.g. the
		// follow-up evaluation of a failed one): nothing to fit.
		return true, "", nil
	}
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	switch {
	case node == nil:
		return false, "node does not exist", nil
	case node.Status != state.NodeStatusReady:
		return false, fmt.Sprintf("node is %s", node.Status), nil
	case newPlacement && node.Drain:
		return false, "node is draining", nil
	case newPlacement && node.SchedulingEligibility != state.NodeSchedulingEligible:
		return false, "node is not eligible for new placements", nil
	}
	leaving := make(map[string]bool, len(plan.NodeUpdate[nodeID])+len(placed))
	for _, a := range plan.NodeUpdate[nodeID] {
		leaving[a.ID] = true
	}
	// Evictions free their room as stops do: a victim already gone or
	// finished frees nothing more, and the placements must fit what is
	// left either way.
	for _, a := range plan.NodePreemptions[nodeID] {
		leaving[a.ID] = true
	}
	for _, a := range placed {
		leaving[a.ID] = true
	}
	if ports {
		return fitWithPorts(snap, over, leaving, placed, node)
	}
	if _, err := nodeReservedPorts(node); err != nil {
		return false, fmt.Sprintf("node resources are invalid: %v", err), nil
	}
	u, err := snap.NodeUsage(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	used := usage{CPU: u.CPU, MemoryMB: u.MemoryMB, DiskMB: u.DiskMB}
	for id, a := range over {
		// This batch's version replaces the snapshot's.
		old, err := snap.AllocByID(nil, id)
		if err != nil {
			return false, "", err
		}
		if old != nil && old.NodeID == nodeID && !old.Terminal() {
			used.sub(old.AllocatedResources)
		}
		if !a.Terminal() {
			used.add(a.AllocatedResources)
		}
	}
	for id := range leaving {
		a, err := current(id)
		if err != nil {
			return false, "", err
		}
		if a != nil && !a.Terminal() {
			used.sub(a.AllocatedResources)
		}
	}
	for _, a := range placed {
		if !a.Terminal() {
			used.add(a.AllocatedResources)
		}
	}
	if dim := used.exceeds(capacity(node)); dim != "" {
		return false, "resources exhausted: " + dim, nil
	}
	return true, "", nil
}

// fitWithPorts is evaluateNodePlan's check when a placement asks for host
// ports: every allocation that will be on the node, for resources and
// port collisions.
func fitWithPorts(snap State, over map[string]*state.Allocation, leaving map[string]bool, placed []*state.Allocation, node *state.Node) (bool, string, error) {
	existing, err := snap.AllocsByNode(nil, node.ID)
	if err != nil {
		return false, "", err
	}
	current := make(map[string]*state.Allocation, len(existing)+len(over))
	for _, a := range existing {
		current[a.ID] = a
	}
	for id, a := range over {
		current[id] = a
	}
	proposed := make([]*state.Allocation, 0, len(current)+len(placed))
	for id, a := range current {
		if !leaving[id] && !a.Terminal() {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placed...)
	fit, dim, err := AllocsFit(node, proposed)
	if err != nil {
		return false, fmt.Sprintf("node resources are invalid: %v", err), nil
	}
	if !fit {
		return false, "resources exhausted: " + dim, nil
	}
	return true, "", nil
}

// ResultEmpty reports whether nothing of a plan is to be committed.
func ResultEmpty(r *PlanResult) bool {
	return len(r.NodeUpdate) == 0 && len(r.NodeAllocation) == 0 && r.Deployment == nil
}

// ResultOverlay lists a result's allocations by node: its stops (which
// are terminal) and its placements.
func ResultOverlay(r *PlanResult) map[string][]*state.Allocation {
	out := make(map[string][]*state.Allocation, len(r.NodeUpdate)+len(r.NodeAllocation))
	for id, allocs := range r.NodeUpdate {
		out[id] = append(out[id], allocs...)
	}
	for id, allocs := range r.NodeAllocation {
		out[id] = append(out[id], allocs...)
	}
	return out
}

// stopOf keeps what a stop changes of an allocation.
func stopOf(a *state.Allocation) *state.Allocation {
	s := &state.Allocation{
		ID:                 a.ID,
		Namespace:          a.Namespace,
		JobID:              a.JobID,
		NodeID:             a.NodeID,
		TaskGroup:          a.TaskGroup,
		DesiredStatus:      a.DesiredStatus,
		DesiredDescription: a.DesiredDescription,
		DesiredTransition:  a.DesiredTransition,
		FollowupEvalID:     a.FollowupEvalID,
		NextAllocation:     a.NextAllocation,
		// An eviction names the allocation that took its room.
		PreemptedByAllocation: a.PreemptedByAllocation,
	}
	if a.ClientStatus == state.AllocClientStatusLost {
		s.ClientStatus, s.ClientDescription = a.ClientStatus, a.ClientDescription
	}
	return s
}

// sameJobVersion reports whether a and b are the same version of the same
// job registration.
func sameJobVersion(a, b *state.Job) bool {
	return a == b || (a.Namespace == b.Namespace && a.ID == b.ID && a.Version == b.Version &&
		a.JobModifyIndex == b.JobModifyIndex && a.CreateIndex == b.CreateIndex)
}

// PlanCommit is what committing a plan's result writes. Placements of the
// plan's job version travel without their job (JobAllocs), which the
// commit carries once (Job); other placements carry their own (Allocs);
// stops carry only what a stop changes. Nodes go in ID order, so the
// commit is the same whatever the maps' order.
type PlanCommit struct {
	Job       *state.Job
	JobAllocs []*state.Allocation
	Allocs    []*state.Allocation
	Stops     []*state.Allocation
	// Evals are the plan's PreemptionEvals of the jobs whose evictions
	// are committed.
	Evals []*state.Evaluation
}

// CommitOf returns what committing result, the accepted part of plan,
// writes. plan and result are not changed.
func CommitOf(plan *Plan, result *PlanResult) PlanCommit {
	var c PlanCommit
	for _, node := range sortedKeys(result.NodeUpdate) {
		for _, a := range result.NodeUpdate[node] {
			c.Stops = append(c.Stops, stopOf(a))
		}
	}
	if len(result.NodePreemptions) > 0 {
		evicted := map[[2]string]bool{}
		for _, node := range sortedKeys(result.NodePreemptions) {
			for _, a := range result.NodePreemptions[node] {
				c.Stops = append(c.Stops, stopOf(a))
				evicted[[2]string{a.Namespace, a.JobID}] = true
			}
		}
		for _, e := range plan.PreemptionEvals {
			if evicted[[2]string{e.Namespace, e.JobID}] {
				c.Evals = append(c.Evals, e)
			}
		}
	}
	for _, node := range sortedKeys(result.NodeAllocation) {
		for _, a := range result.NodeAllocation[node] {
			al := *a
			if plan.Job != nil && (al.Job == nil || sameJobVersion(al.Job, plan.Job)) {
				al.Job = nil
				c.JobAllocs = append(c.JobAllocs, &al)
			} else {
				c.Allocs = append(c.Allocs, &al)
			}
		}
	}
	if len(c.JobAllocs) > 0 {
		c.Job = plan.Job
	}
	return c
}
