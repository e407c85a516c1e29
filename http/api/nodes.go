package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/schedhq/sched/state"
)

// Nodes is the client of /v1/nodes and /v1/node/:id: what client agents
// use to register, heartbeat, learn their work and report on it, and what
// operators use to read nodes, change their eligibility and drain them.
type Nodes struct{ c *Client }

// Nodes returns the node endpoints.
func (c *Client) Nodes() *Nodes { return &Nodes{c: c} }

// List returns the nodes, filtered by q's Prefix and Filter.
func (n *Nodes) List(ctx context.Context, q *QueryOptions) ([]*state.NodeListStub, *QueryMeta, error) {
	return get[[]*state.NodeListStub](ctx, n.c, "/v1/nodes", nil, q)
}

// Info returns a node; id may be a unique prefix of its ID.
func (n *Nodes) Info(ctx context.Context, id string, q *QueryOptions) (*state.Node, *QueryMeta, error) {
	return get[*state.Node](ctx, n.c, PathOf("v1", "node", id), nil, q)
}

// Allocations returns every allocation placed on a node, with its job.
// With q.WaitIndex it blocks until they change: how a client learns its
// work.
func (n *Nodes) Allocations(ctx context.Context, id string, q *QueryOptions) ([]*state.Allocation, *QueryMeta, error) {
	return get[[]*state.Allocation](ctx, n.c, PathOf("v1", "node", id, "allocations"), nil, q)
}

// AllocationChanges returns the ModifyIndex of every allocation on a node,
// and whole (with their job) those modified after since: with since the
// index of its previous answer, a client reads each allocation once per
// change. With q.WaitIndex it blocks until the node's allocations change.
// With serverChanges, every index is AllocModifyIndex, so only what the
// servers changed counts (server_changes=true): what a client agent asks.
func (n *Nodes) AllocationChanges(ctx context.Context, id string, since uint64, serverChanges bool, q *QueryOptions) (*state.NodeAllocChanges, *QueryMeta, error) {
	params := url.Values{}
	if since > 0 {
		params.Set("since", strconv.FormatUint(since, 10))
	}
	if serverChanges {
		params.Set("server_changes", "true")
	}
	return get[*state.NodeAllocChanges](ctx, n.c, PathOf("v1", "node", id, "allocations", "changes"), params, q)
}

// AllocationChangesShared is AllocationChanges with serverChanges, asking
// the servers to send each job once (shared_jobs=true): an allocation
// without its job takes that of the previous allocation of the same job
// ID in the answer, which this fills in, so allocations of one job version
// share one *state.Job. A server that ignores the parameter sends every
// job, which reads the same.
//
// Like AllocationDelta, it asks for no placement metrics (metrics=false).
func (n *Nodes) AllocationChangesShared(ctx context.Context, id string, since uint64, q *QueryOptions) (*state.NodeAllocChanges, *QueryMeta, error) {
	params := url.Values{"server_changes": {"true"}, "shared_jobs": {"true"}, "metrics": {"false"}}
	if since > 0 {
		params.Set("since", strconv.FormatUint(since, 10))
	}
	out, meta, err := get[*state.NodeAllocChanges](ctx, n.c, PathOf("v1", "node", id, "allocations", "changes"), params, q)
	if err == nil && out != nil {
		FillSharedJobs(out.Changed)
	}
	return out, meta, err
}

// AllocationDelta is AllocationChangesShared asking for an answer in
// proportion to the changes (delta=true): with since above 0, Allocs is
// nil, Removed names the allocations that left the node since, and Count
// is how many it holds (state.NodeAllocChanges), unless the servers could
// not tell what left, or ignore the parameter: then Allocs names every
// allocation, as AllocationChangesShared's answer does.
//
// It asks for the allocations without their placement metrics
// (metrics=false), which a client agent never reads; a server that
// ignores the parameter sends them.
func (n *Nodes) AllocationDelta(ctx context.Context, id string, since uint64, q *QueryOptions) (*state.NodeAllocChanges, *QueryMeta, error) {
	params := url.Values{"server_changes": {"true"}, "shared_jobs": {"true"}, "delta": {"true"}, "metrics": {"false"}}
	if since > 0 {
		params.Set("since", strconv.FormatUint(since, 10))
	}
	out, meta, err := get[*state.NodeAllocChanges](ctx, n.c, PathOf("v1", "node", id, "allocations", "changes"), params, q)
	if err == nil && out != nil {
		FillSharedJobs(out.Changed)
	}
	return out, meta, err
}

// FillSharedJobs gives each allocation without a job the job of the
// previous allocation of the same namespace and job ID in allocs (the
// shared_jobs=true form of a node's allocation changes). An allocation
// with none before it keeps none.
func FillSharedJobs(allocs []*state.Allocation) {
	type jobRef struct{ ns, id string }
	last := map[jobRef]*state.Job{}
	for _, a := range allocs {
		k := jobRef{a.Namespace, a.JobID}
		if a.Job == nil {
			a.Job = last[k]
		} else {
			last[k] = a.Job
		}
	}
}

// nodeRegistration is a node as a register sends it: state.Node keeps
// SecretID out of JSON so that reads never show it, so it travels here.
type nodeRegistration struct {
	*state.Node
	SecretID string `json:",omitempty"`
}

