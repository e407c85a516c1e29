package jobs

import (
	"net/http"
	"slices"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The service catalog: client agents register the services of the tasks
// they run (PUT /v1/node/:node_id/services, with the node's own secret)
// and delete them when the tasks stop; anyone with read-job reads them by
// job, by name, or as a list. Entries are the registered service entries
// of spec §2 (state.ServiceRegistration).
//
// The writes are node-scoped, so that the node's SecretID authenticates
// them exactly as it does the node's allocation updates, and so that a
// node can neither write nor delete another node's entries.

// serviceAPI serves the service catalog: /v1/services, /v1/service and a node's registrations.
type serviceAPI struct{ *api }

// serviceRoutes registers the service catalog.
func (h serviceAPI) serviceRoutes() {
	h.core.Route(http.MethodGet, "/v1/job/:job_id/services", h.jobServices)
	h.core.Route(http.MethodGet, "/v1/services", h.serviceList)
	h.core.Route(http.MethodGet, "/v1/service/:service_name", h.serviceRead)
	h.core.Route(http.MethodDelete, "/v1/service/:service_name/:service_id", h.serviceDelete)
	h.write("/v1/node/:node_id/services", h.nodeServicesUpsert)
	h.core.Route(http.MethodDelete, "/v1/node/:node_id/services", h.nodeServicesDelete)
}

// ServiceRegistrationsRequest is the body of PUT /v1/node/:node_id/services.
type ServiceRegistrationsRequest struct {
	Services []*state.ServiceRegistration
}

// jobServices serves GET /v1/job/:job_id/services (spec §4 row 22): the
// entries of the job's allocations, blocking on the catalog. Like the
// job's allocations, an unknown job has none (200, []).
func (h serviceAPI) jobServices(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var out []*state.ServiceRegistration
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		out, err = h.store.ServicesByJob(ws, ns, id)
		return h.maxIndex(store.TableServiceRegistrations), err
	})
	return nonNil(out), err
}

// serviceRead serves GET /v1/service/:service_name: the instances of one
// service in the request's namespace, blocking. An unknown service has no
// instances (200, []), so a reader can wait for its first one.
func (h serviceAPI) serviceRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("service_name")
	var out []*state.ServiceRegistration
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		if ns == allNamespaces {
			return 0, codec.BadRequest("namespace: a service is read in one namespace, not %q", allNamespaces)
		}
		var err error
		out, err = h.store.ServicesByName(ws, ns, name)
		return h.maxIndex(store.TableServiceRegistrations), err
	})
	return nonNil(out), err
}

// serviceList serves GET /v1/services: per namespace (namespace=* for
// every namespace the caller may read jobs in), each service name with the
// union of its instances' tags, sorted.
func (h serviceAPI) serviceList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	allowed := h.core.NamespaceFilter(r, state.NamespaceCapabilityReadJob)
	var out []*state.ServiceListStub
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		regs, err := h.store.Services(ws, ns)
		if err != nil {
			return 0, err
		}
		out = groupServices(regs, allowed)
		return h.maxIndex(store.TableServiceRegistrations), nil
	})
	return nonNil(out), err
}

