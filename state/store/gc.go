package store

import "github.com/schedhq/sched/state"

// GarbageCollectRequest deletes what the leader's garbage collector chose.
// A job and its evaluations and allocations go in the same request.
// The leader picks by age; Apply re-checks every rule that does not depend
// on time against the state it applies to, and skips (rather than fails
// on) an object that no longer qualifies or no longer exists, since state
// may have moved on between the choice and the commit:
//
//   - an evaluation is deleted only when terminal;
//   - an allocation only when terminal;
//   - a job only when it is still dead, still at the JobModifyIndex the
//     leader saw (not registered again since), and has no allocation that
//     is not terminal; its versions, submissions and summary go with it;
//   - a node only when still down with no allocation that is not terminal;
//   - a deployment only when no longer active.
//
// The service registrations of deleted allocations and nodes go with them.
type GarbageCollectRequest struct {
	Evals       []string
	Allocs      []string
	Jobs        []GarbageCollectJob
	Nodes       []string
	Deployments []string
}

// GarbageCollectJob names a job to collect and the version the leader saw.
type GarbageCollectJob struct {
	Namespace      string
	ID             string
	JobModifyIndex uint64
}

// applyGarbageCollect deletes what still qualifies; see
// GarbageCollectRequest.
func applyGarbageCollect(t *writeTxn, req *GarbageCollectRequest) (any, error) {
	// Jobs first: once their evaluations and allocations are gone, a job
	// would no longer look dead.
	for _, j := range req.Jobs {
		if err := collectJob(t, j); err != nil {
			return nil, err
		}
	}
	for _, id := range req.Evals {
		e, err := first[*state.Evaluation](nil, t.Txn, TableEvals, indexID, id)
		if err != nil {
			return nil, err
		}
		if e == nil || !e.Terminal() {
			continue
		}
		if err := t.delete(TableEvals, e); err != nil {
			return nil, err
		}
		t.jobs[nsID{e.Namespace, e.JobID}] = true
	}
	for _, id := range req.Allocs {
		a, err := t.allocByID(id)
		if err != nil {
			return nil, err
		}
		if a == nil || !a.Terminal() {
			continue
		}
		if err := t.delete(TableAllocs, a); err != nil {
			return nil, err
		}
		if err := deleteServicesOf(t, indexAlloc, a.ID); err != nil {
			return nil, err
		}
		if err := updateSummaryForAlloc(t, a, nil); err != nil {
			return nil, err
		}
		t.jobs[nsID{a.Namespace, a.JobID}] = true
	}
	for _, id := range req.Nodes {
		n, err := first[*state.Node](nil, t.Txn, TableNodes, indexID, id)
		if err != nil {
			return nil, err
		}
		if n == nil || n.Status != state.NodeStatusDown {
			continue
		}
		live, err := hasLiveAllocIn(t.Txn, TableNodeAllocs, id)
		if err != nil || live {
			return nil, err
		}
		if err := t.delete(TableNodes, n); err != nil {
			return nil, err
		}
		if err := deleteServicesOf(t, indexNode, n.ID); err != nil {
			return nil, err
		}
	}
	for _, id := range req.Deployments {
		d, err := first[*state.Deployment](nil, t.Txn, TableDeployment, indexID, id)
		if err != nil {
			return nil, err
		}
		if d == nil || d.Active() {
			continue
		}
		if err := t.delete(TableDeployment, d); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// collectJob purges one job of a GarbageCollectRequest if it still
// qualifies.
func collectJob(t *writeTxn, j GarbageCollectJob) error {
	job, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, j.Namespace, j.ID)
	if err != nil || job == nil {
		return err
	}
	if job.Status != state.JobStatusDead || job.JobModifyIndex != j.JobModifyIndex {
		return nil
	}
	live, err := hasLiveAllocIn(t.Txn, TableJobAllocs, jobAllocsKey(j.Namespace, j.ID))
	if err != nil || live {
		return err
	}
	return purgeJob(t, job)
}
