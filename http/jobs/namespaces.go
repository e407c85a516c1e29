package jobs

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// maxNamespaceDescription bounds a namespace description.
const maxNamespaceDescription = 256

// namespaceAPI serves /v1/namespaces and /v1/namespace.
type namespaceAPI struct{ *api }

func (h namespaceAPI) routes() {
	h.core.Route(http.MethodGet, "/v1/namespaces", h.namespaceList)
	h.write("/v1/namespace", h.namespaceUpsert)
	h.core.Route(http.MethodGet, "/v1/namespace/:name", h.namespaceRead)
	h.write("/v1/namespace/:name", h.namespaceUpsert)
	h.core.Route(http.MethodDelete, "/v1/namespace/:name", h.namespaceDelete)
}

// namespaceList serves GET /v1/namespaces, with an optional name prefix:
// only the namespaces the token may use (the core's ACL).
func (h namespaceAPI) namespaceList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return listNamed(h.api, w, r, h.store.Namespaces, func(ns *state.Namespace) string { return ns.Name }, h.core.NamespaceVisible(r), "namespaces")
}

// namespaceRead serves GET /v1/namespace/:name.
func (h namespaceAPI) namespaceRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return readNamed(h.api, w, r, "namespace", p.ByName("name"), h.store.NamespaceByName, "namespaces")
}

// namespaceUpsert serves POST/PUT /v1/namespace/:name and PUT /v1/namespace
// (the name in the body, as Nomad's client sends it). It answers with the
// namespace as stored.
func (h namespaceAPI) namespaceUpsert(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var ns state.Namespace
	if err := codec.DecodeBody(r, &ns); err != nil {
		return nil, err
	}
	if err := nameFromPath("namespace", &ns.Name, p.ByName("name")); err != nil {
		return nil, err
	}
	if err := state.ValidateNamespaceName(ns.Name); err != nil {
		return nil, prefixFields("Name", err)
	}
	if len(ns.Description) > maxNamespaceDescription {
		return nil, codec.BadRequest("Description: at most %d characters, got %d", maxNamespaceDescription, len(ns.Description))
	}
	ns.CreateIndex, ns.ModifyIndex = 0, 0
	if _, _, err := h.core.Propose(w, r, store.NamespaceUpsertRequestType, &store.NamespaceUpsertRequest{Namespaces: []*state.Namespace{&ns}}); err != nil {
		return nil, err
	}
	return h.store.NamespaceByName(nil, ns.Name)
}

// namespaceDelete serves DELETE /v1/namespace/:name.
func (h namespaceAPI) namespaceDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("name")
	if _, _, err := h.core.Propose(w, r, store.NamespaceDeleteRequestType, &store.NamespaceDeleteRequest{Names: []string{name}}); err != nil {
		return nil, err
	}
	return nil, nil
}
