package jobs

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// quotaAPI serves the namespace quotas as Nomad Enterprise names them:
// /v1/quotas, /v1/quota/:name, /v1/quota/usage/:name and
// /v1/quota-usages. Reads need quota:read, writes a management token (the
// core's ACL table).
type quotaAPI struct{ *api }

func (h quotaAPI) routes() {
	h.core.Route(http.MethodGet, "/v1/quotas", h.quotaList)
	h.write("/v1/quota", h.quotaUpsert)
	h.core.Route(http.MethodGet, "/v1/quota/:name", h.quotaRead)
	h.write("/v1/quota/:name", h.quotaUpsert)
	h.core.Route(http.MethodDelete, "/v1/quota/:name", h.quotaDelete)
	h.core.Route(http.MethodGet, "/v1/quota/usage/:name", h.quotaUsageRead)
	h.core.Route(http.MethodGet, "/v1/quota-usages", h.quotaUsageList)
}

// quotaList serves GET /v1/quotas, with an optional name prefix.
func (h quotaAPI) quotaList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return listNamed(h.api, w, r, h.store.Quotas, func(q *state.QuotaSpec) string { return q.Name }, nil, store.TableQuotas)
}

// quotaRead serves GET /v1/quota/:name.
func (h quotaAPI) quotaRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return readNamed(h.api, w, r, "quota", p.ByName("name"), h.store.QuotaByName, store.TableQuotas)
}

// quotaUsageRead serves GET /v1/quota/usage/:name: the usage of each
// region of the quota beside its limit.
func (h quotaAPI) quotaUsageRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	return readNamed(h.api, w, r, "quota", p.ByName("name"), h.store.QuotaUsageByName, store.TableQuotas, store.TableQuotaUsage)
}

// quotaUsageList serves GET /v1/quota-usages, with an optional name
// prefix.
func (h quotaAPI) quotaUsageList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	return listNamed(h.api, w, r, h.store.QuotaUsages, func(u *state.QuotaUsage) string { return u.Name }, nil, store.TableQuotas, store.TableQuotaUsage)
}

// quotaUpsert serves POST/PUT /v1/quota/:name and /v1/quota (the name in
// the body, as Nomad's client sends it). It answers with the quota as
// stored; a bad spec is a 400 naming every bad field, and changes nothing.
func (h quotaAPI) quotaUpsert(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var q state.QuotaSpec
	if err := codec.DecodeBody(r, &q); err != nil {
		return nil, err
	}
	if err := nameFromPath("quota", &q.Name, p.ByName("name")); err != nil {
		return nil, err
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	q.CreateIndex, q.ModifyIndex = 0, 0
	if _, _, err := h.core.Propose(w, r, store.QuotaUpsertRequestType, &store.QuotaUpsertRequest{Quotas: []*state.QuotaSpec{&q}}); err != nil {
		return nil, err
	}
	return h.store.QuotaByName(nil, q.Name)
}

// quotaDelete serves DELETE /v1/quota/:name: 404 for an unknown quota,
// 409 while a namespace names it.
func (h quotaAPI) quotaDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("name")
	if _, _, err := h.core.Propose(w, r, store.QuotaDeleteRequestType, &store.QuotaDeleteRequest{Names: []string{name}}); err != nil {
		return nil, err
	}
	return nil, nil
}
