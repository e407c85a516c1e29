package store

import (
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// AllocByID returns an allocation, or nil. Its watch set fires when that
// allocation is written (alloc_watch.go).
func (r reader) AllocByID(ws memdb.WatchSet, id string) (*state.Allocation, error) {
	if ws != nil && r.allocs != nil {
		r.allocs.add(ws, id) // before the read
		return getAlloc(nil, r.txn(), id)
	}
	return getAlloc(ws, r.txn(), id)
}

// AllocsByJob lists a job's allocations, ordered by ID. Unless all is set,
// only those of the job as registered now are listed, not those of an
// earlier job with the same ID that was purged; when the job does not exist
// any more, all are listed.
func (r reader) AllocsByJob(ws memdb.WatchSet, ns, jobID string, all bool) ([]*state.Allocation, error) {
	txn := r.txn()
	allocs, err := allocsOfJob(ws, txn, ns, jobID)
	if err != nil || all {
		return allocs, err
	}
	job, err := first[*state.Job](ws, txn, TableJobs, indexID, ns, jobID)
	if err != nil || job == nil {
		return allocs, err
	}
	kept := allocs[:0:0]
	for _, a := range allocs {
		if sameJobInstance(a, job) {
			kept = append(kept, a)
		}
	}
	return kept, nil
}

// AllocsByNode lists the allocations placed on a node, ordered by ID.
func (r reader) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*state.Allocation, error) {
	return allocsOnNode(ws, r.txn(), nodeID)
}

// NodeAllocsServerIndex returns the index of the servers' last change to
// the allocations of a node (one placed, stopped, removed or moved to a
// new job version; not a client's report), 0 when it has none, and
// watches the node's list in ws: the blocking index of a client that
// follows only what the servers change, without reading every allocation
// of its node at every wake-up.
func (r reader) NodeAllocsServerIndex(ws memdb.WatchSet, nodeID string) (uint64, error) {
	row, err := first[*allocList](ws, r.txn(), TableNodeAllocs, indexID, nodeID)
	if err != nil || row == nil {
		return 0, err
	}
	return row.serverIndex, nil
}

// NodeAllocsWriteIndex returns the index of the last write of one of a
// node's allocations (placed, changed, reported on by its client,
// removed), 0 when it has none, and watches the node's list in ws.
func (r reader) NodeAllocsWriteIndex(ws memdb.WatchSet, nodeID string) (uint64, error) {
	row, err := first[*allocList](ws, r.txn(), TableNodeAllocs, indexID, nodeID)
	if err != nil || row == nil {
		return 0, err
	}
	return row.writeIndex, nil
}

// NodeAllocChangesSince is what changed on a node after an index.
type NodeAllocChangesSince struct {
	// Changed are the node's allocations written after the index, ordered
	// by ID.
	Changed []*state.Allocation
	// Removed are the IDs, in order, of the allocations that were on the
	// node and are gone (garbage collected, or moved to another node).
	Removed []string
	// Count is the number of allocations on the node now.
	Count int
}

// NodeAllocsChangedSince returns what changed on a node after index
// since, in proportion to the changes rather than to the node's
// allocations (the node row's log, allocList.changes). ok is false when
// the log does not reach back to since (it began later, or the node's
// list was rebuilt by a restore, or the node has no allocation now): the
// caller then reads the whole list (AllocsByNode).
func (r reader) NodeAllocsChangedSince(nodeID string, since uint64) (out *NodeAllocChangesSince, ok bool, err error) {
	txn := r.txn()
	row, err := first[*allocList](nil, txn, TableNodeAllocs, indexID, nodeID)
	if err != nil || row == nil || !row.logged || since < row.changesSince {
		return nil, false, err
	}
	out = &NodeAllocChangesSince{Count: row.len()}
	seen := map[string]bool{}
	for c := row.changes; c != nil && c.index > since; c = c.next {
		if seen[c.id] {
			continue
		}
		seen[c.id] = true
		a, err := getAlloc(nil, txn, c.id)
		if err != nil {
			return nil, false, err
		}
		if a == nil || a.NodeID != nodeID {
			out.Removed = append(out.Removed, c.id)
			continue
		}
		out.Changed = append(out.Changed, a)
	}
	slices.SortFunc(out.Changed, func(a, b *state.Allocation) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(out.Removed)
	return out, true, nil
}

// AllocsByEval lists the allocations an evaluation placed, ordered by ID;
// none once the evaluation itself is gone (the allocations are found
// through its job).
func (r reader) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*state.Allocation, error) {
	txn := r.txn()
	e, err := first[*state.Evaluation](ws, txn, TableEvals, indexID, evalID)
	if err != nil || e == nil {
		return nil, err
	}
	allocs, err := allocsOfJob(ws, txn, e.Namespace, e.JobID)
	if err != nil {
		return nil, err
	}
	allocs = slices.DeleteFunc(allocs, func(a *state.Allocation) bool { return a.EvalID != evalID })
	if len(allocs) == 0 {
		return nil, nil
	}
	return allocs, nil
}

