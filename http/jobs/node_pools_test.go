package jobs

import (
	"net/http"
	"testing"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/state"
)

func TestNodePools(t *testing.T) {
	h, _ := newSchedHarness(t)
	var idx struct{ Index uint64 }
	h.ok(http.MethodPut, "/v1/node/pool/gpu", map[string]any{"Description": "GPU nodes", "Meta": map[string]string{"team": "ml"}}, &idx)
	h.ok(http.MethodPost, "/v1/node/pools", map[string]any{"Name": "arm"}, nil)

	var pool state.NodePool
	h.ok(http.MethodGet, "/v1/node/pool/gpu", nil, &pool)
	if pool.Name != "gpu" || pool.Description != "GPU nodes" || pool.Meta["team"] != "ml" || pool.CreateIndex != idx.Index {
		t.Errorf("pool %+v, want created at %d", pool, idx.Index)
	}
	var pools []*state.NodePool
	h.ok(http.MethodGet, "/v1/node/pools", nil, &pools)
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	if len(names) != 4 || names[0] != "all" || names[1] != "arm" || names[2] != "default" || names[3] != "gpu" {
		t.Errorf("pools %v", names)
	}
	var prefixed []*state.NodePool
	rec := h.ok(http.MethodGet, "/v1/node/pools?prefix=a&per_page=1", nil, &prefixed)
	if len(prefixed) != 1 || prefixed[0].Name != "all" || rec.Header().Get(schedhttp.HeaderNextToken) != "arm" {
		t.Errorf("prefix page %v, next %q", prefixed, rec.Header().Get(schedhttp.HeaderNextToken))
	}

	// A node registering into a pool is listed by it; "all" has every node.
	n := testNode(1)
	n.NodePool = "gpu"
	h.registerNode(n)
	h.registerNode(testNode(2))
	var inPool, inAll []*state.NodeListStub
	h.ok(http.MethodGet, "/v1/node/pool/gpu/nodes", nil, &inPool)
	h.ok(http.MethodGet, "/v1/node/pool/all/nodes", nil, &inAll)
	if len(inPool) != 1 || inPool[0].ID != n.ID || len(inAll) != 2 {
		t.Errorf("gpu nodes %v, all nodes %v", stubIDs(inPool), stubIDs(inAll))
	}
	h.fail(http.MethodGet, "/v1/node/pool/none/nodes", nil, http.StatusNotFound, "none")

	before := h.writes()
	h.fail(http.MethodGet, "/v1/node/pool/none", nil, http.StatusNotFound, `"none"`)
	h.fail(http.MethodPut, "/v1/node/pool/gpu", map[string]any{"Name": "cpu"}, http.StatusBadRequest, "Name", "cpu", "gpu")
	h.fail(http.MethodPut, "/v1/node/pool/default", map[string]any{"Description": "x"}, http.StatusBadRequest, "built-in")
	h.fail(http.MethodPut, "/v1/node/pools", map[string]any{"Name": "all"}, http.StatusBadRequest, "built-in")
	h.fail(http.MethodPut, "/v1/node/pools", map[string]any{}, http.StatusBadRequest, "Name: required")
	h.fail(http.MethodPut, "/v1/node/pools", map[string]any{"Name": "bad name!"}, http.StatusBadRequest, "Name")
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'x'
	}
	h.fail(http.MethodPut, "/v1/node/pool/arm", map[string]any{"Description": string(long)}, http.StatusBadRequest, "Description")
	h.fail(http.MethodDelete, "/v1/node/pool/default", nil, http.StatusBadRequest, "built-in")
	h.fail(http.MethodDelete, "/v1/node/pool/all", nil, http.StatusBadRequest, "built-in")
	h.fail(http.MethodDelete, "/v1/node/pool/none", nil, http.StatusNotFound, "none")
	if h.writes() != before {
		t.Fatal("refused pool writes wrote")
	}
	h.fail(http.MethodDelete, "/v1/node/pool/gpu", nil, http.StatusConflict, "gpu", n.ID)

	// A pool used by a job that is not dead cannot go either.
	job := testJob("web")
	job.NodePool = "arm"
	h.register(job)
	h.fail(http.MethodDelete, "/v1/node/pool/arm", nil, http.StatusConflict, "web")
	h.ok(http.MethodDelete, "/v1/job/web?purge=true", nil, nil)
	h.ok(http.MethodDelete, "/v1/node/pool/arm", nil, nil)
	h.fail(http.MethodGet, "/v1/node/pool/arm", nil, http.StatusNotFound)
}
