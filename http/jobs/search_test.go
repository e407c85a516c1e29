package jobs

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestSearchPrefixAcrossContexts(t *testing.T) {
	h := newHarness(t)
	h.register(testJob("web"))
	h.register(testJob("webapp"))
	h.register(testJob("api"))
	h.apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: testNode(1)})

	var out SearchResponse
	h.ok(http.MethodPost, "/v1/search", SearchRequest{Prefix: "web", Context: "all"}, &out)
	if got := out.Matches["jobs"]; len(got) != 2 || got[0] != "web" || got[1] != "webapp" {
		t.Errorf("jobs = %v, want web and webapp", got)
	}
	if len(out.Matches["nodes"]) != 0 || out.Truncations["jobs"] {
		t.Errorf("matches %v, truncations %v", out.Matches, out.Truncations)
	}
	out = SearchResponse{}
	h.ok(http.MethodPost, "/v1/search", SearchRequest{Prefix: nodeID(1)[:8], Context: "nodes"}, &out)
	if got := out.Matches["nodes"]; len(got) != 1 || got[0] != nodeID(1) {
		t.Errorf("nodes = %v", got)
	}
	if _, ok := out.Matches["jobs"]; ok {
		t.Errorf("Context nodes also searched jobs: %v", out.Matches)
	}
	for i := range searchLimit + 1 {
		h.register(testJob("many-" + strings.Repeat("x", i+1)))
	}
	out = SearchResponse{}
	h.ok(http.MethodPost, "/v1/search", SearchRequest{Prefix: "many-", Context: "jobs"}, &out)
	if len(out.Matches["jobs"]) != searchLimit || !out.Truncations["jobs"] {
		t.Errorf("%d matches, truncated %v; want %d and true", len(out.Matches["jobs"]), out.Truncations["jobs"], searchLimit)
	}

	h.fail(http.MethodPost, "/v1/search", SearchRequest{Prefix: "x", Context: "volumes"}, http.StatusBadRequest, "Context", "volumes")
	h.fail(http.MethodPost, "/v1/search", SearchRequest{Prefix: strings.Repeat("p", maxSearchPrefix+1)}, http.StatusBadRequest, "Prefix")
}

func TestSearchACLFiltering(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.managementToken()
	a.okAs(mgmt, http.MethodPut, "/v1/namespace/prod", map[string]string{}, nil)
	prod := testJob("web-prod")
	prod.Namespace = "prod"
	a.okAs(mgmt, http.MethodPost, "/v1/jobs", map[string]any{"Job": prod}, nil)
	a.okAs(mgmt, http.MethodPost, "/v1/jobs", map[string]any{"Job": testJob("web-dev")}, nil)
	devOnly := a.clientToken(`namespace "default" { policy = "read" }`)

	a.deniedAs("", http.MethodPost, "/v1/search", SearchRequest{Prefix: "web"})
	var out SearchResponse
	a.okAs(devOnly, http.MethodPost, "/v1/search?namespace=*", SearchRequest{Prefix: "web"}, &out)
	if got := out.Matches["jobs"]; len(got) != 1 || got[0] != "web-dev" {
		t.Errorf("default reader found %v, want web-dev only", got)
	}
	if out.Matches["nodes"] != nil && len(out.Matches["nodes"]) != 0 {
		t.Errorf("nodes shown without node:read: %v", out.Matches["nodes"])
	}
	out = SearchResponse{}
	a.okAs(mgmt, http.MethodPost, "/v1/search?namespace=*", SearchRequest{Prefix: "web"}, &out)
	if len(out.Matches["jobs"]) != 2 {
		t.Errorf("management found %v", out.Matches["jobs"])
	}
	_ = state.DefaultNamespace
}
