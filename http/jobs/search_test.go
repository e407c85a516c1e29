package jobs

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestSearchPrefixAcrossContexts(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	h.register(apitest.TestJob("webapp"))
	h.register(apitest.TestJob("api"))
	h.Apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: apitest.TestNode(1)})

	var out SearchResponse
	h.OK(http.MethodPost, "/v1/search", SearchRequest{Prefix: "web", Context: "all"}, &out)
	if got := out.Matches["jobs"]; len(got) != 2 || got[0] != "web" || got[1] != "webapp" {
		t.Errorf("jobs = %v, want web and webapp", got)
	}
	if len(out.Matches["nodes"]) != 0 || out.Truncations["jobs"] {
		t.Errorf("matches %v, truncations %v", out.Matches, out.Truncations)
	}
	out = SearchResponse{}
	h.OK(http.MethodPost, "/v1/search", SearchRequest{Prefix: apitest.NodeID(1)[:8], Context: "nodes"}, &out)
	if got := out.Matches["nodes"]; len(got) != 1 || got[0] != apitest.NodeID(1) {
		t.Errorf("nodes = %v", got)
	}
	if _, ok := out.Matches["jobs"]; ok {
		t.Errorf("Context nodes also searched jobs: %v", out.Matches)
	}
	for i := range searchLimit + 1 {
		h.register(apitest.TestJob("many-" + strings.Repeat("x", i+1)))
	}
	out = SearchResponse{}
	h.OK(http.MethodPost, "/v1/search", SearchRequest{Prefix: "many-", Context: "jobs"}, &out)
	if len(out.Matches["jobs"]) != searchLimit || !out.Truncations["jobs"] {
		t.Errorf("%d matches, truncated %v; want %d and true", len(out.Matches["jobs"]), out.Truncations["jobs"], searchLimit)
	}

	h.Fail(http.MethodPost, "/v1/search", SearchRequest{Prefix: "x", Context: "volumes"}, http.StatusBadRequest, "Context", "volumes")
	h.Fail(http.MethodPost, "/v1/search", SearchRequest{Prefix: strings.Repeat("p", maxSearchPrefix+1)}, http.StatusBadRequest, "Prefix")
}

func TestSearchACLFiltering(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPut, "/v1/namespace/prod", map[string]string{}, nil)
	prod := apitest.TestJob("web-prod")
	prod.Namespace = "prod"
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", map[string]any{"Job": prod}, nil)
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs", map[string]any{"Job": apitest.TestJob("web-dev")}, nil)
	devOnly := a.ClientToken(`namespace "default" { policy = "read" }`)

	a.DeniedAs("", http.MethodPost, "/v1/search", SearchRequest{Prefix: "web"})
	var out SearchResponse
	a.OKAs(devOnly, http.MethodPost, "/v1/search?namespace=*", SearchRequest{Prefix: "web"}, &out)
	if got := out.Matches["jobs"]; len(got) != 1 || got[0] != "web-dev" {
		t.Errorf("default reader found %v, want web-dev only", got)
	}
	if out.Matches["nodes"] != nil && len(out.Matches["nodes"]) != 0 {
		t.Errorf("nodes shown without node:read: %v", out.Matches["nodes"])
	}
	out = SearchResponse{}
	a.OKAs(mgmt, http.MethodPost, "/v1/search?namespace=*", SearchRequest{Prefix: "web"}, &out)
	if len(out.Matches["jobs"]) != 2 {
		t.Errorf("management found %v", out.Matches["jobs"])
	}
	_ = state.DefaultNamespace
}
