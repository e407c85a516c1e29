package jobs

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// jobDeployRoutes registers revert, stable and scale (spec §4 rows 14,
// 15, 20 and 21).
func (h jobAPI) jobDeployRoutes() {
	h.write("/v1/job/:job_id/revert", h.jobRevert)
	h.write("/v1/job/:job_id/stable", h.jobStable)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/scale", h.jobScaleStatus)
	h.write("/v1/job/:job_id/scale", h.jobScale)
}

// checkBodyJobID checks a body's JobID against the path's.
func checkBodyJobID(bodyID, pathID string) error {
	switch bodyID {
	case "":
		return codec.BadRequest("JobID: required")
	case pathID:
		return nil
	}
	return codec.BadRequest("JobID: %q does not match the job ID in the path %q", bodyID, pathID)
}

// jobRevert serves POST /v1/job/:job_id/revert: the spec of JobVersion is
// registered again as a new version, with an evaluation. Reverting to the
// current version is a 400; a stale EnforcePriorVersion is a 409.
func (h jobAPI) jobRevert(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	if err := h.checkRegistrationAllowed(r); err != nil {
		return nil, err
	}
	id := p.ByName("job_id")
	var req state.JobRevertRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if err := checkBodyJobID(req.JobID, id); err != nil {
		return nil, err
	}
	ns := h.core.Namespace(r)
	cur, err := h.store.JobByID(nil, ns, id)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	if req.EnforcePriorVersion != nil && *req.EnforcePriorVersion != cur.Version {
		return nil, state.Conflictf("EnforcePriorVersion: job %q is at version %d, not %d", id, cur.Version, *req.EnforcePriorVersion)
	}
	if req.JobVersion == cur.Version {
		return nil, codec.BadRequest("JobVersion: %d is the job's current version", req.JobVersion)
	}
	target, err := h.store.JobByIDAndVersion(nil, ns, id, req.JobVersion)
	if err != nil {
		return nil, err
	}
	if target == nil {
		return nil, codec.BadRequest("JobVersion: job %q has no version %d", id, req.JobVersion)
	}
	job := target.Copy()
	job.Stop = false
	if err := h.cfg.JobLimits.CheckCounts(job); err != nil {
		// The servers' limits may have been lowered since that version
		// was registered: a revert is held to today's, as a register is.
		return nil, prefixFields("Job", err)
	}
	now := h.core.Now().UnixNano()
	cmd := &store.JobRegisterRequest{Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex, Now: now}
	if !job.IsPeriodic() && !job.IsParameterized() {
		cmd.Eval = h.newEval(job, 0, state.EvalTriggerJobRegister, now)
	}
	resp, index, err := h.core.Propose(w, r, store.JobRegisterRequestType, cmd)
	if err != nil {
		return nil, err
	}
	out := resp.(*store.JobRegisterResponse)
	return &state.JobRegisterResponse{
		EvalID: out.EvalID, EvalCreateIndex: out.EvalCreateIndex, JobModifyIndex: out.JobModifyIndex, Index: index,
		KnownLeader: h.core.KnownLeader(), LastContact: h.core.LastContact().Milliseconds(),
	}, nil
}

// jobStable serves POST /v1/job/:job_id/stable: marks a version stable
// or not (an auto-revert goes back to the newest stable version).
func (h jobAPI) jobStable(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var req state.JobStabilityRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if err := checkBodyJobID(req.JobID, id); err != nil {
		return nil, err
	}
	ns := h.core.Namespace(r)
	v, err := h.store.JobByIDAndVersion(nil, ns, id, req.JobVersion)
	if err != nil {
		return nil, err
	}
	if v == nil {
		if cur, err := h.store.JobByID(nil, ns, id); err != nil || cur == nil {
			return nil, cmpErr(err, state.NotFoundf("job %q", id))
		}
		return nil, codec.BadRequest("JobVersion: job %q has no version %d", id, req.JobVersion)
	}
	_, index, err := h.core.Propose(w, r, store.JobStabilityRequestType, &store.JobStabilityRequest{
		Namespace: ns, JobID: id, Version: req.JobVersion, Stable: req.Stable,
	})
	if err != nil {
		return nil, err
	}
	return &state.JobStabilityResponse{JobModifyIndex: index, Index: index}, nil
}

// cmpErr returns err when set, else fallback.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// jobScaleStatus serves GET /v1/job/:job_id/scale (blocking): per group,
// its count, what is placed, running and healthy, and its scaling events.
func (h jobAPI) jobScaleStatus(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var out *state.JobScaleStatus
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		out = nil
		job, err := h.store.JobByID(ws, ns, id)
		if err != nil || job == nil {
			return h.maxIndex(store.TableJobs), err
		}
		allocs, err := h.store.AllocsByJob(ws, ns, id, false)
		if err != nil {
			return 0, err
		}
		events, err := h.store.ScalingEventsByJob(ws, ns, id)
		if err != nil {
			return 0, err
		}
		out = scaleStatus(job, allocs, events)
		return h.maxIndex(store.TableJobs, store.TableAllocs, store.TableScalingEvents), nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	return out, nil
}

