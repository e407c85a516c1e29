package api

import (
	"context"

	"github.com/schedhq/sched/state"
)

// Evaluations is the client of /v1/evaluations and /v1/evaluation/:id.
type Evaluations struct{ c *Client }

// Evaluations returns the evaluation endpoints.
func (c *Client) Evaluations() *Evaluations { return &Evaluations{c: c} }

// List returns the evaluations of the namespace ("*" for all), filtered
// by q's Prefix and Filter; q.Params may add "job" (a job ID) and
// "status".
func (e *Evaluations) List(ctx context.Context, q *QueryOptions) ([]*state.Evaluation, *QueryMeta, error) {
	return get[[]*state.Evaluation](ctx, e.c, "/v1/evaluations", nil, q)
}

// Info returns an evaluation of the namespace.
func (e *Evaluations) Info(ctx context.Context, id string, q *QueryOptions) (*state.Evaluation, *QueryMeta, error) {
	return get[*state.Evaluation](ctx, e.c, PathOf("v1", "evaluation", id), nil, q)
}

// Allocations returns the allocations an evaluation placed; none for an
// evaluation the server does not know (yet).
func (e *Evaluations) Allocations(ctx context.Context, id string, q *QueryOptions) ([]*state.AllocListStub, *QueryMeta, error) {
	return get[[]*state.AllocListStub](ctx, e.c, PathOf("v1", "evaluation", id, "allocations"), nil, q)
}
