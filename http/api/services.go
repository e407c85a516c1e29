package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/schedhq/sched/state"
)

// Services is the client of the built-in service catalog: /v1/services,
// /v1/service/:name and, for client agents, the node-scoped writes under
// /v1/node/:node_id/services.
type Services struct{ c *Client }

// Services returns the service catalog endpoints.
func (c *Client) Services() *Services { return &Services{c: c} }

// List returns the registered services, grouped by namespace (q.Namespace
// "*" lists every namespace the token may read).
func (s *Services) List(ctx context.Context, q *QueryOptions) ([]*state.ServiceListStub, *QueryMeta, error) {
	return get[[]*state.ServiceListStub](ctx, s.c, "/v1/services", nil, q)
}

// Get returns the registered instances of one service. With q.WaitIndex it
// blocks until they change.
func (s *Services) Get(ctx context.Context, name string, q *QueryOptions) ([]*state.ServiceRegistration, *QueryMeta, error) {
	return get[[]*state.ServiceRegistration](ctx, s.c, PathOf("v1", "service", name), nil, q)
}

// Delete deletes one registered instance of a service, as an operator
// would remove an entry its client left behind.
func (s *Services) Delete(ctx context.Context, name, id string, w *WriteOptions) (*WriteMeta, error) {
	return s.c.write(ctx, http.MethodDelete, PathOf("v1", "service", name, id), nil, w, nil, nil)
}

// Services returns the registered service entries of a job's allocations
// (spec §4 row 22). With q.WaitIndex it blocks until they change.
func (j *Jobs) Services(ctx context.Context, id string, q *QueryOptions) ([]*state.ServiceRegistration, *QueryMeta, error) {
	return get[[]*state.ServiceRegistration](ctx, j.c, PathOf("v1", "job", id, "services"), nil, q)
}

// RegisterServices creates or updates service entries of allocations that
// run on node id. The servers fill NodeID, Namespace and JobID from the
// allocation; entries of allocations that no longer exist are skipped.
// Client agents call it with their node's SecretID as the token.
func (n *Nodes) RegisterServices(ctx context.Context, id string, regs []*state.ServiceRegistration, w *WriteOptions) (*state.ServiceRegistrationsResponse, *WriteMeta, error) {
	if len(regs) == 0 {
		return nil, nil, errors.New("api: register services: no entries")
	}
	body := struct{ Services []*state.ServiceRegistration }{regs}
	return send[*state.ServiceRegistrationsResponse](ctx, n.c, http.MethodPut, PathOf("v1", "node", id, "services"), nil, w, body)
}

// DeregisterServices deletes the service entries of node id named by ids,
// and every entry of the allocations allocIDs. Unknown IDs are ignored, so
// a retried delete succeeds.
func (n *Nodes) DeregisterServices(ctx context.Context, id string, ids, allocIDs []string, w *WriteOptions) (*state.ServiceRegistrationsResponse, *WriteMeta, error) {
	if len(ids) == 0 && len(allocIDs) == 0 {
		return nil, nil, errors.New("api: deregister services: no IDs or allocation IDs")
	}
	params := url.Values{}
	for _, v := range ids {
		params.Add("id", v)
	}
	for _, v := range allocIDs {
		params.Add("alloc_id", v)
	}
	return send[*state.ServiceRegistrationsResponse](ctx, n.c, http.MethodDelete, PathOf("v1", "node", id, "services"), params, w, nil)
}
