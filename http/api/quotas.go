package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/schedhq/sched/state"
)

// Quotas is the client of the namespace quota endpoints: /v1/quotas,
// /v1/quota/:name, /v1/quota/usage/:name and /v1/quota-usages.
type Quotas struct{ c *Client }

// Quotas returns the quota endpoints.
func (c *Client) Quotas() *Quotas { return &Quotas{c: c} }

// List returns every quota specification (quota:read).
func (q *Quotas) List(ctx context.Context, opts *QueryOptions) ([]*state.QuotaSpec, *QueryMeta, error) {
	return get[[]*state.QuotaSpec](ctx, q.c, "/v1/quotas", nil, opts)
}

// Info returns one quota specification.
func (q *Quotas) Info(ctx context.Context, name string, opts *QueryOptions) (*state.QuotaSpec, *QueryMeta, error) {
	return get[*state.QuotaSpec](ctx, q.c, PathOf("v1", "quota", name), nil, opts)
}

// Usage returns what the namespaces of one quota use, beside its limits.
func (q *Quotas) Usage(ctx context.Context, name string, opts *QueryOptions) (*state.QuotaUsage, *QueryMeta, error) {
	return get[*state.QuotaUsage](ctx, q.c, PathOf("v1", "quota", "usage", name), nil, opts)
}

// ListUsage returns the usage of every quota.
func (q *Quotas) ListUsage(ctx context.Context, opts *QueryOptions) ([]*state.QuotaUsage, *QueryMeta, error) {
	return get[[]*state.QuotaUsage](ctx, q.c, "/v1/quota-usages", nil, opts)
}

// Register creates spec or replaces the quota of the same name (a
// management token).
func (q *Quotas) Register(ctx context.Context, spec *state.QuotaSpec, w *WriteOptions) (*WriteMeta, error) {
	if spec == nil || spec.Name == "" {
		return nil, errors.New("api: quota name is required")
	}
	return q.c.write(ctx, http.MethodPut, PathOf("v1", "quota", spec.Name), nil, w, spec, nil)
}

// Delete deletes a quota. The server refuses one a namespace still names.
func (q *Quotas) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return q.c.write(ctx, http.MethodDelete, PathOf("v1", "quota", name), nil, w, nil, nil)
}
