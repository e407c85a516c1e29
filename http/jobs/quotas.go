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
	prefix := h.core.Query(r).Get("prefix")
	var out []*state.QuotaSpec
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		all, err := h.store.Quotas(ws)
		out = out[:0]
		for _, q := range all {
			if strings.HasPrefix(q.Name, prefix) {
				out = append(out, q)
			}
		}
		return h.maxIndex(store.TableQuotas), err
	})
	return nonNil(out), err
}

// quotaRead serves GET /v1/quota/:name.
func (h quotaAPI) quotaRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("name")
	var out *state.QuotaSpec
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		var err error
		out, err = h.store.QuotaByName(ws, name)
		return h.maxIndex(store.TableQuotas), err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("quota %q", name)
	}
	return out, nil
}

// quotaUsageRead serves GET /v1/quota/usage/:name: the usage of each
// region of the quota beside its limit.
func (h quotaAPI) quotaUsageRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("name")
	var out *state.QuotaUsage
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		var err error
		out, err = h.store.QuotaUsageByName(ws, name)
		return h.maxIndex(store.TableQuotas, store.TableQuotaUsage), err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("quota %q", name)
	}
	return out, nil
}

// quotaUsageList serves GET /v1/quota-usages, with an optional name
// prefix.
func (h quotaAPI) quotaUsageList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	prefix := h.core.Query(r).Get("prefix")
	var out []*state.QuotaUsage
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		all, err := h.store.QuotaUsages(ws)
		out = out[:0]
		for _, u := range all {
			if strings.HasPrefix(u.Name, prefix) {
				out = append(out, u)
			}
		}
		return h.maxIndex(store.TableQuotas, store.TableQuotaUsage), err
	})
	return nonNil(out), err
}

// quotaUpsert serves POST/PUT /v1/quota/:name and /v1/quota (the name in
// the body, as Nomad's client sends it). It answers with the quota as
// stored; a bad spec is a 400 naming every bad field, and changes nothing.
func (h quotaAPI) quotaUpsert(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var q state.QuotaSpec
	if err := codec.DecodeBody(r, &q); err != nil {
		return nil, err
	}
	if path := p.ByName("name"); path != "" {
		if q.Name == "" {
			q.Name = path
		} else if q.Name != path {
			return nil, codec.BadRequest("Name: %q does not match the quota in the path %q", q.Name, path)
		}
	}
	if q.Name == "" {
		return nil, codec.BadRequest("Name: required")
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
