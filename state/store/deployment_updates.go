package store

import (
	"slices"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// Deployment commands (types 100-109; see commands.go): what the
// deployment watcher on the leader and the deployment and job endpoints
// write. None may be skipped by an older server: each changes what the
// scheduler decides.
const (
	DeploymentStatusUpdateRequestType MessageType = 100
	DeploymentPromoteRequestType      MessageType = 101
	DeploymentAllocHealthRequestType  MessageType = 102
	JobStabilityRequestType           MessageType = 103
	JobScaleRequestType               MessageType = 104
)

// deploymentCommand returns the command of type t in this area's range,
// if any.
func deploymentCommand(t MessageType) (command, bool) {
	switch t {
	case DeploymentStatusUpdateRequestType:
		return handler(applyDeploymentStatusUpdate), true
	case DeploymentPromoteRequestType:
		return handler(applyDeploymentPromote), true
	case DeploymentAllocHealthRequestType:
		return handler(applyDeploymentAllocHealth), true
	case JobStabilityRequestType:
		return handler(applyJobStability), true
	case JobScaleRequestType:
		return handler(applyJobScale), true
	}
	return command{}, false
}

// DeploymentStatusUpdate sets one deployment's status.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}

// JobVersionRef names one version of a job.
type JobVersionRef struct {
	Namespace string
	JobID     string
	Version   uint64
}

// DeploymentStatusUpdateRequest is one batch of the deployment watcher (or
// a fail, pause or resume from the API): status changes, job versions to
// mark stable (a successful deployment's), evaluations to create (the next
// step of rollouts), and at most one revert, all in one command.
//
// Resuming a paused deployment (paused to running) moves each group's
// RequireProgressBy to at least Now plus its progress deadline. An update
// of a deployment that no longer exists or is no longer active is skipped (it finished between the leader's decision and the commit),
// as is a stable mark of a version that no longer exists. Revert is a
// register of an earlier version's spec as a new version (auto-revert),
// applied as a JobRegisterRequest would be, after the updates.
type DeploymentStatusUpdateRequest struct {
	Updates []*DeploymentStatusUpdate
	Stable  []JobVersionRef
	Evals   []*state.Evaluation
	Revert  *JobRegisterRequest
	// Now is the leader's clock (Unix nanoseconds) for ModifyTime.
	Now int64
}

// DeploymentStatusUpdateResponse is what Apply returns for a
// DeploymentStatusUpdateRequest.
type DeploymentStatusUpdateResponse struct {
	// Revert is the revert's register response, nil without a revert.
	Revert *JobRegisterResponse
}

// validDeploymentStatus lists the statuses an update may set.
var validDeploymentStatus = []string{
	state.DeploymentStatusRunning, state.DeploymentStatusPaused, state.DeploymentStatusFailed,
	state.DeploymentStatusSuccessful, state.DeploymentStatusCancelled,
}

// applyDeploymentStatusUpdate writes a watcher batch; see
// DeploymentStatusUpdateRequest.
func applyDeploymentStatusUpdate(t *writeTxn, req *DeploymentStatusUpdateRequest) (any, error) {
	for i, u := range req.Updates {
		if u == nil || u.DeploymentID == "" {
			return nil, state.Invalidf(state.Fieldf("Updates", i, "DeploymentID"), "missing deployment ID")
		}
		if !slices.Contains(validDeploymentStatus, u.Status) {
			return nil, state.Invalidf(state.Fieldf("Updates", i, "Status"), "unknown deployment status %q", u.Status)
		}
		d, err := first[*state.Deployment](nil, t.Txn, TableDeployment, indexID, u.DeploymentID)
		if err != nil {
			return nil, err
		}
		if d == nil || !d.Active() {
			continue
		}
		next := d.Copy()
		if d.Status == state.DeploymentStatusPaused && u.Status == state.DeploymentStatusRunning {
			// Resumed: the time spent paused does not count against the
			// progress deadline.
			for _, ds := range next.TaskGroups {
				if ds.ProgressDeadline > 0 {
					ds.RequireProgressBy = laterOf(ds.RequireProgressBy, timeOf(req.Now+ds.ProgressDeadline))
				}
			}
		}
		next.Status, next.StatusDescription = u.Status, u.StatusDescription
		next.ModifyIndex, next.ModifyTime = t.index, req.Now
		if err := t.insert(TableDeployment, next); err != nil {
			return nil, err
		}
	}
	for _, ref := range req.Stable {
		if err := setJobStability(t, ref, true); err != nil {
			return nil, err
		}
	}
	if err := upsertEvals(t, "Evals", req.Evals); err != nil {
		return nil, err
	}
	resp := &DeploymentStatusUpdateResponse{}
	if req.Revert != nil {
		r, err := applyJobRegister(t, req.Revert)
		if err != nil {
			return nil, prefixField("Revert", err)
		}
		resp.Revert = r.(*JobRegisterResponse)
	}
	return resp, nil
}

// DeploymentPromoteRequest promotes the canaries of a deployment's groups:
// every group with canaries (All) or the named Groups. It fails, changing
// nothing, when the deployment is unknown or not active, a named group is
// not in it or has no canaries, or a group to promote has fewer healthy
// canaries than it desires. Eval (the next step of the rollout) is created
// with it.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	Eval         *state.Evaluation
	Now          int64
}

