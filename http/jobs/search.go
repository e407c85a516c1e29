package jobs

import (
	"net/http"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// Search limits.
const (
	// searchLimit is how many matches each context returns at most; more
	// sets its Truncations flag.
	searchLimit = 20
	// maxSearchPrefix bounds the prefix searched for.
	maxSearchPrefix = 256
)

// searchContexts are the kinds of object POST /v1/search looks through.
var searchContexts = []string{"jobs", "nodes", "allocs", "evals", "deployments"}

// SearchRequest is the body of POST /v1/search: an ID prefix (a job's ID,
// or the start of a node, allocation, evaluation or deployment UUID) and
// the context to search ("all" or "": every one).
type SearchRequest struct {
	Prefix  string
	Context string
}

// SearchResponse lists the IDs that start with the prefix, per context,
// at most searchLimit each, and whether each list was cut.
type SearchResponse struct {
	Matches     map[string][]string
	Truncations map[string]bool
}

// searchAPI serves the prefix search, /v1/search.
type searchAPI struct{ *api }

func (h searchAPI) searchRoutes() {
	h.write("/v1/search", h.search)
}

// search serves POST /v1/search in the request's namespace ("*": every
// one). What the caller may not read is left out: jobs, allocations,
// evaluations and deployments of namespaces without read-job, nodes
// without node:read.
func (h searchAPI) search(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var req SearchRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.Prefix) > maxSearchPrefix {
		return nil, codec.BadRequest("Prefix: longer than %d bytes", maxSearchPrefix)
	}
	contexts := searchContexts
	switch req.Context {
	case "", "all":
	default:
		if !slices.Contains(searchContexts, req.Context) {
			return nil, codec.BadRequest("Context: %q is not one of all, %s", req.Context, strings.Join(searchContexts, ", "))
		}
		contexts = []string{req.Context}
	}
	// A read sent as POST: consistent as every read is (the leader's
	// commit index is applied here first), served where it arrives.
	if err := h.core.ReadBarrier(r.Context()); err != nil {
		return nil, err
	}
	ns := h.core.Namespace(r)
	acl := h.core.ACL(r)
	readable := func(objNS string) bool {
		return (ns == allNamespaces || objNS == ns) &&
			(acl == nil || acl.AllowNamespaceOperation(objNS, state.NamespaceCapabilityReadJob))
	}
	out := &SearchResponse{Matches: map[string][]string{}, Truncations: map[string]bool{}}
	add := func(ctx, id string) bool {
		if len(out.Matches[ctx]) == searchLimit {
			out.Truncations[ctx] = true
			return false
		}
		out.Matches[ctx] = append(out.Matches[ctx], id)
		return true
	}
	for _, ctx := range contexts {
		out.Matches[ctx] = []string{}
		out.Truncations[ctx] = false
		var err error
		switch ctx {
		case "jobs":
			var jobs []*state.Job
			if jobs, err = h.store.Jobs(nil, allNamespaces, req.Prefix); err == nil {
				for _, j := range jobs {
					if readable(j.Namespace) && !add(ctx, j.ID) {
						break
					}
				}
			}
		case "nodes":
			if acl != nil && !acl.AllowNodeRead() {
				continue
			}
			var nodes []*state.Node
			if nodes, err = h.store.Nodes(nil, req.Prefix); err == nil {
				for _, n := range nodes {
					if !add(ctx, n.ID) {
						break
					}
				}
			}
		case "allocs":
			var allocs []*state.Allocation
			if allocs, err = h.store.Allocs(nil, allNamespaces, req.Prefix); err == nil {
				for _, a := range allocs {
					if readable(a.Namespace) && !add(ctx, a.ID) {
						break
					}
				}
			}
		case "evals":
			var evals []*state.Evaluation
			if evals, err = h.store.Evals(nil, allNamespaces, req.Prefix); err == nil {
				for _, e := range evals {
					if readable(e.Namespace) && !add(ctx, e.ID) {
						break
					}
				}
			}
		case "deployments":
			var ds []*state.Deployment
			if ds, err = h.store.Deployments(nil, allNamespaces, req.Prefix); err == nil {
				for _, d := range ds {
					if readable(d.Namespace) && !add(ctx, d.ID) {
						break
					}
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	h.core.SetMeta(w, h.store.LatestIndex())
	return out, nil
}