// groupServices folds entries (ordered by namespace, then service name)
// into the list's shape, dropping namespaces allowed refuses.
func groupServices(regs []*state.ServiceRegistration, allowed func(string) bool) []*state.ServiceListStub {
	var out []*state.ServiceListStub
	var cur *state.ServiceListEntry
	for _, reg := range regs {
		if allowed != nil && !allowed(reg.Namespace) {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Namespace != reg.Namespace {
			out = append(out, &state.ServiceListStub{Namespace: reg.Namespace})
			cur = nil
		}
		ns := out[len(out)-1]
		if cur == nil || cur.ServiceName != reg.ServiceName {
			cur = &state.ServiceListEntry{ServiceName: reg.ServiceName, Tags: []string{}}
			ns.Services = append(ns.Services, cur)
		}
		for _, t := range reg.Tags {
			if !slices.Contains(cur.Tags, t) {
				cur.Tags = append(cur.Tags, t)
			}
		}
	}
	for _, ns := range out {
		for _, e := range ns.Services {
			slices.Sort(e.Tags)
		}
	}
	return out
}

// serviceDelete serves DELETE /v1/service/:service_name/:service_id: an
// operator removes one entry (one its client left behind). The entry must
// be of that service and in the request's namespace, or it is a 404.
func (h serviceAPI) serviceDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name, id := p.ByName("service_name"), p.ByName("service_id")
	reg, err := h.serviceByID(id)
	if err != nil {
		return nil, err
	}
	if reg == nil || reg.ServiceName != name || !codec.InNamespace(h.core.Namespace(r), reg.Namespace) {
		return nil, state.NotFoundf("service %q has no registration %q", name, id)
	}
	_, index, err := h.core.Propose(w, r, store.ServiceDeleteRequestType, &store.ServiceDeleteRequest{IDs: []string{id}})
	if err != nil {
		return nil, err
	}
	return &state.ServiceRegistrationsResponse{Index: index}, nil
}

// serviceByID returns one entry, or nil.
func (h serviceAPI) serviceByID(id string) (*state.ServiceRegistration, error) {
	all, err := h.servicesByID()
	if err != nil {
		return nil, err
	}
	return all[id], nil
}

// servicesByID maps every entry's ID to it. The store reads entries by
// service, job, allocation and node but not by ID, so a write that must
// know who owns an ID scans the catalog once: small next to the write.
func (h serviceAPI) servicesByID() (map[string]*state.ServiceRegistration, error) {
	regs, err := h.store.Services(nil, allNamespaces)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*state.ServiceRegistration, len(regs))
	for _, reg := range regs {
		out[reg.ID] = reg
	}
	return out, nil
}

// nodeServicesUpsert serves PUT /v1/node/:node_id/services: a client
// registers the services of tasks it runs. Every entry must name an
// allocation placed on the node; the server fills NodeID, Namespace and
// JobID from the allocation (and Datacenter from the node when the entry
// has none), so a client cannot file an entry elsewhere. Entries of
// allocations that no longer exist, or that finished, are skipped. In the
// same request, the node's entries of allocations that are gone or
// finished are deleted: the cleanup for a client that stopped a task
// without deregistering (it crashed, or was away).
func (h serviceAPI) nodeServicesUpsert(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	nodeID := p.ByName("node_id")
	var req ServiceRegistrationsRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if err := validateServiceRegistrations(req.Services); err != nil {
		return nil, err
	}
	node, err := h.node(nodeID)
	if err != nil {
		return nil, err
	}
	var owners map[string]*state.ServiceRegistration // read once, when needed
	upserts := make([]*state.ServiceRegistration, 0, len(req.Services))
	for i, in := range req.Services {
		a, err := h.store.AllocByID(nil, in.AllocID)
		if err != nil {
			return nil, err
		}
		if a == nil || a.ClientTerminal() {
			continue
		}
		if a.NodeID != nodeID {
			return nil, codec.BadRequest("Services[%d].AllocID: allocation %q is on node %q, not %q", i, a.ID, a.NodeID, nodeID)
		}
		if owners == nil {
			if owners, err = h.servicesByID(); err != nil {
				return nil, err
			}
		}
		if old := owners[in.ID]; old != nil && old.NodeID != nodeID {
			return nil, codec.BadRequest("Services[%d].ID: registration %q belongs to node %q, not %q", i, in.ID, old.NodeID, nodeID)
		}
		reg := in.Copy()
		reg.NodeID, reg.Namespace, reg.JobID = nodeID, a.Namespace, a.JobID
		if reg.Datacenter == "" {
			reg.Datacenter = node.Datacenter
		}
		reg.CreateIndex, reg.ModifyIndex = 0, 0
		upserts = append(upserts, reg)
	}
	stale, err := h.staleNodeServices(nodeID)
	if err != nil {
		return nil, err
	}
	out := &state.ServiceRegistrationsResponse{}
	if len(stale) > 0 {
		_, index, err := h.core.Propose(w, r, store.ServiceDeleteRequestType, &store.ServiceDeleteRequest{IDs: stale})
		if err != nil {
			return nil, err
		}
		out.Index = index
	}
	if len(upserts) > 0 {
		_, index, err := h.core.Propose(w, r, store.ServiceUpsertRequestType, &store.ServiceUpsertRequest{Services: upserts})
		if err != nil {
			return nil, err
		}
		out.Index = index
	}
	return out, nil
}

