package api

import (
	"context"
	"net/http"

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

// Promote promotes the canaries of every group of a deployment (all) or
// of the named groups.
func (d *Deployments) Promote(ctx context.Context, id string, all bool, groups []string, w *WriteOptions) (*state.DeploymentUpdateResponse, *WriteMeta, error) {
	body := state.DeploymentPromoteRequest{DeploymentID: id, All: all, Groups: groups}
	return send[*state.DeploymentUpdateResponse](ctx, d.c, http.MethodPut, PathOf("v1", "deployment", "promote", id), nil, w, body)
}

// Fail marks an active deployment failed.
func (d *Deployments) Fail(ctx context.Context, id string, w *WriteOptions) (*state.DeploymentUpdateResponse, *WriteMeta, error) {
	body := struct{ DeploymentID string }{id}
	return send[*state.DeploymentUpdateResponse](ctx, d.c, http.MethodPut, PathOf("v1", "deployment", "fail", id), nil, w, body)
}

// Pause pauses (pause true) or resumes an active deployment.
func (d *Deployments) Pause(ctx context.Context, id string, pause bool, w *WriteOptions) (*state.DeploymentUpdateResponse, *WriteMeta, error) {
	body := state.DeploymentPauseRequest{DeploymentID: id, Pause: pause}
	return send[*state.DeploymentUpdateResponse](ctx, d.c, http.MethodPut, PathOf("v1", "deployment", "pause", id), nil, w, body)
}

// SetAllocHealth sets the health of allocations of a deployment by hand.
func (d *Deployments) SetAllocHealth(ctx context.Context, id string, healthy, unhealthy []string, w *WriteOptions) (*state.DeploymentUpdateResponse, *WriteMeta, error) {
	body := state.DeploymentAllocHealthRequest{DeploymentID: id, HealthyAllocationIDs: healthy, UnhealthyAllocationIDs: unhealthy}
	return send[*state.DeploymentUpdateResponse](ctx, d.c, http.MethodPut, PathOf("v1", "deployment", "allocation-health", id), nil, w, body)
}