// applyDeploymentPromote promotes canaries; see DeploymentPromoteRequest.
func applyDeploymentPromote(t *writeTxn, req *DeploymentPromoteRequest) (any, error) {
	d, err := activeDeployment(t, req.DeploymentID)
	if err != nil {
		return nil, err
	}
	var readErr error
	groups, err := d.PromoteGroups(req.All, req.Groups, func(id string) bool {
		a, err := t.allocByID(id)
		if err != nil {
			readErr = err
		}
		return a != nil && !a.Terminal() && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy
	})
	if readErr != nil {
		return nil, readErr
	}
	if err != nil {
		return nil, err
	}
	next := d.Copy()
	for _, name := range groups {
		next.TaskGroups[name].Promoted = true
	}
	next.StatusDescription = "Deployment is running"
	for _, ds := range next.TaskGroups {
		if ds.DesiredCanaries > 0 && !ds.Promoted {
			next.StatusDescription = "Deployment is running but requires manual promotion"
		}
	}
	next.ModifyIndex, next.ModifyTime = t.index, req.Now
	if err := t.insert(TableDeployment, next); err != nil {
		return nil, err
	}
	if req.Eval != nil {
		if err := upsertEvals(t, "Eval", []*state.Evaluation{req.Eval}); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// DeploymentAllocHealthRequest sets allocations' health in a deployment by
// hand (health_check "manual", or an operator's verdict). Every allocation
// must exist and belong to the deployment, which must be active; Timestamp
// (the leader's clock, Unix nanoseconds) is the health's time.
type DeploymentAllocHealthRequest struct {
	DeploymentID string
	Healthy      []string
	Unhealthy    []string
	Eval         *state.Evaluation
	Now          int64
}

// applyDeploymentAllocHealth records manual health; see
// DeploymentAllocHealthRequest.
func applyDeploymentAllocHealth(t *writeTxn, req *DeploymentAllocHealthRequest) (any, error) {
	d, err := activeDeployment(t, req.DeploymentID)
	if err != nil {
		return nil, err
	}
	if len(req.Healthy)+len(req.Unhealthy) == 0 {
		return nil, state.Invalidf("HealthyAllocationIDs", "no allocation given")
	}
	set := func(field string, ids []string, healthy bool) error {
		for i, id := range ids {
			old, err := t.allocByID(id)
			if err != nil {
				return err
			}
			if old == nil || old.DeploymentID != d.ID {
				return state.Invalidf(state.Fieldf(field, i, ""), "allocation %q is not part of deployment %q", id, d.ID)
			}
			next := *old
			ds := &state.AllocDeploymentStatus{}
			if old.DeploymentStatus != nil {
				*ds = *old.DeploymentStatus
			}
			h := healthy
			ds.Healthy, ds.Timestamp, ds.ModifyIndex = &h, timeOf(req.Now), t.index
			next.DeploymentStatus = ds
			next.ModifyIndex, next.ModifyTime = t.index, req.Now
			if err := t.insert(TableAllocs, &next); err != nil {
				return err
			}
			if err := updateDeploymentWithAlloc(t, old, &next, req.Now); err != nil {
				return err
			}
		}
		return nil
	}
	if err := set("HealthyAllocationIDs", req.Healthy, true); err != nil {
		return nil, err
	}
	if err := set("UnhealthyAllocationIDs", req.Unhealthy, false); err != nil {
		return nil, err
	}
	if req.Eval != nil {
		if err := upsertEvals(t, "Eval", []*state.Evaluation{req.Eval}); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// JobStabilityRequest marks one version of a job stable or not.
type JobStabilityRequest struct {
	Namespace string
	JobID     string
	Version   uint64
	Stable    bool
}

// applyJobStability sets a version's stability; it fails when the version
// does not exist.
func applyJobStability(t *writeTxn, req *JobStabilityRequest) (any, error) {
	v, err := first[*state.Job](nil, t.Txn, TableJobVersion, indexID, req.Namespace, req.JobID, req.Version)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, state.NotFoundf("job %q version %d in namespace %q", req.JobID, req.Version, req.Namespace)
	}
	return nil, setJobStability(t, JobVersionRef{req.Namespace, req.JobID, req.Version}, req.Stable)
}

// setJobStability marks a stored version (and the current job, when it is
// that version) stable or not; an unknown version is skipped.
func setJobStability(t *writeTxn, ref JobVersionRef, stable bool) error {
	v, err := first[*state.Job](nil, t.Txn, TableJobVersion, indexID, ref.Namespace, ref.JobID, ref.Version)
	if err != nil || v == nil {
		return err
	}
	next := v.Copy()
	next.Stable = stable
	next.ModifyIndex = t.index
	if err := t.insert(TableJobVersion, next); err != nil {
		return err
	}
	cur, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, ref.Namespace, ref.JobID)
	if err != nil || cur == nil || cur.Version != ref.Version || cur.CreateIndex != v.CreateIndex {
		return err
	}
	c := cur.Copy()
	c.Stable = stable
	c.ModifyIndex = t.index
	return t.insert(TableJobs, c)
}

// activeDeployment returns a deployment that must exist and be active.
func activeDeployment(t *writeTxn, id string) (*state.Deployment, error) {
	d, err := first[*state.Deployment](nil, t.Txn, TableDeployment, indexID, id)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, state.NotFoundf("deployment %q", id)
	}
	if !d.Active() {
		return nil, state.Invalidf("DeploymentID", "deployment %q is %s, not active", id, d.Status)
	}
	return d, nil
}

// updateDeploymentWithAlloc counts an allocation write in its deployment:
// placed when the allocation is first written with that deployment (a
// canary is also listed in PlacedCanaries), healthy or unhealthy when its
// health is first set there. A healthy allocation moves the group's
// progress deadline to its health time plus ProgressDeadline.
func updateDeploymentWithAlloc(t *writeTxn, old, a *state.Allocation, now int64) error {
	if a.DeploymentID == "" {
		return nil
	}
	placed := old == nil || old.DeploymentID != a.DeploymentID
	var was, is *bool
	if !placed && old.DeploymentStatus != nil {
		was = old.DeploymentStatus.Healthy
	}
	if a.DeploymentStatus != nil {
		is = a.DeploymentStatus.Healthy
	}
	judged := is != nil && was == nil
	if !placed && !judged {
		return nil
	}
	d, err := first[*state.Deployment](nil, t.Txn, TableDeployment, indexID, a.DeploymentID)
	if err != nil || d == nil || d.TaskGroups[a.TaskGroup] == nil {
		return err
	}
	// This command's copy, written already, is counted in place rather
	// than copied and written again for each allocation of a plan: a
	// deployment copy and its memdb path per placement were a tenth of
	// the leader's garbage at C1M. Nobody sees it before the commit.
	next, own := d, t.deployments[d]
	if !own {
		next = d.Copy()
	}
	ds := next.TaskGroups[a.TaskGroup]
	if placed {
		ds.PlacedAllocs++
		if a.DeploymentStatus != nil && a.DeploymentStatus.Canary && !slices.Contains(ds.PlacedCanaries, a.ID) {
			ds.PlacedCanaries = append(ds.PlacedCanaries, a.ID)
		}
	}
	if judged {
		if *is {
			ds.HealthyAllocs++
			if ds.ProgressDeadline > 0 {
				ds.RequireProgressBy = laterOf(ds.RequireProgressBy, a.DeploymentStatus.Timestamp.Add(time.Duration(ds.ProgressDeadline)).UTC())
			}
		} else {
			ds.UnhealthyAllocs++
		}
	}
	next.ModifyIndex, next.ModifyTime = t.index, now
	if own {
		t.touched[TableDeployment] = true
		t.record(TableDeployment, next, false)
		return nil
	}
	if t.deployments == nil {
		t.deployments = map[*state.Deployment]bool{}
	}
	t.deployments[next] = true
	return t.insert(TableDeployment, next)
}

// cancelDeployments cancels a job's active deployments of versions other
// than keep (all of them when keep is negative).
func cancelDeployments(t *writeTxn, ns, jobID string, keep int64, desc string, now int64) error {
	ds, err := list[*state.Deployment](nil, t.Txn, nil, TableDeployment, indexJob, ns, jobID)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if !d.Active() || (keep >= 0 && d.JobVersion == uint64(keep)) {
			continue
		}
		next := d.Copy()
		next.Status, next.StatusDescription = state.DeploymentStatusCancelled, desc
		next.ModifyIndex, next.ModifyTime = t.index, now
		if err := t.insert(TableDeployment, next); err != nil {
			return err
		}
	}
	return nil
}

