package jobs

import (
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Deployment descriptions of operator actions.
const (
	descDeploymentFailedByUser = "Deployment marked as failed"
	descDeploymentPaused       = "Deployment is paused"
	descDeploymentResumed      = "Deployment is running"
)

// activeDeployment reads the deployment of the path, which must be in the
// request's namespace (else 404) and active (else 400), and its job.
func (h deploymentAPI) activeDeployment(r *http.Request, p httprouter.Params, bodyID string) (*state.Deployment, *state.Job, error) {
	id := p.ByName("deployment_id")
	if bodyID != "" && bodyID != id {
		return nil, nil, codec.BadRequest("DeploymentID: %q does not match the deployment ID in the path %q", bodyID, id)
	}
	d, err := h.store.DeploymentByID(nil, id)
	if err != nil {
		return nil, nil, err
	}
	if d == nil || !codec.InNamespace(h.core.Namespace(r), d.Namespace) {
		return nil, nil, state.NotFoundf("deployment %q", id)
	}
	if !d.Active() {
		return nil, nil, codec.BadRequest("deployment_id: deployment %q is %s: only an active deployment can change", id, d.Status)
	}
	job, err := h.store.JobByID(nil, d.Namespace, d.JobID)
	if err != nil {
		return nil, nil, err
	}
	if job == nil {
		return nil, nil, state.NotFoundf("job %q of deployment %q", d.JobID, id)
	}
	return d, job, nil
}

// deploymentPromote serves POST /v1/deployment/promote/:deployment_id:
// promotes the canaries of every group (All) or of the named Groups, with
// an evaluation that moves the rollout on. A group whose canaries are not
// all healthy cannot be promoted (400).
func (h deploymentAPI) deploymentPromote(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var req state.DeploymentPromoteRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.All && len(req.Groups) > 0 {
		return nil, codec.BadRequest("Groups: give either All or a list of groups, not both")
	}
	d, job, err := h.activeDeployment(r, p, req.DeploymentID)
	if err != nil {
		return nil, err
	}
	if _, err := d.PromoteGroups(req.All, req.Groups, h.allocHealthy); err != nil {
		return nil, err
	}
	now := h.core.Now().UnixNano()
	ev := h.deploymentEval(job, d, now)
	_, index, err := h.core.Propose(w, r, store.DeploymentPromoteRequestType, &store.DeploymentPromoteRequest{
		DeploymentID: d.ID, All: req.All, Groups: req.Groups, Eval: ev, Now: now,
	})
	if err != nil {
		return nil, err
	}
	return &state.DeploymentUpdateResponse{EvalID: ev.ID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
}

// deploymentFail serves POST /v1/deployment/fail/:deployment_id: the
// deployment fails, and the job is evaluated (unpromoted canaries stop).
func (h deploymentAPI) deploymentFail(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	d, job, err := h.activeDeployment(r, p, "")
	if err != nil {
		return nil, err
	}
	autoRevert := false
	for _, g := range d.TaskGroups {
		autoRevert = autoRevert || g.AutoRevert
	}
	if !autoRevert || job.Version != d.JobVersion {
		return h.setDeploymentStatus(w, r, d, job, state.DeploymentStatusFailed, descDeploymentFailedByUser)
	}
	// As the watcher's failures: back to the latest stable version, in
	// the same command.
	versions, err := h.store.JobVersions(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	stable := state.LatestStableVersion(job, versions)
	if stable == nil {
		return h.setDeploymentStatus(w, r, d, job, state.DeploymentStatusFailed, descDeploymentFailedByUser+" - no stable job version to auto revert to")
	}
	now := h.core.Now().UnixNano()
	revert := stable.Copy()
	revert.Stop = false
	ev := h.newEval(revert, 0, state.EvalTriggerJobRegister, now)
	resp, index, err := h.core.Propose(w, r, store.DeploymentStatusUpdateRequestType, &store.DeploymentStatusUpdateRequest{
		Updates: []*store.DeploymentStatusUpdate{{DeploymentID: d.ID, Status: state.DeploymentStatusFailed,
			StatusDescription: fmt.Sprintf("%s - rolling back to job version %d", descDeploymentFailedByUser, stable.Version)}},
		Revert: &store.JobRegisterRequest{Job: revert, Eval: ev, EnforceIndex: true, JobModifyIndex: job.JobModifyIndex, Now: now},
		Now:    now,
	})
	if err != nil {
		return nil, err
	}
	v := stable.Version
	out := &state.DeploymentUpdateResponse{DeploymentModifyIndex: index, Index: index, RevertedJobVersion: &v}
	if rr := resp.(*store.DeploymentStatusUpdateResponse).Revert; rr != nil {
		out.EvalID, out.EvalCreateIndex = rr.EvalID, rr.EvalCreateIndex
	}
	return out, nil
}

// deploymentPause serves POST /v1/deployment/pause/:deployment_id: pause
// (no more replacements, no progress deadline) or resume.
func (h deploymentAPI) deploymentPause(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var req state.DeploymentPauseRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	d, job, err := h.activeDeployment(r, p, req.DeploymentID)
	if err != nil {
		return nil, err
	}
	if req.Pause {
		return h.setDeploymentStatus(w, r, d, job, state.DeploymentStatusPaused, descDeploymentPaused)
	}
	return h.setDeploymentStatus(w, r, d, job, state.DeploymentStatusRunning, descDeploymentResumed)
}

// setDeploymentStatus writes a deployment's status with an evaluation of
// its job.
func (h deploymentAPI) setDeploymentStatus(w http.ResponseWriter, r *http.Request, d *state.Deployment, job *state.Job, status, desc string) (any, error) {
	now := h.core.Now().UnixNano()
	ev := h.deploymentEval(job, d, now)
	_, index, err := h.core.Propose(w, r, store.DeploymentStatusUpdateRequestType, &store.DeploymentStatusUpdateRequest{
		Updates: []*store.DeploymentStatusUpdate{{DeploymentID: d.ID, Status: status, StatusDescription: desc}},
		Evals:   []*state.Evaluation{ev},
		Now:     now,
	})
	if err != nil {
		return nil, err
	}
	return &state.DeploymentUpdateResponse{EvalID: ev.ID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
}

// deploymentAllocHealth serves POST
// /v1/deployment/allocation-health/:deployment_id: an operator's verdict
// on allocations of the deployment (health_check "manual").
func (h deploymentAPI) deploymentAllocHealth(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var req state.DeploymentAllocHealthRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.HealthyAllocationIDs)+len(req.UnhealthyAllocationIDs) == 0 {
		return nil, codec.BadRequest("HealthyAllocationIDs: give at least one allocation, healthy or unhealthy")
	}
	d, job, err := h.activeDeployment(r, p, req.DeploymentID)
	if err != nil {
		return nil, err
	}
	var bad state.ValidationError
	for _, f := range []struct {
		field string
		ids   []string
	}{{"HealthyAllocationIDs", req.HealthyAllocationIDs}, {"UnhealthyAllocationIDs", req.UnhealthyAllocationIDs}} {
		field := f.field
		for i, id := range f.ids {
			a, err := h.store.AllocByID(nil, id)
			if err != nil {
				return nil, err
			}
			if a == nil || a.DeploymentID != d.ID {
				bad.Add(state.Fieldf(field, i, ""), "allocation %q is not part of deployment %q", id, d.ID)
			}
		}
	}
	if err := bad.Err(); err != nil {
		return nil, err
	}
	now := h.core.Now().UnixNano()
	ev := h.deploymentEval(job, d, now)
	_, index, err := h.core.Propose(w, r, store.DeploymentAllocHealthRequestType, &store.DeploymentAllocHealthRequest{
		DeploymentID: d.ID, Healthy: req.HealthyAllocationIDs, Unhealthy: req.UnhealthyAllocationIDs, Eval: ev, Now: now,
	})
	if err != nil {
		return nil, err
	}
	return &state.DeploymentUpdateResponse{EvalID: ev.ID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
}

// deploymentEval is an evaluation of a deployment's job.
func (h deploymentAPI) deploymentEval(job *state.Job, d *state.Deployment, now int64) *state.Evaluation {
	ev := h.newEval(job, 0, state.EvalTriggerDeploymentWatcher, now)
	ev.DeploymentID, ev.JobModifyIndex = d.ID, job.JobModifyIndex
	return ev
}

// allocHealthy reports whether an allocation is live and healthy in its
// deployment.
func (h deploymentAPI) allocHealthy(id string) bool {
	a, err := h.store.AllocByID(nil, id)
	return err == nil && a != nil && !a.Terminal() && a.DeploymentStatus != nil &&
		a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy
}
