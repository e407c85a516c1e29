package api

import (
	"context"
	"net/http"

	"github.com/schedhq/sched/state"
)

// Plan asks the scheduler what registering job would do, writing
// nothing; diff asks for the change from the registered version.
func (j *Jobs) Plan(ctx context.Context, job *state.Job, diff, policyOverride bool, w *WriteOptions) (*state.JobPlanResponse, *WriteMeta, error) {
	body := struct {
		Job            *state.Job
		Diff           bool
		PolicyOverride bool
	}{job, diff, policyOverride}
	return send[*state.JobPlanResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", job.ID, "plan"), nil, w, body)
}

// Evaluate creates an evaluation of a job now (spec §4.16).
func (j *Jobs) Evaluate(ctx context.Context, id string, opts state.EvalOptions, w *WriteOptions) (*state.JobEvaluateResponse, *WriteMeta, error) {
	body := struct {
		JobID       string
		EvalOptions state.EvalOptions
	}{id, opts}
	return send[*state.JobEvaluateResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", id, "evaluate"), nil, w, body)
}