// deploymentTables are the tables of this area.
func deploymentTables() []tableDef {
	return []tableDef{{
		name: TableScalingEvents,
		indexes: map[string]keyFunc{
			indexID: func(o any) []any { e := o.(*state.JobScalingEvents); return []any{e.Namespace, e.JobID} },
		},
		newRow: func() any { return new(state.JobScalingEvents) },
	}}
}

// JobScaleRequest scales one task group (spec §4.21): with Count, a new
// job version with the group at that count is registered with Eval, as a
// JobRegisterRequest would (EnforceIndex and JobModifyIndex are its
// check-and-set); without, only the event is recorded (an autoscaler's
// message or error). Either way a scaling event is kept for the group.
//
// It fails, changing nothing, when the job or group does not exist, the
// job is stopped or a template, or a Count is given while the job's
// latest deployment is active.
type JobScaleRequest struct {
	Namespace      string
	JobID          string
	Group          string
	Count          *int64
	Message        string
	Error          bool
	Meta           map[string]any
	EnforceIndex   bool
	JobModifyIndex uint64
	Eval           *state.Evaluation
	// Now is the leader's clock (Unix nanoseconds).
	Now int64
}

// applyJobScale scales a group; see JobScaleRequest. It returns a
// *JobRegisterResponse (without eval when nothing was registered).
func applyJobScale(t *writeTxn, req *JobScaleRequest) (any, error) {
	job, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, req.Namespace, req.JobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q in namespace %q", req.JobID, req.Namespace)
	}
	tg := job.LookupTaskGroup(req.Group)
	if tg == nil {
		return nil, state.Invalidf("Target.Group", "job %q has no task group %q", req.JobID, req.Group)
	}
	resp := &JobRegisterResponse{JobModifyIndex: job.JobModifyIndex, Version: job.Version, Index: t.index}
	ev := &state.ScalingEvent{
		Time: req.Now, Count: req.Count, PreviousCount: int64(tg.Count), Message: req.Message,
		Error: req.Error, Meta: req.Meta, CreateIndex: t.index,
	}
	if req.Count != nil {
		switch {
		case job.Stop:
			return nil, state.Invalidf("JobID", "job %q is stopped; register it again before scaling", job.ID)
		case job.IsPeriodic() || job.IsParameterized():
			return nil, state.Invalidf("JobID", "job %q is periodic or parameterized and cannot be scaled", job.ID)
		}
		d, err := latestDeployment(t, job)
		if err != nil {
			return nil, err
		}
		if d != nil && d.Active() {
			return nil, state.Invalidf("Count", "job scaling blocked due to active deployment %q", d.ID)
		}
		next := job.Copy()
		next.LookupTaskGroup(req.Group).Count = int(*req.Count)
		r, err := applyJobRegister(t, &JobRegisterRequest{
			Job: next, Eval: req.Eval, EnforceIndex: req.EnforceIndex, JobModifyIndex: req.JobModifyIndex, Now: req.Now,
		})
		if err != nil {
			return nil, err
		}
		resp = r.(*JobRegisterResponse)
		if resp.EvalID != "" {
			id := resp.EvalID
			ev.EvalID = &id
		}
	}
	return resp, addScalingEvent(t, job, req.Group, ev)
}

