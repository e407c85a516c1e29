package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/schedhq/sched/state"
)

// Namespaces is the client of /v1/namespaces and /v1/namespace/:name.
type Namespaces struct{ c *Client }

// Namespaces returns the namespace endpoints.
func (c *Client) Namespaces() *Namespaces { return &Namespaces{c: c} }

// List returns every namespace the token may see.
func (n *Namespaces) List(ctx context.Context, q *QueryOptions) ([]*state.Namespace, *QueryMeta, error) {
	return get[[]*state.Namespace](ctx, n.c, "/v1/namespaces", nil, q)
}

// Info returns one namespace.
func (n *Namespaces) Info(ctx context.Context, name string, q *QueryOptions) (*state.Namespace, *QueryMeta, error) {
	return get[*state.Namespace](ctx, n.c, PathOf("v1", "namespace", name), nil, q)
}

// Register creates ns or replaces the namespace of the same name.
func (n *Namespaces) Register(ctx context.Context, ns *state.Namespace, w *WriteOptions) (*WriteMeta, error) {
	if ns == nil || ns.Name == "" {
		return nil, errors.New("api: namespace name is required")
	}
	return n.c.write(ctx, http.MethodPut, PathOf("v1", "namespace", ns.Name), nil, w, ns, nil)
}

// Delete deletes a namespace. The server refuses `default` and namespaces
// that still hold jobs.
func (n *Namespaces) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return n.c.write(ctx, http.MethodDelete, PathOf("v1", "namespace", name), nil, w, nil, nil)
}
