package jobs

import (
	"net/http"
	"testing"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

func TestNodePools(t *testing.T) {
	h, _ := newSchedHarness(t)
	var idx struct{ Index uint64 }
	h.OK(http.MethodPut, "/v1/node/pool/gpu", map[string]any{"Description": "GPU nodes", "Meta": map[string]string{"team": "ml"}}, &idx)
	h.OK(http.MethodPost, "/v1/node/pools", map[string]any{"Name": "arm"}, nil)

	var pool state.NodePool
	h.OK(http.MethodGet, "/v1/node/pool/gpu", nil, &pool)
	if pool.Name != "gpu" || pool.Description != "GPU nodes" || pool.Meta["team"] != "ml" || pool.CreateIndex != idx.Index {
		t.Errorf("pool %+v, want created at %d", pool, idx.Index)
	}
	var pools []*state.NodePool
	h.OK(http.MethodGet, "/v1/node/pools", nil, &pools)
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	if len(names) != 4 || names[0] != "all" || names[1] != "arm" || names[2] != "default" || names[3] != "gpu" {
		t.Errorf("pools %v", names)
	}
	var prefixed []*state.NodePool
	rec := h.OK(http.MethodGet, "/v1/node/pools?prefix=a&per_page=1", nil, &prefixed)
	if len(prefixed) != 1 || prefixed[0].Name != "all" || rec.Header().Get(schedhttp.HeaderNextToken) != "arm" {
		t.Errorf("prefix page %v, next %q", prefixed, rec.Header().Get(schedhttp.HeaderNextToken))
	}

	// A node registering into a pool is listed by it; "all" has every node.
	n := apitest.TestNode(1)
	n.NodePool = "gpu"
	h.RegisterNode(n)
	h.RegisterNode(apitest.TestNode(2))
	var inPool, inAll []*state.NodeListStub
	h.OK(http.MethodGet, "/v1/node/pool/gpu/nodes", nil, &inPool)
	h.OK(http.MethodGet, "/v1/node/pool/all/nodes", nil, &inAll)
	if len(inPool) != 1 || inPool[0].ID != n.ID || len(inAll) != 2 {
		t.Errorf("gpu nodes %v, all nodes %v", stubIDs(inPool), stubIDs(inAll))
	}
	h.Fail(http.MethodGet, "/v1/node/pool/none/nodes", nil, http.StatusNotFound, "none")

	before := h.Writes()
	h.Fail(http.MethodGet, "/v1/node/pool/none", nil, http.StatusNotFound, `"none"`)
	h.Fail(http.MethodPut, "/v1/node/pool/gpu", map[string]any{"Name": "cpu"}, http.StatusBadRequest, "Name", "cpu", "gpu")
	h.Fail(http.MethodPut, "/v1/node/pool/default", map[string]any{"Description": "x"}, http.StatusBadRequest, "built-in")
	h.Fail(http.MethodPut, "/v1/node/pools", map[string]any{"Name": "all"}, http.StatusBadRequest, "built-in")
	h.Fail(http.MethodPut, "/v1/node/pools", map[string]any{}, http.StatusBadRequest, "Name: required")
	h.Fail(http.MethodPut, "/v1/node/pools", map[string]any{"Name": "bad name!"}, http.StatusBadRequest, "Name")
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'x'
	}
	h.Fail(http.MethodPut, "/v1/node/pool/arm", map[string]any{"Description": string(long)}, http.StatusBadRequest, "Description")
	h.Fail(http.MethodDelete, "/v1/node/pool/default", nil, http.StatusBadRequest, "built-in")
	h.Fail(http.MethodDelete, "/v1/node/pool/all", nil, http.StatusBadRequest, "built-in")
	h.Fail(http.MethodDelete, "/v1/node/pool/none", nil, http.StatusNotFound, "none")
	if h.Writes() != before {
		t.Fatal("refused pool writes wrote")
	}
	h.Fail(http.MethodDelete, "/v1/node/pool/gpu", nil, http.StatusConflict, "gpu", n.ID)

	// A pool used by a job that is not dead cannot go either.
	job := apitest.TestJob("web")
	job.NodePool = "arm"
	h.register(job)
	h.Fail(http.MethodDelete, "/v1/node/pool/arm", nil, http.StatusConflict, "web")
	h.OK(http.MethodDelete, "/v1/job/web?purge=true", nil, nil)
	h.OK(http.MethodDelete, "/v1/node/pool/arm", nil, nil)
	h.Fail(http.MethodGet, "/v1/node/pool/arm", nil, http.StatusNotFound)
}
