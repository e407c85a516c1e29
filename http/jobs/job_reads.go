package jobs

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// jobSubmission serves GET /v1/job/:job_id/submission?version=N. The
// version is required; a version with no stored source is a 404.
func (h jobAPI) jobSubmission(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	if h.core.Query(r).Get("version") == "" {
		return nil, codec.BadRequest("version: required query parameter")
	}
	v, err := codec.IntParam(h.core.Query(r), "version", 0)
	if err != nil {
		return nil, err
	}
	if v < 0 {
		return nil, codec.BadRequest("version: must not be negative, got %d", v)
	}
	var sub *state.JobSubmission
	err = h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		sub, err = h.store.JobSubmission(ws, ns, id, uint64(v))
		return h.maxIndex("job_submission"), err
	})
	if err != nil {
		return nil, err
	}
	if sub == nil {
		return nil, state.NotFoundf("job %q has no source for version %d", id, v)
	}
	return sub, nil
}

// jobVersions serves GET /v1/job/:job_id/versions, newest first; with
// diffs=true, Diffs[i] is the change from Versions[i+1] to Versions[i].
func (h jobAPI) jobVersions(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	withDiffs, err := codec.BoolParam(h.core.Query(r), "diffs")
	if err != nil {
		return nil, err
	}
	var versions []*state.Job
	var index uint64
	err = h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		versions, err = h.store.JobVersions(ws, ns, id)
		index = h.maxIndex("job_version")
		return index, err
	})
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, state.NotFoundf("job %q", id)
	}
	out := &state.JobVersionsResponse{
		Versions:    versions,
		Index:       index,
		KnownLeader: h.core.KnownLeader(),
		LastContact: h.core.LastContact().Milliseconds(),
	}
	if withDiffs {
		out.Diffs = make([]*state.JobDiff, 0, len(versions)-1)
		for i := 0; i+1 < len(versions); i++ {
			d, err := versions[i+1].Diff(versions[i], false)
			if err != nil {
				return nil, err
			}
			out.Diffs = append(out.Diffs, d)
		}
	}
	return out, nil
}

// jobAllocations serves GET /v1/job/:job_id/allocations. Like Nomad, an
// unknown job has no allocations (200, empty list) rather than a 404, so a
// reader can watch a job that is about to be registered.
func (h jobAPI) jobAllocations(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	all, err := codec.BoolParam(h.core.Query(r), "all")
	if err != nil {
		return nil, err
	}
	so, err := parseStubOptions(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	var out []*state.AllocListStub
	err = h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		allocs, err := h.store.AllocsByJob(ws, ns, id, all)
		out = allocStubs(allocs, so)
		return h.maxIndex("allocs"), err
	})
	return out, err
}

// jobEvaluations serves GET /v1/job/:job_id/evaluations.
func (h jobAPI) jobEvaluations(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var out []*state.Evaluation
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		out, err = h.store.EvalsByJob(ws, ns, id)
		return h.maxIndex("evals"), err
	})
	queue := &queueView{h: h.api} // eval_queue.go
	for i, e := range out {
		out[i] = queue.decorate(e)
	}
	return nonNil(out), err
}

// jobDeployments serves GET /v1/job/:job_id/deployments.
func (h jobAPI) jobDeployments(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	all, err := codec.BoolParam(h.core.Query(r), "all")
	if err != nil {
		return nil, err
	}
	var out []*state.Deployment
	err = h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		out, err = h.store.DeploymentsByJob(ws, ns, id, all)
		return h.maxIndex("deployment"), err
	})
	return nonNil(out), err
}

// jobLatestDeployment serves GET /v1/job/:job_id/deployment: the most
// recent deployment, or JSON null when the job has none.
func (h jobAPI) jobLatestDeployment(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var out *state.Deployment
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		out, err = h.store.LatestDeploymentByJob(ws, ns, id)
		return h.maxIndex("deployment"), err
	})
	if err != nil || out == nil {
		return nil, err
	}
	return out, nil
}

// jobSummary serves GET /v1/job/:job_id/summary.
func (h jobAPI) jobSummary(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var out *state.JobSummary
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		out, err = h.store.JobSummaryByID(ws, ns, id)
		return h.maxIndex("job_summary"), err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	return out, nil
}