// latestDeployment returns the job's most recently created deployment.
func latestDeployment(t *writeTxn, job *state.Job) (*state.Deployment, error) {
	ds, err := list[*state.Deployment](nil, t.Txn, nil, TableDeployment, indexJob, job.Namespace, job.ID)
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

// addScalingEvent keeps ev as the group's newest event.
func addScalingEvent(t *writeTxn, job *state.Job, group string, ev *state.ScalingEvent) error {
	old, err := first[*state.JobScalingEvents](nil, t.Txn, TableScalingEvents, indexID, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	next := &state.JobScalingEvents{Namespace: job.Namespace, JobID: job.ID, ScalingEvents: map[string][]*state.ScalingEvent{}}
	if old != nil {
		for g, evs := range old.ScalingEvents {
			next.ScalingEvents[g] = evs
		}
	}
	evs := append([]*state.ScalingEvent{ev}, next.ScalingEvents[group]...)
	next.ScalingEvents[group] = evs[:min(len(evs), state.MaxScalingEventsPerGroup)]
	next.ModifyIndex = t.index
	return t.insert(TableScalingEvents, next)
}

// ScalingEventsByJob returns a job's scaling events, or nil.
func (r reader) ScalingEventsByJob(ws memdb.WatchSet, ns, jobID string) (*state.JobScalingEvents, error) {
	return first[*state.JobScalingEvents](ws, r.txn(), TableScalingEvents, indexID, ns, jobID)
}

// laterOf returns the later of two times.
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
