package http

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// deploymentRoutes registers the deployment reads and writes.
func (s *Server) deploymentRoutes() {
	s.handle(http.MethodGet, "/v1/deployments", s.deploymentList)
	s.handle(http.MethodGet, "/v1/deployment/:deployment_id", s.deploymentRead)
	s.handle(http.MethodGet, "/v1/deployment/allocations/:deployment_id", s.deploymentAllocations)
	s.write("/v1/deployment/promote/:deployment_id", s.deploymentPromote)
	s.write("/v1/deployment/fail/:deployment_id", s.deploymentFail)
	s.write("/v1/deployment/pause/:deployment_id", s.deploymentPause)
	s.write("/v1/deployment/allocation-health/:deployment_id", s.deploymentAllocHealth)
}

// deploymentList serves GET /v1/deployments: namespace (with *), prefix,
// filter (over the deployment), per_page and next_token (a deployment
// ID).
func (s *Server) deploymentList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	opts, err := parseListOptions(r)
	if err != nil {
		return nil, err
	}
	allowed := namespaceFilter(r, state.NamespaceCapabilityReadJob) // namespace=* shows only permitted namespaces
	var pg *page[*state.Deployment]
	err = s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		pg = newPage[*state.Deployment](opts)
		ds, err := s.store.Deployments(ws, ns, opts.Prefix)
		if err != nil {
			return 0, err
		}
		for _, d := range ds {
			if allowed != nil && !allowed(d.Namespace) {
				continue
			}
			if !pg.add(d.ID, d) {
				break
			}
		}
		return s.maxIndex(store.TableDeployment), nil
	})
	if err != nil {
		return nil, err
	}
	return pg.finish(w), nil
}

// deploymentRead serves GET /v1/deployment/:deployment_id. A deployment
// of another namespace than the request's is a 404 (see inNamespace).
func (s *Server) deploymentRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("deployment_id")
	var out *state.Deployment
	err := s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		d, err := s.store.DeploymentByID(ws, id)
		if err != nil {
			return 0, err
		}
		out = nil
		if d != nil && inNamespace(ns, d.Namespace) {
			out = d
		}
		return s.maxIndex(store.TableDeployment), nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("deployment %q", id)
	}
	return out, nil
}

// deploymentAllocations serves GET /v1/deployment/allocations/:id: the
// list entries of the deployment's allocations; an unknown deployment has
// none (200, empty list).
func (s *Server) deploymentAllocations(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("deployment_id")
	so, err := parseStubOptions(r)
	if err != nil {
		return nil, err
	}
	var out []*state.AllocListStub
	err = s.read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		d, err := s.store.DeploymentByID(ws, id)
		if err != nil {
			return 0, err
		}
		out = []*state.AllocListStub{}
		if d == nil || !inNamespace(ns, d.Namespace) {
			return s.maxIndex(store.TableAllocs, store.TableDeployment), nil
		}
		allocs, err := s.store.AllocsByJob(ws, d.Namespace, d.JobID, true)
		if err != nil {
			return 0, err
		}
		kept := allocs[:0:0]
		for _, a := range allocs {
			if a.DeploymentID == id {
				kept = append(kept, a)
			}
		}
		out = allocStubs(kept, so)
		return s.maxIndex(store.TableAllocs, store.TableDeployment), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
