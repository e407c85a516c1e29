package api

import (
	"context"

	"github.com/schedhq/sched/state"
)

// Deployments is the client of /v1/deployments and /v1/deployment/:id.
type Deployments struct{ c *Client }

// Deployments returns the deployment endpoints.
func (c *Client) Deployments() *Deployments { return &Deployments{c: c} }

// List returns the deployments of the namespace ("*" for all), filtered
// by q's Prefix and Filter.
func (d *Deployments) List(ctx context.Context, q *QueryOptions) ([]*state.Deployment, *QueryMeta, error) {
	return get[[]*state.Deployment](ctx, d.c, "/v1/deployments", nil, q)
}

// Info returns a deployment of the namespace.
func (d *Deployments) Info(ctx context.Context, id string, q *QueryOptions) (*state.Deployment, *QueryMeta, error) {
	return get[*state.Deployment](ctx, d.c, PathOf("v1", "deployment", id), nil, q)
}

// Allocations returns a deployment's allocations.
func (d *Deployments) Allocations(ctx context.Context, id string, q *QueryOptions) ([]*state.AllocListStub, *QueryMeta, error) {
	return get[[]*state.AllocListStub](ctx, d.c, PathOf("v1", "deployment", "allocations", id), nil, q)
}