// staleNodeServices returns the IDs of the node's entries whose
// allocation no longer exists or has finished. The node's allocations are
// read once (one list, not a lookup per entry): every entry's allocation
// is on its node, the upsert checks that.
func (h serviceAPI) staleNodeServices(nodeID string) ([]string, error) {
	regs, err := h.store.ServicesByNode(nil, nodeID)
	if err != nil || len(regs) == 0 {
		return nil, err
	}
	allocs, err := h.store.AllocsByNode(nil, nodeID)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		if !a.ClientTerminal() {
			live[a.ID] = true
		}
	}
	var ids []string
	for _, reg := range regs {
		if !live[reg.AllocID] {
			ids = append(ids, reg.ID)
		}
	}
	return ids, nil
}

// nodeServicesDelete serves DELETE /v1/node/:node_id/services?id=..&
// alloc_id=..: a client deletes entries by ID, and every entry of the
// named allocations. Only the node's own entries are deleted; unknown IDs
// are ignored, so a retried delete succeeds.
func (h serviceAPI) nodeServicesDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	nodeID := p.ByName("node_id")
	q := h.core.Query(r)
	ids, allocIDs := q["id"], q["alloc_id"]
	if len(ids) == 0 && len(allocIDs) == 0 {
		return nil, codec.BadRequest("id or alloc_id: at least one registration ID or allocation ID is required")
	}
	for _, v := range append(slices.Clone(ids), allocIDs...) {
		if v == "" {
			return nil, codec.BadRequest("id, alloc_id: empty value")
		}
	}
	if _, err := h.node(nodeID); err != nil {
		return nil, err
	}
	mine, err := h.store.ServicesByNode(nil, nodeID)
	if err != nil {
		return nil, err
	}
	var del []string
	for _, reg := range mine {
		if slices.Contains(ids, reg.ID) || slices.Contains(allocIDs, reg.AllocID) {
			del = append(del, reg.ID)
		}
	}
	if len(del) < len(ids) {
		owners, err := h.servicesByID()
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if other := owners[id]; other != nil && other.NodeID != nodeID {
				return nil, codec.BadRequest("id: registration %q belongs to node %q, not %q", id, other.NodeID, nodeID)
			}
		}
	}
	if len(del) == 0 {
		return &state.ServiceRegistrationsResponse{}, nil
	}
	_, index, err := h.core.Propose(w, r, store.ServiceDeleteRequestType, &store.ServiceDeleteRequest{IDs: del})
	if err != nil {
		return nil, err
	}
	return &state.ServiceRegistrationsResponse{Index: index}, nil
}

// validateServiceRegistrations checks a client's entries, listing every
// problem with its field path.
func validateServiceRegistrations(regs []*state.ServiceRegistration) error {
	v := &state.ValidationError{}
	if len(regs) == 0 {
		v.Add("Services", "at least one registration is required")
	}
	ids := newEntryIDs("Services", "registration")
	for i, reg := range regs {
		field := ids.field(i)
		if reg == nil {
			v.Add(field, "must not be null")
			continue
		}
		ids.check(v, i, reg.ID)
		if reg.ServiceName == "" {
			v.Add(field+".ServiceName", "required")
		}
		if reg.AllocID == "" {
			v.Add(field+".AllocID", "required")
		}
		if reg.Port < 0 || reg.Port > 65535 {
			v.Add(field+".Port", "%d is not a port number (0-65535)", reg.Port)
		}
	}
	return v.Err()
}
