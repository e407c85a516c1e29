package api

import (
	"context"
	"net/http"

	"github.com/schedhq/sched/state"
)

// Revert registers version's spec of a job again as a new version (spec
// §4.14). enforcePrior, when not nil, must be the job's current version.
func (j *Jobs) Revert(ctx context.Context, id string, version uint64, enforcePrior *uint64, w *WriteOptions) (*state.JobRegisterResponse, *WriteMeta, error) {
	body := state.JobRevertRequest{JobID: id, JobVersion: version, EnforcePriorVersion: enforcePrior}
	return send[*state.JobRegisterResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", id, "revert"), nil, w, body)
}

// Stable marks a version of a job stable or not (spec §4.15).
func (j *Jobs) Stable(ctx context.Context, id string, version uint64, stable bool, w *WriteOptions) (*state.JobStabilityResponse, *WriteMeta, error) {
	body := state.JobStabilityRequest{JobID: id, JobVersion: version, Stable: stable}
	return send[*state.JobStabilityResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", id, "stable"), nil, w, body)
}

// ScaleStatus returns a job's per-group counts and scaling events (spec
// §4.20).
func (j *Jobs) ScaleStatus(ctx context.Context, id string, q *QueryOptions) (*state.JobScaleStatus, *QueryMeta, error) {
	return get[*state.JobScaleStatus](ctx, j.c, PathOf("v1", "job", id, "scale"), nil, q)
}

// Scale sends a scale request for one group of a job (spec §4.21); the
// group goes in req.Target["Group"].
func (j *Jobs) Scale(ctx context.Context, id string, req *state.JobScaleRequest, w *WriteOptions) (*state.JobScaleResponse, *WriteMeta, error) {
	return send[*state.JobScaleResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", id, "scale"), nil, w, req)
}
