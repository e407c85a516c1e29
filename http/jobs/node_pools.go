package jobs

import (
	"net/http"
	"strings"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Node pools group nodes; a job runs in one pool (or `all`). The
// built-in pools `default` and `all` always exist and cannot be changed or
// deleted, as in Nomad; any other pool is created by an upsert or by the
// first node that registers into it.

// maxPoolDescription bounds a node pool's description, as Nomad does.
const maxPoolDescription = 256

// nodePoolRoutes registers the node pool endpoints.
func (h nodeAPI) nodePoolRoutes() {
	h.core.Route(http.MethodGet, "/v1/node/pools", h.nodePoolList)
	h.write("/v1/node/pools", h.nodePoolUpsert)
	h.core.Route(http.MethodGet, "/v1/node/pool/:pool_name", h.nodePoolRead)
	h.write("/v1/node/pool/:pool_name", h.nodePoolUpsert)
	h.core.Route(http.MethodDelete, "/v1/node/pool/:pool_name", h.nodePoolDelete)
	h.core.Route(http.MethodGet, "/v1/node/pool/:pool_name/nodes", h.nodePoolNodes)
}

// nodePoolList serves GET /v1/node/pools: prefix, filter (over the pool),
// per_page and next_token (a pool name).
func (h nodeAPI) nodePoolList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	opts, err := parseListOptions(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	var pg *page[*state.NodePool]
	err = h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		pg = newPage[*state.NodePool](opts)
		pools, err := h.store.NodePools(ws)
		if err != nil {
			return 0, err
		}
		for _, p := range pools {
			if !strings.HasPrefix(p.Name, opts.Prefix) {
				continue
			}
			if !pg.add(p.Name, p) {
				break
			}
		}
		return h.maxIndex(store.TableNodePools), nil
	})
	if err != nil {
		return nil, err
	}
	return pg.finish(w), nil
}

// nodePoolRead serves GET /v1/node/pool/:pool_name.
func (h nodeAPI) nodePoolRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return readNamed(h.api, w, r, "node pool", p.ByName("pool_name"), h.store.NodePoolByName, store.TableNodePools)
}

// nodePoolNodes serves GET /v1/node/pool/:pool_name/nodes: the pool's
// nodes (every node for `all`), as list entries, with the list
// parameters of GET /v1/nodes.
func (h nodeAPI) nodePoolNodes(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("pool_name")
	opts, err := parseListOptions(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	withResources, err := codec.BoolParam(h.core.Query(r), "resources")
	if err != nil {
		return nil, err
	}
	withAttrs, err := codec.BoolParam(h.core.Query(r), "os")
	if err != nil {
		return nil, err
	}
	var pg *page[*state.NodeListStub]
	err = h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		pg = newPage[*state.NodeListStub](opts)
		pool, err := h.store.NodePoolByName(ws, name)
		if err != nil {
			return 0, err
		}
		if pool == nil {
			return 0, state.NotFoundf("node pool %q", name)
		}
		nodes, err := h.store.Nodes(ws, opts.Prefix)
		if err != nil {
			return 0, err
		}
		for _, n := range nodes {
			if name != state.NodePoolAll && n.NodePool != name {
				continue
			}
			if !pg.add(n.ID, nodeStub(n, withResources, withAttrs)) {
				break
			}
		}
		return h.maxIndex(store.TableNodes, store.TableNodePools), nil
	})
	if err != nil {
		return nil, err
	}
	return pg.finish(w), nil
}

// nodePoolUpsert serves PUT /v1/node/pools and PUT /v1/node/pool/:name,
// with a NodePool body. On the named route the body's Name may be left
// out; when given it must match the path.
func (h nodeAPI) nodePoolUpsert(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var pool state.NodePool
	if err := codec.DecodeBody(r, &pool); err != nil {
		return nil, err
	}
	if err := nameFromPath("node pool", &pool.Name, p.ByName("pool_name")); err != nil {
		return nil, err
	}
	v := &state.ValidationError{}
	switch {
	case pool.Name == state.NodePoolDefault || pool.Name == state.NodePoolAll:
		v.Add("Name", "the built-in node pool %q cannot be modified", pool.Name)
	case !poolNameRE.MatchString(pool.Name):
		v.Add("Name", "%q must be 1 to 128 letters, digits, '_' or '-'", pool.Name)
	}
	if len(pool.Description) > maxPoolDescription {
		v.Add("Description", "is %d characters long, the limit is %d", len(pool.Description), maxPoolDescription)
	}
	if ve, ok := state.ValidatePoolSchedulerConfiguration(pool.SchedulerConfiguration).(*state.ValidationError); ok {
		v.Errors = append(v.Errors, ve.Errors...) // scheduler_config.go
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	pool.CreateIndex, pool.ModifyIndex = 0, 0
	_, index, err := h.core.Propose(w, r, store.NodePoolUpsertRequestType, &store.NodePoolUpsertRequest{NodePools: []*state.NodePool{&pool}})
	if err != nil {
		return nil, err
	}
	return &struct{ Index uint64 }{index}, nil
}

// nodePoolDelete serves DELETE /v1/node/pool/:pool_name: a built-in pool
// is a 400, an unknown one a 404, and one that still has nodes or jobs
// that are not dead a 409 naming one of them.
func (h nodeAPI) nodePoolDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("pool_name")
	if name == state.NodePoolDefault || name == state.NodePoolAll {
		return nil, codec.BadRequest("pool_name: the built-in node pool %q cannot be deleted", name)
	}
	pool, err := h.store.NodePoolByName(nil, name)
	if err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, state.NotFoundf("node pool %q", name)
	}
	_, index, err := h.core.Propose(w, r, store.NodePoolDeleteRequestType, &store.NodePoolDeleteRequest{Names: []string{name}})
	if err != nil {
		return nil, err
	}
	return &struct{ Index uint64 }{index}, nil
}
