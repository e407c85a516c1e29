package store

import (
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// DeploymentByID returns a deployment, or nil.
func (r reader) DeploymentByID(ws memdb.WatchSet, id string) (*state.Deployment, error) {
	return first[*state.Deployment](ws, r.txn(), TableDeployment, indexID, id)
}

// Deployments lists the deployments of namespace ns ("*" for every
// namespace) whose ID starts with prefix, ordered by ID.
func (r reader) Deployments(ws memdb.WatchSet, ns, prefix string) ([]*state.Deployment, error) {
	return byNamespaceAndPrefix(ws, r.txn(), TableDeployment, ns, prefix, func(d *state.Deployment) string { return d.Namespace })
}

// DeploymentsByJob lists a job's deployments, ordered by ID. Unless all is
// set, only those of the job as registered now are listed (see
// AllocsByJob).
func (r reader) DeploymentsByJob(ws memdb.WatchSet, ns, jobID string, all bool) ([]*state.Deployment, error) {
	txn := r.txn()
	ds, err := list[*state.Deployment](ws, txn, nil, TableDeployment, indexJob, ns, jobID)
	if err != nil || all {
		return ds, err
	}
	job, err := first[*state.Job](ws, txn, TableJobs, indexID, ns, jobID)
	if err != nil || job == nil {
		return ds, err
	}
	kept := ds[:0:0]
	for _, d := range ds {
		if d.JobCreateIndex == job.CreateIndex {
			kept = append(kept, d)
		}
	}
	return kept, nil
}

// LatestDeploymentByJob returns a job's most recently created deployment,
// or nil.
func (r reader) LatestDeploymentByJob(ws memdb.WatchSet, ns, jobID string) (*state.Deployment, error) {
	ds, err := list[*state.Deployment](ws, r.txn(), nil, TableDeployment, indexJob, ns, jobID)
	if err != nil {
		return nil, err
	}
	var latest *state.Deployment
	for _, d := range ds {
		if latest == nil || d.CreateIndex > latest.CreateIndex {
			latest = d
		}
	}
	return latest, nil
}

// upsertDeployment writes a deployment, keeping the creation stamps of the
// one it replaces and, of each group it had, the counters the store keeps
// (PlacedAllocs, PlacedCanaries, HealthyAllocs, UnhealthyAllocs,
// RequireProgressBy once set) and Promoted: a plan computed on an older
// snapshot must not undo what allocations reported since.
func upsertDeployment(t *writeTxn, d *state.Deployment, now int64) error {
	if d.ID == "" {
		return state.Invalidf("ID", "missing deployment ID")
	}
	old, err := first[*state.Deployment](nil, t.Txn, TableDeployment, indexID, d.ID)
	if err != nil {
		return err
	}
	if old != nil {
		d.CreateIndex, d.CreateTime = old.CreateIndex, old.CreateTime
		for name, was := range old.TaskGroups {
			ds := d.TaskGroups[name]
			if ds == nil {
				continue
			}
			ds.PlacedAllocs, ds.PlacedCanaries = was.PlacedAllocs, was.PlacedCanaries
			ds.HealthyAllocs, ds.UnhealthyAllocs = was.HealthyAllocs, was.UnhealthyAllocs
			ds.Promoted = ds.Promoted || was.Promoted
			if !was.RequireProgressBy.IsZero() {
				ds.RequireProgressBy = was.RequireProgressBy
			}
		}
	} else {
		d.CreateIndex, d.CreateTime = t.index, now
	}
	d.ModifyIndex, d.ModifyTime = t.index, now
	return t.insert(TableDeployment, d)
}

// DeploymentUpsertRequest creates or updates deployments, with the
// evaluations that follow from the change (e.g. after a promotion).
type DeploymentUpsertRequest struct {
	Deployments []*state.Deployment
	Evals       []*state.Evaluation
	// Now is the leader's clock (Unix nanoseconds) for CreateTime (new
	// deployments) and ModifyTime.
	Now int64
}

// applyDeploymentUpsert creates or updates deployments; see
// DeploymentUpsertRequest.
func applyDeploymentUpsert(t *writeTxn, req *DeploymentUpsertRequest) (any, error) {
	for i, d := range req.Deployments {
		if d == nil {
			return nil, state.Invalidf(state.Fieldf("Deployments", i, ""), "missing deployment")
		}
		if err := upsertDeployment(t, d, req.Now); err != nil {
			return nil, prefixField(state.Fieldf("Deployments", i, ""), err)
		}
	}
	return nil, upsertEvals(t, "Evals", req.Evals)
}

// timeOf turns the leader's Unix nanoseconds into a time.
func timeOf(ns int64) time.Time { return time.Unix(0, ns).UTC() }
