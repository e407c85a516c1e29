package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/schedhq/sched/state"
)

// Dispatch makes a child of the parameterized job id (spec §4 row 13).
// idempotencyToken, when set, makes a repeated dispatch answer the first
// child. The child's ID holds a slash; every call of this client escapes
// IDs, so it reads back as any other job.
func (j *Jobs) Dispatch(ctx context.Context, id string, req *state.DispatchRequest, idempotencyToken string, w *WriteOptions) (*state.JobDispatchResponse, *WriteMeta, error) {
	var params url.Values
	if idempotencyToken != "" {
		params = url.Values{"IdempotencyToken": {idempotencyToken}}
	}
	return send[*state.JobDispatchResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", id, "dispatch"), params, w, req)
}

// PeriodicForce launches a child of the periodic job id now (spec §4 row
// 18).
func (j *Jobs) PeriodicForce(ctx context.Context, id string, w *WriteOptions) (*state.PeriodicForceResponse, *WriteMeta, error) {
	return send[*state.PeriodicForceResponse](ctx, j.c, http.MethodPut, PathOf("v1", "job", id, "periodic", "force"), nil, w, nil)
}
