package http

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// stubOptions say what an allocation list entry carries.
type stubOptions struct {
	resources  bool
	taskStates bool
}

// parseStubOptions reads resources (default false) and task_states
// (default true).
func parseStubOptions(r *http.Request) (stubOptions, error) {
	o := stubOptions{taskStates: true}
	var err error
	if o.resources, err = boolParam(r, "resources"); err != nil {
		return o, err
	}
	if _, ok := r.URL.Query()["task_states"]; ok {
		if o.taskStates, err = boolParam(r, "task_states"); err != nil {
			return o, err
		}
	}
	return o, nil
}

// allocStub makes a's list entry.
func allocStub(a *state.Allocation, o stubOptions) *state.AllocListStub {
	stub := a.Stub()
	if o.resources {
		stub.AllocatedResources = a.AllocatedResources
	}
	if !o.taskStates {
		stub.TaskStates = nil
	}
	return stub
}

// allocStubs makes the list entries of allocs, never null.
func allocStubs(allocs []*state.Allocation, o stubOptions) []*state.AllocListStub {
	out := make([]*state.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, allocStub(a, o))
	}
	return out
}

// allocRoutes registers the allocation reads.
func (s *Server) allocRoutes() {
	s.handle(http.MethodGet, "/v1/allocations", s.allocList)
	s.handle(http.MethodGet, "/v1/allocation/:alloc_id", s.allocRead)
}

// allocList serves GET /v1/allocations: namespace (with *), prefix,
// filter (over AllocListStub), per_page and next_token (an allocation
// ID), resources and task_states.
func (s *Server) allocList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	so, err := parseStubOptions(r)
	if err != nil {
		return nil, err
	}
	allowed := namespaceFilter(r, state.NamespaceCapabilityReadJob) // namespace=* shows only permitted namespaces
	var pg *page[*state.AllocListStub]
	err = s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		pg = newPage[*state.AllocListStub](opts)
		allocs, err := s.store.Allocs(ws, ns, opts.Prefix)
		if err != nil {
			return 0, err
		}
		for _, a := range allocs {
			if allowed != nil && !allowed(a.Namespace) {
				continue
			}
			if !pg.add(a.ID, allocStub(a, so)) {
				break
			}
		}
		return s.maxIndex(store.TableAllocs), nil
	})
	if err != nil {
		return nil, err
	}
	return pg.finish(w), nil
}

// allocRead serves GET /v1/allocation/:alloc_id: the whole allocation,
// with its job. An allocation of another namespace than the request's is
// a 404 (see inNamespace).
func (s *Server) allocRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("alloc_id")
	var out *state.Allocation
	err := s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		a, err := s.store.AllocByID(ws, id)
		if err != nil {
			return 0, err
		}
		out = nil
		if a != nil && inNamespace(ns, a.Namespace) {
			out = a
		}
		return s.maxIndex(store.TableAllocs), nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("allocation %q", id)
	}
	return out, nil
}
