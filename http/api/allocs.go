package api

import (
	"context"

	"github.com/schedhq/sched/state"
)

// Allocations is the client of /v1/allocations and /v1/allocation/:id.
type Allocations struct{ c *Client }

// Allocations returns the allocation endpoints.
func (c *Client) Allocations() *Allocations { return &Allocations{c: c} }

// List returns the allocations of the namespace ("*" for all), filtered
// by q's Prefix and Filter.
func (a *Allocations) List(ctx context.Context, q *QueryOptions) ([]*state.AllocListStub, *QueryMeta, error) {
	return get[[]*state.AllocListStub](ctx, a.c, "/v1/allocations", nil, q)
}

// Info returns an allocation of the namespace, with its job.
func (a *Allocations) Info(ctx context.Context, id string, q *QueryOptions) (*state.Allocation, *QueryMeta, error) {
	return get[*state.Allocation](ctx, a.c, PathOf("v1", "allocation", id), nil, q)
}
