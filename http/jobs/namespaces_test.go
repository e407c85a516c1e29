package jobs

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

func TestNamespaceUpsertRoutes(t *testing.T) {
	cases := []struct {
		name, method, target string
		body                 map[string]any
	}{
		{"PUT name in path", http.MethodPut, "/v1/namespace/prod", map[string]any{"Description": "production"}},
		{"POST name in path", http.MethodPost, "/v1/namespace/prod", map[string]any{"Description": "production"}},
		{"PUT name in both", http.MethodPut, "/v1/namespace/prod", map[string]any{"Name": "prod", "Description": "production"}},
		{"PUT name in body", http.MethodPut, "/v1/namespace", map[string]any{"Name": "prod", "Description": "production"}},
		{"POST name in body", http.MethodPost, "/v1/namespace", map[string]any{"Name": "prod", "Description": "production"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.body["Meta"] = map[string]string{"team": "ops"}
			tc.body["CreateIndex"] = 999 // the server's to set, not the client's
			var out state.Namespace
			rec := h.OK(tc.method, tc.target, tc.body, &out)
			idx := apitest.HeaderIndexOf(t, rec)
			if out.Name != "prod" || out.Description != "production" || out.Meta["team"] != "ops" ||
				out.CreateIndex != idx || out.ModifyIndex != idx {
				t.Errorf("answer %+v at index %d", out, idx)
			}
			var read state.Namespace
			h.OK(http.MethodGet, "/v1/namespace/prod", nil, &read)
			if read.Description != "production" || read.CreateIndex != idx {
				t.Errorf("read back %+v", read)
			}
		})
	}
}

func TestNamespaceUpdateKeepsCreateIndex(t *testing.T) {
	h := newHarness(t)
	var first, second state.Namespace
	h.OK(http.MethodPut, "/v1/namespace/prod", map[string]any{"Description": "one"}, &first)
	h.OK(http.MethodPut, "/v1/namespace/prod", map[string]any{"Description": "two"}, &second)
	if second.CreateIndex != first.CreateIndex || second.ModifyIndex <= first.ModifyIndex || second.Description != "two" {
		t.Errorf("update: first %+v, second %+v", first, second)
	}
}

func TestNamespaceList(t *testing.T) {
	h := newHarness(t)
	var out []*state.Namespace
	h.OK(http.MethodGet, "/v1/namespaces", nil, &out)
	if len(out) != 1 || out[0].Name != state.DefaultNamespace {
		t.Fatalf("namespaces of a new store: %+v, want only default", out)
	}
	for _, n := range []string{"prod", "dev", "prod-eu"} {
		h.CreateNamespace(n)
	}
	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{"default", "dev", "prod", "prod-eu"}},
		{"?prefix=prod", []string{"prod", "prod-eu"}},
		{"?prefix=x", []string{}},
	}
	for _, tc := range cases {
		var out []*state.Namespace
		rec := h.OK(http.MethodGet, "/v1/namespaces"+tc.query, nil, &out)
		names := []string{}
		for _, n := range out {
			names = append(names, n.Name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, names, tc.want)
		}
		if len(tc.want) == 0 && strings.TrimSpace(rec.Body.String()) != "[]" {
			t.Errorf("%s: body %q, want []", tc.query, rec.Body.String())
		}
	}
}

func TestNamespaceBadInput(t *testing.T) {
	cases := []struct {
		name, method, target string
		body                 any
		code                 int
		want                 []string
	}{
		{"name mismatch", http.MethodPut, "/v1/namespace/prod", map[string]any{"Name": "dev"}, http.StatusBadRequest, []string{"Name", "dev", "prod"}},
		{"no name", http.MethodPut, "/v1/namespace", map[string]any{"Description": "x"}, http.StatusBadRequest, []string{"Name"}},
		{"invalid name", http.MethodPut, "/v1/namespace", map[string]any{"Name": "a b"}, http.StatusBadRequest, []string{"Name", "a b"}},
		{"invalid name in path", http.MethodPost, "/v1/namespace/a.b", map[string]any{}, http.StatusBadRequest, []string{"Name", "a.b"}},
		{"long description", http.MethodPut, "/v1/namespace/prod", map[string]any{"Description": strings.Repeat("x", 257)}, http.StatusBadRequest, []string{"Description", "257"}},
		{"malformed JSON", http.MethodPut, "/v1/namespace/prod", `{"Name":`, http.StatusBadRequest, []string{"failed to parse"}},
		{"empty body", http.MethodPut, "/v1/namespace/prod", nil, http.StatusBadRequest, []string{"body is required"}},
		{"delete default", http.MethodDelete, "/v1/namespace/default", nil, http.StatusBadRequest, []string{"default"}},
		{"delete unknown", http.MethodDelete, "/v1/namespace/nope", nil, http.StatusNotFound, []string{"nope"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.Fail(tc.method, tc.target, tc.body, tc.code, tc.want...)
			ns, _ := h.Store.Namespaces(nil)
			if len(ns) != 1 {
				t.Errorf("%d namespaces after a rejected request, want only default", len(ns))
			}
		})
	}
}

func TestNamespaceDelete(t *testing.T) {
	h := newHarness(t)
	h.CreateNamespace("prod")
	h.OK(http.MethodPut, "/v1/jobs?namespace=prod", &JobRegisterRequest{Job: apitest.TestJob("api")}, nil)

	h.Fail(http.MethodDelete, "/v1/namespace/prod", nil, http.StatusConflict, "prod", "api")
	if ns, _ := h.Store.NamespaceByName(nil, "prod"); ns == nil {
		t.Fatal("namespace with a job deleted")
	}

	h.OK(http.MethodDelete, "/v1/job/api?namespace=prod&purge=true", nil, nil)
	rec := h.OK(http.MethodDelete, "/v1/namespace/prod", nil, nil)
	apitest.HeaderIndexOf(t, rec)
	h.Fail(http.MethodGet, "/v1/namespace/prod", nil, http.StatusNotFound, "prod")
	h.Fail(http.MethodPut, "/v1/jobs?namespace=prod", &JobRegisterRequest{Job: apitest.TestJob("api")}, http.StatusNotFound, "prod")
}
