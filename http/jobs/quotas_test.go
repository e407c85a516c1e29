package jobs

import (
	"net/http"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// A quota's life through the API: created (name in the path or the
// body), read, listed, its usage following the allocations of the
// namespaces that name it, refused deletion while named, deleted.
func TestQuotaEndpoints(t *testing.T) {
	h := newHarness(t)
	limit := map[string]any{"Name": "team", "Description": "the team's share",
		"Limits": []map[string]any{{"Region": "global", "RegionLimit": map[string]any{"CPU": 1000, "MemoryMB": 4096, "Allocations": 2}}}}
	var created state.QuotaSpec
	rec := h.OK(http.MethodPut, "/v1/quota", limit, &created)
	if idx := apitest.HeaderIndexOf(t, rec); created.Name != "team" || created.CreateIndex != idx || created.Limits[0].RegionLimit.MemoryMB != 4096 {
		t.Fatalf("created %+v at index %d", created, idx)
	}
	h.OK(http.MethodPost, "/v1/quota/other", map[string]any{"Limits": []map[string]any{{"Region": "global"}}}, nil)
	var list []*state.QuotaSpec
	h.OK(http.MethodGet, "/v1/quotas?prefix=te", nil, &list)
	if len(list) != 1 || list[0].Name != "team" {
		t.Fatalf("quotas with prefix te: %+v", list)
	}
	h.OK(http.MethodPut, "/v1/namespace/prod", map[string]any{"Quota": "team"}, nil)
	job := apitest.TestJob("web")
	job.Namespace = "prod"
	h.register(job)
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{{
		ID: apitest.AllocID(1), Namespace: "prod", JobID: "web", EvalID: "e1", NodeID: "n1", TaskGroup: job.TaskGroups[0].Name,
		DesiredStatus:      state.AllocDesiredStatusRun,
		AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"t": {CPU: 250, MemoryMB: 1024}}},
	}}, Now: apitest.Now.UnixNano()})
	var usage state.QuotaUsage
	h.OK(http.MethodGet, "/v1/quota/usage/team", nil, &usage)
	used := usage.Used["global"]
	if used == nil || used.Used != (state.QuotaResources{CPU: 250, MemoryMB: 1024, MemoryMaxMB: 1024, Allocations: 1}) || used.RegionLimit.CPU != 1000 {
		t.Fatalf("usage %+v", used)
	}
	var usages []*state.QuotaUsage
	h.OK(http.MethodGet, "/v1/quota-usages", nil, &usages)
	if len(usages) != 2 {
		t.Fatalf("quota-usages: %d, want 2", len(usages))
	}
	h.Fail(http.MethodDelete, "/v1/quota/team", nil, http.StatusConflict, `namespace "prod"`)
	h.Fail(http.MethodDelete, "/v1/quota/nope", nil, http.StatusNotFound, "nope")
	h.Fail(http.MethodGet, "/v1/quota/nope", nil, http.StatusNotFound)
	h.Fail(http.MethodGet, "/v1/quota/usage/nope", nil, http.StatusNotFound)
	h.OK(http.MethodPut, "/v1/namespace/prod", map[string]any{"Quota": ""}, nil)
	h.OK(http.MethodDelete, "/v1/quota/team", nil, nil)
	h.Fail(http.MethodGet, "/v1/quota/team", nil, http.StatusNotFound)
}

// Bad quota input is a 400 naming what is wrong, and writes nothing.
func TestQuotaUpsertRefusesBadInput(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name, target string
		body         map[string]any
		want         string
	}{
		{"no name", "/v1/quota", map[string]any{}, "Name: required"},
		{"names differ", "/v1/quota/a", map[string]any{"Name": "b"}, "does not match"},
		{"bad name", "/v1/quota/a%20b", map[string]any{}, "Name"},
		{"negative limit", "/v1/quota/a", map[string]any{"Limits": []map[string]any{{"Region": "global", "RegionLimit": map[string]any{"MemoryMB": -4}}}}, "Limits[0].RegionLimit.MemoryMB"},
		{"no region", "/v1/quota/a", map[string]any{"Limits": []map[string]any{{"RegionLimit": map[string]any{"CPU": 1}}}}, "Limits[0].Region"},
		{"two limits of a region", "/v1/quota/a", map[string]any{"Limits": []map[string]any{{"Region": "global"}, {"Region": "global"}}}, "Limits[1].Region"},
	}
	before := h.Writes()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.Fail(http.MethodPut, c.target, c.body, http.StatusBadRequest, c.want)
		})
	}
	if h.Writes() != before {
		t.Fatalf("refused quotas wrote %d commands", h.Writes()-before)
	}
	h.Fail(http.MethodPut, "/v1/namespace/prod", map[string]any{"Quota": "missing"}, http.StatusBadRequest, `quota "missing" not found`)
}