// Register registers (or re-registers) node; node.SecretID, when set,
// proves the client's identity on later registers. The answer carries the
// heartbeat TTL.
func (n *Nodes) Register(ctx context.Context, node *state.Node, w *WriteOptions) (*state.NodeUpdateResponse, *WriteMeta, error) {
	if node == nil {
		return nil, nil, errors.New("api: register: node is nil")
	}
	body := struct{ Node nodeRegistration }{nodeRegistration{Node: node, SecretID: node.SecretID}}
	return send[*state.NodeUpdateResponse](ctx, n.c, http.MethodPut, "/v1/node/register", nil, w, body)
}

// Heartbeat tells the leader the node is alive and returns the TTL within
// which it must heartbeat again.
func (n *Nodes) Heartbeat(ctx context.Context, id string, w *WriteOptions) (*state.NodeUpdateResponse, *WriteMeta, error) {
	return send[*state.NodeUpdateResponse](ctx, n.c, http.MethodPut, PathOf("v1", "node", id, "heartbeat"), nil, w, nil)
}

// UpdateStatus sets a node's status (initializing, ready, down or
// disconnected).
func (n *Nodes) UpdateStatus(ctx context.Context, id, status, description string, w *WriteOptions) (*state.NodeUpdateResponse, *WriteMeta, error) {
	body := struct{ Status, StatusDescription string }{status, description}
	return send[*state.NodeUpdateResponse](ctx, n.c, http.MethodPut, PathOf("v1", "node", id, "status"), nil, w, body)
}

// ToggleEligibility makes a node eligible or ineligible for new
// placements. A draining node cannot be made eligible.
func (n *Nodes) ToggleEligibility(ctx context.Context, id string, eligible bool, w *WriteOptions) (*state.NodeUpdateResponse, *WriteMeta, error) {
	e := state.NodeSchedulingIneligible
	if eligible {
		e = state.NodeSchedulingEligible
	}
	body := struct{ Eligibility string }{e}
	return send[*state.NodeUpdateResponse](ctx, n.c, http.MethodPut, PathOf("v1", "node", id, "eligibility"), nil, w, body)
}

// UpdateDrain starts or changes a node's drain (spec non-nil) or cancels
// it (spec nil; markEligible then makes the node eligible again).
func (n *Nodes) UpdateDrain(ctx context.Context, id string, spec *state.DrainSpec, markEligible bool, w *WriteOptions) (*state.NodeUpdateResponse, *WriteMeta, error) {
	body := struct {
		DrainSpec    *state.DrainSpec
		MarkEligible bool
	}{spec, markEligible}
	return send[*state.NodeUpdateResponse](ctx, n.c, http.MethodPut, PathOf("v1", "node", id, "drain"), nil, w, body)
}

// UpdateAllocs reports the status of allocations running on node id.
func (n *Nodes) UpdateAllocs(ctx context.Context, id string, allocs []*state.AllocClientUpdate, w *WriteOptions) (*state.NodeAllocsUpdateResponse, *WriteMeta, error) {
	body := struct{ Allocs []*state.AllocClientUpdate }{allocs}
	return send[*state.NodeAllocsUpdateResponse](ctx, n.c, http.MethodPut, PathOf("v1", "node", id, "allocations"), nil, w, body)
}

// NodePools is the client of /v1/node/pools and /v1/node/pool/:name.
type NodePools struct{ c *Client }

// NodePools returns the node pool endpoints.
func (c *Client) NodePools() *NodePools { return &NodePools{c: c} }

// List returns the node pools, filtered by q's Prefix and Filter.
func (p *NodePools) List(ctx context.Context, q *QueryOptions) ([]*state.NodePool, *QueryMeta, error) {
	return get[[]*state.NodePool](ctx, p.c, "/v1/node/pools", nil, q)
}

// Info returns a node pool.
func (p *NodePools) Info(ctx context.Context, name string, q *QueryOptions) (*state.NodePool, *QueryMeta, error) {
	return get[*state.NodePool](ctx, p.c, PathOf("v1", "node", "pool", name), nil, q)
}

// Nodes returns the nodes of a pool (every node for "all").
func (p *NodePools) Nodes(ctx context.Context, name string, q *QueryOptions) ([]*state.NodeListStub, *QueryMeta, error) {
	return get[[]*state.NodeListStub](ctx, p.c, PathOf("v1", "node", "pool", name, "nodes"), nil, q)
}

// Register creates or updates a node pool. The built-in pools "default"
// and "all" cannot be changed.
func (p *NodePools) Register(ctx context.Context, pool *state.NodePool, w *WriteOptions) (*WriteMeta, error) {
	return p.c.write(ctx, http.MethodPut, PathOf("v1", "node", "pool", pool.Name), nil, w, pool, nil)
}

// Delete deletes a node pool that no node and no live job uses.
func (p *NodePools) Delete(ctx context.Context, name string, w *WriteOptions) (*WriteMeta, error) {
	return p.c.write(ctx, http.MethodDelete, PathOf("v1", "node", "pool", name), nil, w, nil, nil)
}
