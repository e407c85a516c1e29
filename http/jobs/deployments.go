package jobs

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// deploymentAPI serves /v1/deployments and /v1/deployment, reads (deployments.go) and writes (deployment_writes.go).
type deploymentAPI struct{ *api }

// deploymentRoutes registers the deployment reads and writes.
func (h deploymentAPI) deploymentRoutes() {
	h.core.Route(http.MethodGet, "/v1/deployments", h.deploymentList)
	h.core.Route(http.MethodGet, "/v1/deployment/:deployment_id", h.deploymentRead)
	h.core.Route(http.MethodGet, "/v1/deployment/allocations/:deployment_id", h.deploymentAllocations)
	h.write("/v1/deployment/promote/:deployment_id", h.deploymentPromote)
	h.write("/v1/deployment/fail/:deployment_id", h.deploymentFail)
	h.write("/v1/deployment/pause/:deployment_id", h.deploymentPause)
	h.write("/v1/deployment/allocation-health/:deployment_id", h.deploymentAllocHealth)
}

// deploymentList serves GET /v1/deployments: namespace (with *), prefix,
// filter (over the deployment), per_page and next_token (a deployment
// ID).
func (h deploymentAPI) deploymentList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	opts, err := parseListOptions(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	return readPage(h.api, w, r, opts, store.TableDeployment, h.store.Deployments,
		func(d *state.Deployment) (string, string) { return d.ID, d.Namespace },
		func(d *state.Deployment) (*state.Deployment, bool) { return d, true })
}

// deploymentRead serves GET /v1/deployment/:deployment_id. A deployment
// of another namespace than the request's is a 404 (see codec.InNamespace).
func (h deploymentAPI) deploymentRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return readByID(h.api, w, r, store.TableDeployment, "deployment", p.ByName("deployment_id"), h.store.DeploymentByID,
		func(d *state.Deployment) string { return d.Namespace })
}

// deploymentAllocations serves GET /v1/deployment/allocations/:id: the
// list entries of the deployment's allocations; an unknown deployment has
// none (200, empty list).
func (h deploymentAPI) deploymentAllocations(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("deployment_id")
	so, err := parseStubOptions(h.core.Query(r))
	if err != nil {
		return nil, err
	}
	var out []*state.AllocListStub
	err = h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		d, err := h.store.DeploymentByID(ws, id)
		if err != nil {
			return 0, err
		}
		out = []*state.AllocListStub{}
		if d == nil || !codec.InNamespace(ns, d.Namespace) {
			return h.maxIndex(store.TableAllocs, store.TableDeployment), nil
		}
		allocs, err := h.store.AllocsByJob(ws, d.Namespace, d.JobID, true)
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
		return h.maxIndex(store.TableAllocs, store.TableDeployment), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
