package jobs

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// JobEvaluateRequest is the body of POST /v1/job/:job_id/evaluate (spec
// §4.16).
type JobEvaluateRequest struct {
	JobID       string
	EvalOptions state.EvalOptions
}

// jobEvaluate serves POST /v1/job/:job_id/evaluate: it creates an
// evaluation of the job (TriggeredBy job-evaluate) and, with
// EvalOptions.ForceReschedule, marks the job's failed allocations
// DesiredTransition.ForceReschedule, in one write. The body names the job
// (JobID, which must match the path); an empty body is the deprecated
// form (spec §9) and means no options. Periodic and parameterized jobs
// are templates and cannot be evaluated (400).
func (h jobAPI) jobEvaluate(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var req JobEvaluateRequest
	empty, err := codec.BodyIsEmpty(r)
	if err != nil {
		return nil, err
	}
	if !empty {
		if err := codec.DecodeBody(r, &req); err != nil {
			return nil, err
		}
		switch req.JobID {
		case "":
			return nil, codec.BadRequest("JobID: required")
		case id:
		default:
			return nil, codec.BadRequest("JobID: %q does not match the job ID in the path %q", req.JobID, id)
		}
	}
	ns := h.core.Namespace(r)
	job, err := h.store.JobByID(nil, ns, id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	if job.IsPeriodic() || job.IsParameterized() {
		return nil, codec.BadRequest("job_id: job %q is periodic or parameterized: it is a template and cannot be evaluated", id)
	}
	now := h.core.Now().UnixNano()
	cmd := &store.JobEvaluateRequest{
		Namespace: ns, JobID: id, ForceReschedule: req.EvalOptions.ForceReschedule, Now: now,
		Eval: h.newEval(job, 0, state.EvalTriggerJobEvaluate, now),
	}
	resp, index, err := h.core.Propose(w, r, store.JobEvaluateRequestType, cmd)
	if err != nil {
		return nil, err
	}
	out := resp.(*store.JobEvaluateResponse)
	return &state.JobEvaluateResponse{EvalID: out.EvalID, EvalCreateIndex: out.EvalCreateIndex, JobModifyIndex: out.JobModifyIndex, Index: index}, nil
}