// Allocs lists the allocations of namespace ns ("*" for every namespace)
// whose ID starts with prefix, ordered by ID.
func (r reader) Allocs(ws memdb.WatchSet, ns, prefix string) ([]*state.Allocation, error) {
	var out []*state.Allocation
	err := eachAlloc(ws, r.txn(), prefix, func(a *state.Allocation) bool {
		if ns == allNamespaces || a.Namespace == ns {
			out = append(out, a)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AllocUpdateRequest records the result of a scheduler plan: new and
// updated allocations, the evaluations it created or updated, and the
// deployment it created or changed, in one command.
//
// For an allocation that already exists, Apply keeps what the client owns
// (TaskStates always; ClientStatus, ClientDescription and DeploymentStatus
// unless the update sets them) and its CreateIndex and CreateTime. An
// allocation with a nil Job gets the existing allocation's job or, when
// new, the job currently registered.
type AllocUpdateRequest struct {
	Allocs     []*state.Allocation
	Evals      []*state.Evaluation
	Deployment *state.Deployment
	// Now is the leader's clock (Unix nanoseconds) for allocation
	// CreateTime and ModifyTime.
	Now int64
}

// applyAllocUpdate records a plan's results; see AllocUpdateRequest.
func applyAllocUpdate(t *writeTxn, req *AllocUpdateRequest) (any, error) {
	if req.Deployment != nil {
		if err := upsertDeployment(t, req.Deployment, req.Now); err != nil {
			return nil, prefixField("Deployment", err)
		}
	}
	for i, a := range req.Allocs {
		if err := upsertAlloc(t, a, req.Now); err != nil {
			return nil, prefixField(state.Fieldf("Allocs", i, ""), err)
		}
	}
	return nil, upsertEvals(t, "Evals", req.Evals)
}

// upsertAlloc writes an allocation from the servers' side, deleting its
// service registrations when it is written client-terminal (e.g. lost).
func upsertAlloc(t *writeTxn, a *state.Allocation, now int64) error {
	if a == nil || a.ID == "" {
		return state.Invalidf("ID", "missing allocation ID")
	}
	if a.Job != nil && a.Namespace == "" && a.JobID == "" {
		a.Namespace, a.JobID = a.Job.Namespace, a.Job.ID
	}
	old, err := t.allocByID(a.ID)
	if err != nil {
		return err
	}
	if old != nil {
		a.CreateIndex, a.CreateTime = old.CreateIndex, old.CreateTime
		if a.Job == nil {
			a.Job = old.Job
		}
		// The client owns these: a plan does not overwrite what the
		// client reported unless it says otherwise (e.g. marks it lost).
		a.TaskStates = old.TaskStates
		if a.ClientStatus == "" {
			a.ClientStatus, a.ClientDescription = old.ClientStatus, old.ClientDescription
		}
		if a.DeploymentStatus == nil {
			a.DeploymentStatus = old.DeploymentStatus
		}
	} else {
		a.CreateIndex, a.CreateTime = t.index, now
		if a.ClientStatus == "" {
			a.ClientStatus = state.AllocClientStatusPending
		}
	}
	if a.Job == nil {
		job, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, a.Namespace, a.JobID)
		if err != nil {
			return err
		}
		if job == nil {
			return state.Invalidf("Job", "allocation has no job and job %q in namespace %q does not exist", a.JobID, a.Namespace)
		}
		a.Job = job
	}
	a.ModifyIndex, a.AllocModifyIndex = t.index, t.index
	a.ModifyTime = now
	if err := t.insert(TableAllocs, a); err != nil {
		return err
	}
	if err := deleteServicesOfEndedAlloc(t, a); err != nil {
		return err
	}
	t.jobs[nsID{a.Namespace, a.JobID}] = true
	if err := updateDeploymentWithAlloc(t, old, a, now); err != nil {
		return err
	}
	return updateSummaryForAlloc(t, old, a)
}

// AllocClientUpdateRequest carries what client agents report about their
// allocations. Only ClientStatus, ClientDescription, TaskStates and (when
// set) DeploymentStatus of each listed allocation are used; allocations
// that no longer exist are skipped, since a client may report on one that
// was just garbage collected.
type AllocClientUpdateRequest struct {
	Allocs []*state.Allocation
	// Evals are created with the update, e.g. to reschedule a failed
	// allocation.
	Evals []*state.Evaluation
	// Now is the leader's clock (Unix nanoseconds) for ModifyTime.
	Now int64
}

// applyAllocClientUpdate records what clients report; see
// AllocClientUpdateRequest. An allocation reported complete, failed or lost
// loses its service registrations in the same command.
func applyAllocClientUpdate(t *writeTxn, req *AllocClientUpdateRequest) (any, error) {
	for i, u := range req.Allocs {
		if u == nil || u.ID == "" {
			return nil, state.Invalidf(state.Fieldf("Allocs", i, "ID"), "missing allocation ID")
		}
		old, err := t.allocByID(u.ID)
		if err != nil {
			return nil, err
		}
		if old == nil {
			continue
		}
		next := *old
		next.ClientStatus = u.ClientStatus
		next.ClientDescription = u.ClientDescription
		next.TaskStates = u.TaskStates
		if u.DeploymentStatus != nil {
			ds := *u.DeploymentStatus
			ds.ModifyIndex = t.index
			// Whether it is a canary is the servers' to say.
			ds.Canary = old.DeploymentStatus != nil && old.DeploymentStatus.Canary
			next.DeploymentStatus = &ds
		}
		next.ModifyIndex = t.index
		next.ModifyTime = req.Now
		if err := t.insert(TableAllocs, &next); err != nil {
			return nil, err
		}
		if err := deleteServicesOfEndedAlloc(t, &next); err != nil {
			return nil, err
		}
		t.jobs[nsID{next.Namespace, next.JobID}] = true
		if err := updateDeploymentWithAlloc(t, old, &next, req.Now); err != nil {
			return nil, err
		}
		if err := updateSummaryForAlloc(t, old, &next); err != nil {
			return nil, err
		}
	}
	return nil, upsertEvals(t, "Evals", req.Evals)
}
