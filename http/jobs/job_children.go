package jobs

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Dispatch and periodic force make child jobs (spec §4 rows 13 and 18).
// The leader builds the child and its evaluation here; the command checks
// the parent again in the same transaction (store/children.go).

func (h jobAPI) childRoutes() {
	h.write("/v1/job/:job_id/dispatch", h.jobDispatch)
	h.write("/v1/job/:job_id/periodic/force", h.jobPeriodicForce)
}

// parentJob reads the job a child is launched from, or 404s.
func (h jobAPI) parentJob(r *http.Request, p httprouter.Params) (*state.Job, error) {
	id := p.ByName("job_id")
	job, err := h.store.JobByID(nil, h.core.Namespace(r), id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	return job, nil
}

// jobDispatch serves POST /v1/job/:job_id/dispatch: a new child of a
// parameterized job, with the request's payload (base64 in JSON, 16 KiB
// at most decoded) and meta checked against the job's rules. The query's
// IdempotencyToken (or idempotency_token, as Nomad's Go client sends it)
// makes a repeated dispatch answer the first child.
func (h jobAPI) jobDispatch(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	if err := h.checkRegistrationAllowed(r); err != nil {
		return nil, err
	}
	var req state.DispatchRequest
	empty, err := codec.BodyIsEmpty(r)
	if err != nil {
		return nil, err
	}
	if !empty {
		if err := codec.DecodeBody(r, &req); err != nil {
			return nil, err
		}
	}
	parent, err := h.parentJob(r, p)
	if err != nil {
		return nil, err
	}
	if parent.Stop {
		return nil, codec.BadRequest("job %q is stopped: it cannot be dispatched", parent.ID)
	}
	if err := parent.CheckDispatch(&req); err != nil {
		return nil, err
	}
	q := h.core.Query(r)
	token := q.Get("IdempotencyToken")
	if token == "" {
		token = q.Get("idempotency_token")
	}
	now := h.core.Now()
	var suffix [4]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand.Read never fails
	child := parent.Dispatch(state.DispatchChildID(parent.ID, req.IdPrefixTemplate, now, hex.EncodeToString(suffix[:])), &req, token)
	if err := h.cfg.JobLimits.CheckCounts(child); err != nil {
		// The parent passed the limits when it was registered; they may
		// have been lowered since.
		return nil, prefixFields("Job", err)
	}
	cmd := &store.JobDispatchRequest{Child: child, Now: now.UnixNano(),
		Eval: h.newEval(child, 0, state.EvalTriggerJobDispatch, now.UnixNano())}
	resp, index, err := h.core.Propose(w, r, store.JobDispatchRequestType, cmd)
	if err != nil {
		return nil, err
	}
	out := resp.(*store.JobDispatchResponse)
	return &state.JobDispatchResponse{DispatchedJobID: out.DispatchedJobID, EvalID: out.EvalID,
		EvalCreateIndex: out.EvalCreateIndex, JobCreateIndex: out.JobCreateIndex, Index: index}, nil
}

// jobPeriodicForce serves POST /v1/job/:job_id/periodic/force: a child
// of a periodic job launched now, whatever its schedule (400 for a job
// that is not periodic).
func (h jobAPI) jobPeriodicForce(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	parent, err := h.parentJob(r, p)
	if err != nil {
		return nil, err
	}
	if !parent.IsPeriodic() {
		return nil, codec.BadRequest("job %q is not periodic", parent.ID)
	}
	if parent.Stop {
		return nil, codec.BadRequest("job %q is stopped: it cannot be launched", parent.ID)
	}
	now := h.core.Now()
	// A child IDs its launch to the second: when the schedule launched
	// in this second already, the forced child takes the next free one.
	id := state.PeriodicChildID(parent.ID, now)
	for i := 1; i < 60; i++ {
		taken, err := h.store.JobByID(nil, parent.Namespace, id)
		if err != nil {
			return nil, err
		}
		if taken == nil {
			break
		}
		id = state.PeriodicChildID(parent.ID, now.Add(time.Duration(i)*time.Second))
	}
	child := parent.NewChild(id)
	cmd := &store.PeriodicLaunchRequest{Child: child, Launch: now.UnixNano(), Force: true, Now: now.UnixNano(),
		Eval: h.newEval(child, 0, state.EvalTriggerPeriodicJob, now.UnixNano())}
	resp, index, err := h.core.Propose(w, r, store.PeriodicLaunchRequestType, cmd)
	if err != nil {
		return nil, err
	}
	out := resp.(*store.JobRegisterResponse)
	return &state.PeriodicForceResponse{EvalID: out.EvalID, EvalCreateIndex: out.EvalCreateIndex, Index: index}, nil
}
