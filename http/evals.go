package http

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// evalRoutes registers the evaluation reads.
func (s *Server) evalRoutes() {
	s.handle(http.MethodGet, "/v1/evaluations", s.evalList)
	s.handle(http.MethodGet, "/v1/evaluation/:eval_id", s.evalRead)
	s.handle(http.MethodGet, "/v1/evaluation/:eval_id/allocations", s.evalAllocations)
}

// evalList serves GET /v1/evaluations: namespace (with *), prefix, filter
// (over the evaluation), per_page and next_token (an evaluation ID), and
// Nomad's shortcuts job (a job ID) and status.
func (s *Server) evalList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	jobID, status := q.Get("job"), q.Get("status")
	allowed := namespaceFilter(r, state.NamespaceCapabilityReadJob) // namespace=* shows only permitted namespaces
	var pg *page[*state.Evaluation]
	err = s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		pg = newPage[*state.Evaluation](opts)
		evals, err := s.store.Evals(ws, ns, opts.Prefix)
		if err != nil {
			return 0, err
		}
		for _, e := range evals {
			if allowed != nil && !allowed(e.Namespace) {
				continue
			}
			if (jobID != "" && e.JobID != jobID) || (status != "" && e.Status != status) {
				continue
			}
			if !pg.add(e.ID, e) {
				break
			}
		}
		return s.maxIndex(store.TableEvals), nil
	})
	if err != nil {
		return nil, err
	}
	return pg.finish(w), nil
}

// evalRead serves GET /v1/evaluation/:eval_id. An evaluation of another
// namespace than the request's is a 404 (see inNamespace).
func (s *Server) evalRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("eval_id")
	var out *state.Evaluation
	err := s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		e, err := s.store.EvalByID(ws, id)
		if err != nil {
			return 0, err
		}
		out = nil
		if e != nil && inNamespace(ns, e.Namespace) {
			out = e
		}
		return s.maxIndex(store.TableEvals), nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("evaluation %q", id)
	}
	return out, nil
}

// evalAllocations serves GET /v1/evaluation/:eval_id/allocations: the
// list entries of the allocations the evaluation placed. Like Nomad, an
// unknown evaluation has none (200, empty list), so a reader can wait on
// an evaluation it was just told about.
func (s *Server) evalAllocations(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("eval_id")
	so, err := parseStubOptions(r)
	if err != nil {
		return nil, err
	}
	var out []*state.AllocListStub
	err = s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		allocs, err := s.store.AllocsByEval(ws, id)
		if err != nil {
			return 0, err
		}
		kept := allocs[:0:0]
		for _, a := range allocs {
			if inNamespace(ns, a.Namespace) {
				kept = append(kept, a)
			}
		}
		out = allocStubs(kept, so)
		return s.maxIndex(store.TableAllocs), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
