package jobs

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/go-bexpr"
	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// JobRegisterRequest is the body of POST /v1/jobs and POST /v1/job/:job_id
// (spec §4.2, §4.12).
type JobRegisterRequest struct {
	Job            *state.Job
	Submission     *state.JobSubmission
	EnforceIndex   bool
	EvalPriority   int
	JobModifyIndex uint64
	// PolicyOverride overrides soft-mandatory policies. No policy engine
	// runs yet, so it changes nothing beyond the capability check of the
	// identity issue.
	PolicyOverride bool
	PreserveCounts bool
}

// jobAPI serves /v1/jobs and /v1/job: register, reads, versions, children, deploy-side writes (revert, stable, scale), parse, validate, plan, evaluate.
type jobAPI struct{ *api }

func (h jobAPI) jobRoutes() {
	h.core.Route(http.MethodGet, "/v1/job/:job_id/actions", h.jobActions) // job_actions.go
	h.childRoutes()                                                       // job_children.go: dispatch, periodic force
	h.core.Route(http.MethodGet, "/v1/jobs", h.jobList)
	h.write("/v1/jobs", h.jobRegister)
	h.write("/v1/jobs/parse", h.jobParse)
	h.write("/v1/validate/job", h.jobValidate)

	h.core.Route(http.MethodGet, "/v1/job/:job_id", h.jobRead)
	h.write("/v1/job/:job_id", h.jobUpdate)
	h.core.Route(http.MethodDelete, "/v1/job/:job_id", h.jobStop)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/submission", h.jobSubmission)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/versions", h.jobVersions)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/allocations", h.jobAllocations)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/evaluations", h.jobEvaluations)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/deployments", h.jobDeployments)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/deployment", h.jobLatestDeployment)
	h.core.Route(http.MethodGet, "/v1/job/:job_id/summary", h.jobSummary)
}

// jobList serves GET /v1/jobs: prefix, namespace (with *), filter (a
// go-bexpr expression over the list entries), per_page and next_token
// pagination, and meta. The filter applies before pagination, so pages are
// full pages of matching jobs.
func (h jobAPI) jobList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	q := h.core.Query(r)
	prefix := q.Get("prefix")
	nextToken := q.Get("next_token")
	perPage, err := codec.IntParam(h.core.Query(r), "per_page", 0)
	if err != nil {
		return nil, err
	}
	if perPage < 0 {
		return nil, codec.BadRequest("per_page: must not be negative, got %d", perPage)
	}
	meta, err := codec.BoolParam(h.core.Query(r), "meta")
	if err != nil {
		return nil, err
	}
	var eval *bexpr.Evaluator
	if f := q.Get("filter"); f != "" {
		eval, err = bexpr.CreateEvaluator(f)
		if err != nil {
			return nil, codec.BadRequest("filter: %v", err)
		}
	}

	var out []*state.JobListStub
	var token string
	err = h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		out, token = make([]*state.JobListStub, 0), ""
		// One view for the jobs, their summaries and the index. Read from a
		// transaction each, a write landing in between gave an answer whose
		// index covered a summary it did not show, and the next blocking
		// read, asking past that index, then waited for its whole timeout
		// to show it.
		view, err := h.store.Snapshot()
		if err != nil {
			return 0, err
		}
		jobs, err := view.Jobs(ws, ns, prefix)
		if err != nil {
			return 0, err
		}
		allowed := h.core.NamespaceFilter(r, state.NamespaceCapabilityListJobs) // the core's ACL: namespace=* shows only permitted namespaces
		for _, j := range jobs {
			if allowed != nil && !allowed(j.Namespace) {
				continue
			}
			key := pageKey(ns, j.Namespace, j.ID)
			if nextToken != "" && beforeToken(ns, j, nextToken) {
				continue
			}
			summary, err := view.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return 0, err
			}
			stub := j.Stub(summary, meta)
			if eval != nil {
				ok, err := eval.Evaluate(stub)
				if err != nil {
					ok = false // a selector missing from this entry does not match
				}
				if !ok {
					continue
				}
			}
			if perPage > 0 && int64(len(out)) == perPage {
				token = key
				break
			}
			out = append(out, stub)
		}
		return max(view.Index("jobs"), view.Index("job_summary")), nil
	})
	if err != nil {
		return nil, err
	}
	if token != "" {
		w.Header().Set(codec.HeaderNextToken, token)
	}
	return out, nil
}

