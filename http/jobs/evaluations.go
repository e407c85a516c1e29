package jobs

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// evalAPI serves /v1/evaluations and /v1/evaluation.
type evalAPI struct{ *api }

// evalRoutes registers the evaluation reads.
func (h evalAPI) evalRoutes() {
	h.core.Route(http.MethodGet, "/v1/evaluations", h.evalList)
	h.core.Route(http.MethodGet, "/v1/evaluation/:eval_id", h.evalRead)
	h.core.Route(http.MethodGet, "/v1/evaluation/:eval_id/allocations", h.evalAllocations)
}

// evalList serves GET /v1/evaluations: namespace (with *), prefix, filter
// (over the evaluation), per_page and next_token (an evaluation ID), and
// Nomad's shortcuts job (a job ID) and status.
func (h evalAPI) evalList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	q := h.core.Query(r)
	opts, err := parseListOptions(q)
	if err != nil {
		return nil, err
	}
	jobID, status := q.Get("job"), q.Get("status")
	queue := &queueView{h: h.api} // eval_queue.go
	return readPage(h.api, w, r, opts, store.TableEvals, h.store.Evals,
		func(e *state.Evaluation) (string, string) { return e.ID, e.Namespace },
		func(e *state.Evaluation) (*state.Evaluation, bool) {
			keep := (jobID == "" || e.JobID == jobID) && (status == "" || e.Status == status)
			if keep {
				e = queue.decorate(e)
			}
			return e, keep
		})
}

// evalRead serves GET /v1/evaluation/:eval_id. An evaluation of another
// namespace than the request's is a 404 (see codec.InNamespace).
func (h evalAPI) evalRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return readByID(h.api, w, r, store.TableEvals, "evaluation", p.ByName("eval_id"), h.store.EvalByID,
		func(e *state.Evaluation) string { return e.Namespace })
}

// evalAllocations serves GET /v1/evaluation/:eval_id/allocations: the
// list entries of the allocations the evaluation placed. Like Nomad, an
// unknown evaluation has none (200, empty list), so a reader can wait on
// an evaluation it was just told about.
func (h evalAPI) evalAllocations(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("eval_id")
	so, err := parseStubOptions(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	var out []*state.AllocListStub
	err = h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		allocs, err := h.store.AllocsByEval(ws, id)
		if err != nil {
			return 0, err
		}
		kept := allocs[:0:0]
		for _, a := range allocs {
			if codec.InNamespace(ns, a.Namespace) {
				kept = append(kept, a)
			}
		}
		out = allocStubs(kept, so)
		return h.maxIndex(store.TableAllocs), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
