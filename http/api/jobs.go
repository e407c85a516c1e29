package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/schedhq/sched/state"
)

// Jobs is the client of /v1/jobs and /v1/job/:id.
type Jobs struct{ c *Client }

// Jobs returns the jobs endpoints.
func (c *Client) Jobs() *Jobs { return &Jobs{c: c} }

// RegisterOptions tune a job registration. The zero value (or nil) is an
// unconditional register.
type RegisterOptions struct {
	// EnforceIndex makes the register a check-and-set: it applies only when
	// the job's current JobModifyIndex equals ModifyIndex, and ModifyIndex 0
	// means only when the job does not exist yet.
	EnforceIndex bool
	ModifyIndex  uint64
	// EvalPriority overrides the priority of the evaluation the register
	// creates; 0 uses the job's priority.
	EvalPriority int
	// PolicyOverride overrides soft-mandatory policies.
	PolicyOverride bool
	// PreserveCounts keeps the counts of existing task groups instead of
	// those in the new specification, so a redeploy does not undo scaling.
	PreserveCounts bool
	// Submission is the source the job came from, kept by the server for
	// reference only.
	Submission *state.JobSubmission
}

// registerRequest is the body of PUT /v1/jobs and PUT /v1/job/:id.
type registerRequest struct {
	Job            *state.Job
	Submission     *state.JobSubmission `json:",omitempty"`
	EnforceIndex   bool
	JobModifyIndex uint64
	EvalPriority   int
	PolicyOverride bool
	PreserveCounts bool
}

// Register creates or updates a job and its evaluation.
func (j *Jobs) Register(ctx context.Context, job *state.Job, opts *RegisterOptions, w *WriteOptions) (*state.JobRegisterResponse, *WriteMeta, error) {
	body := registerRequest{Job: job}
	if opts != nil {
		body.Submission = opts.Submission
		body.EnforceIndex = opts.EnforceIndex
		body.JobModifyIndex = opts.ModifyIndex
		body.EvalPriority = opts.EvalPriority
		body.PolicyOverride = opts.PolicyOverride
		body.PreserveCounts = opts.PreserveCounts
	}
	return send[*state.JobRegisterResponse](ctx, j.c, http.MethodPut, "/v1/jobs", nil, w, body)
}

// List returns the jobs of the namespace, filtered by q's Prefix and Filter.
func (j *Jobs) List(ctx context.Context, q *QueryOptions) ([]*state.JobListStub, *QueryMeta, error) {
	return get[[]*state.JobListStub](ctx, j.c, "/v1/jobs", nil, q)
}

// parseRequest is the body of PUT /v1/jobs/parse.
type parseRequest struct {
	JobHCL       string
	Canonicalize bool
	Variables    string
	HCLv1        bool
	Filename     string `json:",omitempty"`
}

// Parse asks the server to turn an HCL job specification into a job.
// vars holds variable values in var-file syntax; canonicalize fills the
// defaults the server would fill on register; hclv1 selects the legacy
// parser.
func (j *Jobs) Parse(ctx context.Context, hcl, vars string, canonicalize, hclv1 bool, w *WriteOptions) (*state.Job, error) {
	return j.ParseFile(ctx, "", hcl, vars, canonicalize, hclv1, w)
}

// ParseFile is Parse with the name of the source file, which the server's
// error positions then name (filename:line,column) instead of input.hcl.
func (j *Jobs) ParseFile(ctx context.Context, filename, hcl, vars string, canonicalize, hclv1 bool, w *WriteOptions) (*state.Job, error) {
	body := parseRequest{JobHCL: hcl, Variables: vars, Canonicalize: canonicalize, HCLv1: hclv1, Filename: filename}
	job, _, err := send[*state.Job](ctx, j.c, http.MethodPut, "/v1/jobs/parse", nil, w, body)
	return job, err
}

// Validate checks a job without registering it.
func (j *Jobs) Validate(ctx context.Context, job *state.Job, w *WriteOptions) (*state.JobValidateResponse, error) {
	body := struct{ Job *state.Job }{job}
	resp, _, err := send[*state.JobValidateResponse](ctx, j.c, http.MethodPut, "/v1/validate/job", nil, w, body)
	return resp, err
}