// pageKey is a job's pagination token: its ID within one namespace, and
// "<namespace>/<id>" when listing every namespace (namespace names cannot
// contain a slash, so the first slash ends the namespace).
func pageKey(requested, ns, id string) string {
	if requested == "*" {
		return ns + "/" + id
	}
	return id
}

// beforeToken reports whether job j comes before the page that token
// starts. The listing is ordered by namespace, then ID, so the comparison
// is on that pair: comparing "<namespace>/<id>" as one string would put
// "prod-eu/a" before "prod/b" ('-' sorts before '/') and repeat a page.
func beforeToken(requested string, j *state.Job, token string) bool {
	if requested != "*" {
		return j.ID < token
	}
	ns, id, _ := strings.Cut(token, "/")
	return cmp.Or(cmp.Compare(j.Namespace, ns), cmp.Compare(j.ID, id)) < 0
}

// jobRegister serves POST /v1/jobs.
func (h jobAPI) jobRegister(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return h.registerJob(w, r, "")
}

// jobUpdate serves POST /v1/job/:job_id: a register whose body must name
// the job of the path. It registers the job when it does not exist.
func (h jobAPI) jobUpdate(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return h.registerJob(w, r, p.ByName("job_id"))
}

func (h jobAPI) registerJob(w http.ResponseWriter, r *http.Request, pathID string) (any, error) {
	if err := h.checkRegistrationAllowed(r); err != nil {
		return nil, err
	}
	var req JobRegisterRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Job == nil {
		return nil, codec.BadRequest("Job: a job definition is required")
	}
	job := req.Job
	if pathID != "" && job.ID != pathID {
		return nil, codec.BadRequest("Job.ID: %q does not match the job ID in the path %q", job.ID, pathID)
	}
	if err := h.core.PlaceJob(r, job); err != nil {
		return nil, err
	}
	job.Canonicalize()
	if err := h.checkJob(job); err != nil {
		return nil, err
	}
	if req.EvalPriority != 0 && (req.EvalPriority < state.MinJobPriority || req.EvalPriority > state.MaxJobPriority) {
		return nil, codec.BadRequest("EvalPriority: must be between %d and %d, got %d", state.MinJobPriority, state.MaxJobPriority, req.EvalPriority)
	}

	var warnings []string
	sub, warn, err := h.checkSubmission(req.Submission, job)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		warnings = append(warnings, warn)
	}

	now := h.core.Now().UnixNano()
	cmd := &store.JobRegisterRequest{
		Job:            job,
		Submission:     sub,
		EnforceIndex:   req.EnforceIndex,
		JobModifyIndex: req.JobModifyIndex,
		PreserveCounts: req.PreserveCounts,
		Now:            now,
	}
	if !job.IsPeriodic() && !job.IsParameterized() {
		cmd.Eval = h.newEval(job, req.EvalPriority, state.EvalTriggerJobRegister, now)
	}
	resp, index, err := h.core.Propose(w, r, store.JobRegisterRequestType, cmd)
	if err != nil {
		return nil, err
	}
	out := resp.(*store.JobRegisterResponse)
	return &state.JobRegisterResponse{
		EvalID:          out.EvalID,
		EvalCreateIndex: out.EvalCreateIndex,
		JobModifyIndex:  out.JobModifyIndex,
		Warnings:        strings.Join(warnings, "\n"),
		Index:           index,
		KnownLeader:     h.core.KnownLeader(),
		LastContact:     h.core.LastContact().Milliseconds(),
	}, nil
}