// scaleStatus computes a job's scale status.
func scaleStatus(job *state.Job, allocs []*state.Allocation, events *state.JobScalingEvents) *state.JobScaleStatus {
	out := &state.JobScaleStatus{
		JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex,
		JobModifyIndex: job.JobModifyIndex, JobStopped: job.Stop,
		TaskGroups: map[string]*state.TaskGroupScaleStatus{},
	}
	for _, tg := range job.TaskGroups {
		st := &state.TaskGroupScaleStatus{Desired: tg.Count, Events: []*state.ScalingEvent{}}
		if events != nil && events.ScalingEvents[tg.Name] != nil {
			st.Events = events.ScalingEvents[tg.Name]
		}
		out.TaskGroups[tg.Name] = st
	}
	for _, a := range allocs {
		st := out.TaskGroups[a.TaskGroup]
		if st == nil || a.Terminal() {
			continue
		}
		st.Placed++
		if a.ClientStatus == state.AllocClientStatusRunning {
			st.Running++
		}
		if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			if *a.DeploymentStatus.Healthy {
				st.Healthy++
			} else {
				st.Unhealthy++
			}
		}
	}
	return out
}

// jobScale serves POST /v1/job/:job_id/scale: with Count, a new version
// of the job with that group's count and an evaluation (400 while a
// deployment of the job is active); with Error, or a Message alone, only
// a scaling event. Exactly one of Message and Error must be given, except
// that a boolean Error true (what Nomad's Go client sends) marks the
// Message an error rather than standing for one.
func (h jobAPI) jobScale(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	if err := h.checkRegistrationAllowed(r); err != nil {
		return nil, err
	}
	id := p.ByName("job_id")
	var req state.JobScaleRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	group := req.Target["Group"]
	var bad state.ValidationError
	if group == "" {
		bad.Add("Target.Group", "required")
	}
	switch {
	case req.Message != "" && req.Error.Message != "":
		bad.Add("Message", "give exactly one of Message and Error (a string Error is the message)")
	case req.Message == "" && !req.Error.Set:
		bad.Add("Message", "give exactly one of Message and Error")
	}
	if req.Count != nil && *req.Count < 0 {
		bad.Add("Count", "must not be negative, got %d", *req.Count)
	}
	if req.Count != nil && req.Error.Set {
		bad.Add("Count", "an error event cannot change the count")
	}
	if err := bad.Err(); err != nil {
		return nil, err
	}
	ns := h.core.Namespace(r)
	job, err := h.store.JobByID(nil, ns, id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	tg := job.LookupTaskGroup(group)
	if tg == nil {
		return nil, codec.BadRequest("Target.Group: job %q has no task group %q", id, group)
	}
	if pol := tg.Scaling; req.Count != nil && pol != nil && pol.Enabled && (*req.Count < pol.Min || (pol.Max > 0 && *req.Count > pol.Max)) {
		return nil, codec.BadRequest("Count: %d is outside the group's scaling policy bounds [%d, %d]", *req.Count, pol.Min, pol.Max)
	}
	if req.Count != nil {
		if err := h.checkScaledCounts(job, group, *req.Count); err != nil {
			return nil, err
		}
	}
	if req.Count != nil {
		d, err := h.store.LatestDeploymentByJob(nil, ns, id)
		if err != nil {
			return nil, err
		}
		if d != nil && d.Active() {
			return nil, codec.BadRequest("Count: job scaling blocked due to active deployment %q", d.ID)
		}
	}
	msg := req.Message
	if req.Error.Set && req.Error.Message != "" {
		msg = req.Error.Message
	}
	now := h.core.Now().UnixNano()
	cmd := &store.JobScaleRequest{
		Namespace: ns, JobID: id, Group: group, Count: req.Count, Message: msg, Error: req.Error.Set, Meta: req.Meta,
		EnforceIndex: req.EnforceIndex, JobModifyIndex: req.JobModifyIndex, Now: now,
	}
	if req.Count != nil {
		cmd.Eval = h.newEval(job, 0, state.EvalTriggerScaling, now)
	}
	resp, index, err := h.core.Propose(w, r, store.JobScaleRequestType, cmd)
	if err != nil {
		return nil, err
	}
	out := resp.(*store.JobRegisterResponse)
	return &state.JobScaleResponse{
		EvalID: out.EvalID, EvalCreateIndex: out.EvalCreateIndex, JobModifyIndex: out.JobModifyIndex, Index: index,
		KnownLeader: h.core.KnownLeader(), LastContact: h.core.LastContact().Milliseconds(),
	}, nil
}