// Info returns the current version of a job.
func (j *Jobs) Info(ctx context.Context, id string, q *QueryOptions) (*state.Job, *QueryMeta, error) {
	return get[*state.Job](ctx, j.c, PathOf("v1", "job", id), nil, q)
}

// Versions returns every retained version of a job, newest first, with
// their diffs when diffs is true.
func (j *Jobs) Versions(ctx context.Context, id string, diffs bool, q *QueryOptions) (*state.JobVersionsResponse, *QueryMeta, error) {
	return get[*state.JobVersionsResponse](ctx, j.c, PathOf("v1", "job", id, "versions"), boolParams("diffs", diffs), q)
}

// Submission returns the source a job version was registered from.
func (j *Jobs) Submission(ctx context.Context, id string, version uint64, q *QueryOptions) (*state.JobSubmission, *QueryMeta, error) {
	params := url.Values{"version": {strconv.FormatUint(version, 10)}}
	return get[*state.JobSubmission](ctx, j.c, PathOf("v1", "job", id, "submission"), params, q)
}

// Allocations returns the list entries of a job's allocations (without
// their job; AllocatedResources only with the query parameter
// resources=true); all includes those of an earlier job that had the same
// ID.
func (j *Jobs) Allocations(ctx context.Context, id string, all bool, q *QueryOptions) ([]*state.AllocListStub, *QueryMeta, error) {
	return get[[]*state.AllocListStub](ctx, j.c, PathOf("v1", "job", id, "allocations"), boolParams("all", all), q)
}

// Evaluations returns a job's evaluations.
func (j *Jobs) Evaluations(ctx context.Context, id string, q *QueryOptions) ([]*state.Evaluation, *QueryMeta, error) {
	return get[[]*state.Evaluation](ctx, j.c, PathOf("v1", "job", id, "evaluations"), nil, q)
}

// Deployments returns a job's deployments; all includes those of an
// earlier job that had the same ID.
func (j *Jobs) Deployments(ctx context.Context, id string, all bool, q *QueryOptions) ([]*state.Deployment, *QueryMeta, error) {
	return get[[]*state.Deployment](ctx, j.c, PathOf("v1", "job", id, "deployments"), boolParams("all", all), q)
}

// LatestDeployment returns a job's most recent deployment, or nil when it
// has none.
func (j *Jobs) LatestDeployment(ctx context.Context, id string, q *QueryOptions) (*state.Deployment, *QueryMeta, error) {
	return get[*state.Deployment](ctx, j.c, PathOf("v1", "job", id, "deployment"), nil, q)
}

// Summary returns a job's allocation counts per task group.
func (j *Jobs) Summary(ctx context.Context, id string, q *QueryOptions) (*state.JobSummary, *QueryMeta, error) {
	return get[*state.JobSummary](ctx, j.c, PathOf("v1", "job", id, "summary"), nil, q)
}

// DeregisterOptions tune a job stop. The zero value (or nil) stops the job
// in this region, keeping it until garbage collection.
type DeregisterOptions struct {
	// Global stops a multiregion job in every region.
	Global bool
	// EvalPriority overrides the priority of the stop evaluation.
	EvalPriority int
	// NoShutdownDelay skips group and task shutdown delays, so stopping
	// allocations may see failed connections.
	NoShutdownDelay bool
}

// Deregister stops a job; purge deletes it at once instead of leaving it
// for garbage collection.
func (j *Jobs) Deregister(ctx context.Context, id string, purge bool, opts *DeregisterOptions, w *WriteOptions) (*state.JobDeregisterResponse, *WriteMeta, error) {
	params := boolParams("purge", purge)
	if opts != nil {
		if opts.Global {
			params.Set("global", "true")
		}
		if opts.EvalPriority != 0 {
			params.Set("eval_priority", strconv.Itoa(opts.EvalPriority))
		}
		if opts.NoShutdownDelay {
			params.Set("no_shutdown_delay", "true")
		}
	}
	return send[*state.JobDeregisterResponse](ctx, j.c, http.MethodDelete, PathOf("v1", "job", id), params, w, nil)
}

// boolParams returns {key: "true"} when on, an empty set otherwise: a false
// flag is left out rather than sent, which every server reads the same way.
func boolParams(key string, on bool) url.Values {
	params := url.Values{}
	if on {
		params.Set(key, "true")
	}
	return params
}