// checkSubmission validates a supplied job source. A source over the size
// limit is dropped with a warning rather than failing the register: it is
// kept for reference only.
func (h jobAPI) checkSubmission(sub *state.JobSubmission, job *state.Job) (*state.JobSubmission, string, error) {
	if sub == nil {
		return nil, "", nil
	}
	switch sub.Format {
	case state.SubmissionFormatHCL2, state.SubmissionFormatHCL1, state.SubmissionFormatJSON:
	case "":
		return nil, "", codec.BadRequest("Submission.Format: required, one of hcl2, hcl1, json")
	default:
		return nil, "", codec.BadRequest("Submission.Format: %q is not one of hcl2, hcl1, json", sub.Format)
	}
	if sub.Source == "" {
		return nil, "", codec.BadRequest("Submission.Source: required when a submission is given")
	}
	if len(sub.Source) > h.cfg.MaxSubmissionBytes {
		return nil, fmt.Sprintf("job source of %d bytes exceeds the %d byte limit and was not stored", len(sub.Source), h.cfg.MaxSubmissionBytes), nil
	}
	c := *sub
	c.JobID, c.Namespace = job.ID, job.Namespace
	return &c, "", nil
}

// jobRead serves GET /v1/job/:job_id.
func (h jobAPI) jobRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var job *state.Job
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		job, err = h.store.JobByID(ws, ns, id)
		return h.maxIndex("jobs"), err
	})
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	return job, nil
}

// jobStop serves DELETE /v1/job/:job_id: purge, global (accepted; every job
// is single-region, so it changes nothing), eval_priority and
// no_shutdown_delay.
func (h jobAPI) jobStop(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	ns := h.core.Namespace(r)
	purge, err := codec.BoolParam(h.core.Query(r), "purge")
	if err != nil {
		return nil, err
	}
	if _, err := codec.BoolParam(h.core.Query(r), "global"); err != nil {
		return nil, err
	}
	noDelay, err := codec.BoolParam(h.core.Query(r), "no_shutdown_delay")
	if err != nil {
		return nil, err
	}
	prio, err := codec.IntParam(h.core.Query(r), "eval_priority", 0)
	if err != nil {
		return nil, err
	}
	if prio != 0 && (prio < state.MinJobPriority || prio > state.MaxJobPriority) {
		return nil, codec.BadRequest("eval_priority: must be between %d and %d, got %d", state.MinJobPriority, state.MaxJobPriority, prio)
	}
	job, err := h.store.JobByID(nil, ns, id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	now := h.core.Now().UnixNano()
	cmd := &store.JobDeregisterRequest{Namespace: ns, JobID: id, Purge: purge, NoShutdownDelay: noDelay, Now: now}
	if !job.IsPeriodic() && !job.IsParameterized() {
		cmd.Eval = h.newEval(job, int(prio), state.EvalTriggerJobDeregister, now)
	} else {
		// The children stop with their parent, each with its evaluation.
		children, err := h.store.Children(nil, ns, id)
		if err != nil {
			return nil, err
		}
		for _, c := range children {
			if c.Status != state.JobStatusDead {
				cmd.ChildEvals = append(cmd.ChildEvals, h.newEval(c, int(prio), state.EvalTriggerJobDeregister, now))
			}
		}
	}
	resp, index, err := h.core.Propose(w, r, store.JobDeregisterRequestType, cmd)
	if err != nil {
		return nil, err
	}
	out := resp.(*store.JobDeregisterResponse)
	return &state.JobDeregisterResponse{EvalID: out.EvalID, EvalCreateIndex: out.EvalCreateIndex, JobModifyIndex: out.JobModifyIndex, Index: index}, nil
}

// prefixFields puts prefix in front of every field path of a validation
// error, so a client learns "Job.TaskGroups[0].Count" rather than a path
// relative to some inner object.
func prefixFields(prefix string, err error) error {
	ve, ok := err.(*state.ValidationError)
	if !ok {
		return err
	}
	out := &state.ValidationError{Errors: make([]state.FieldError, len(ve.Errors))}
	for i, fe := range ve.Errors {
		if fe.Field == "" {
			fe.Field = prefix
		} else if !strings.HasPrefix(fe.Field, prefix+".") {
			fe.Field = prefix + "." + fe.Field
		}
		out.Errors[i] = fe
	}
	return out
}
