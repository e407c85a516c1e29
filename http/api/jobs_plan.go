package api

import (
	"context"
	"net/http"
	"time"

	"github.com/schedhq/sched/state"
)

// DesiredUpdates counts what a plan does to one task group.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
}

// PlanAnnotations explain a plan, per task group.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
}

// JobPlanResponse is what registering a job would do (spec §4.17).
type JobPlanResponse struct {
	// Index is the state index the plan was computed at.
	Index uint64
	// NextPeriodicLaunch is when a periodic job would next launch; zero
	// for other jobs.
	NextPeriodicLaunch time.Time
	Warnings           string
	// Diff is the change from the registered job, when asked for, with
	// each group's Updates and each task's Annotations filled in.
	Diff *state.JobDiff
	// CreatedEvals are the evaluations the run would create.
	CreatedEvals []*state.Evaluation
	// JobModifyIndex is the registered job's (0 when new): register with
	// RegisterOptions{EnforceIndex: true, ModifyIndex: it} to apply
	// exactly what was planned.
	JobModifyIndex uint64
	// FailedTGAllocs holds, per group, the metrics of placements that
	// would fail.
	FailedTGAllocs map[string]*state.AllocMetric
	Annotations    *PlanAnnotations
}

// Plan asks the scheduler what registering job would do, writing
// nothing; diff asks for the change from the registered version.
func (j *Jobs) Plan(ctx context.Context, job *state.Job, diff, policyOverride bool, w *WriteOptions) (*JobPlanResponse, *WriteMeta, error) {
	body := struct {
		Job            *state.Job
		Diff           bool
		PolicyOverride bool
	}{job, diff, policyOverride}
	return send[*JobPlanResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", job.ID, "plan"), nil, w, body)
}

// EvalOptions tune an on-demand evaluation.
type EvalOptions struct {
	// ForceReschedule reschedules the job's failed allocations now,
	// ignoring their reschedule policy's attempts and delays.
	ForceReschedule bool
}

// JobEvaluateResponse is the answer to an evaluate.
type JobEvaluateResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}

// Evaluate creates an evaluation of a job now (spec §4.16).
func (j *Jobs) Evaluate(ctx context.Context, id string, opts EvalOptions, w *WriteOptions) (*JobEvaluateResponse, *WriteMeta, error) {
	body := struct {
		JobID       string
		EvalOptions EvalOptions
	}{id, opts}
	return send[*JobEvaluateResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", id, "evaluate"), nil, w, body)
}
