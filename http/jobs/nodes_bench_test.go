package jobs

import (
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

// BenchmarkNodeRegister measures POST /v1/node/register of a new node
// each time, with one system job in the cluster (so each register also
// builds an evaluation): JSON decoding, validation, the computed class,
// the msgpack log encoding and the store's Apply.
func BenchmarkNodeRegister(b *testing.B) {
	h, _ := newSchedHarness(b)
	h.register(apitest.SystemJob("logs"))
	handler := h.srv.Handler()
	b.ReportAllocs()
	i := apitest.BenchPost(b, handler, "/v1/node/register", func(i int) any {
		return map[string]any{"Node": apitest.TestNode(i)}
	})
	if n, _ := h.Store.NodeByID(nil, apitest.NodeID(i)); n == nil || n.Status != state.NodeStatusReady {
		b.Fatalf("last node not stored: %+v", n)
	}
}

// BenchmarkNodeAllocationsRead measures the client's read of its
// allocations (ten, with their job) on a node of a 1,000-node cluster.
func BenchmarkNodeAllocationsRead(b *testing.B) {
	h, _ := newSchedHarness(b)
	for i := 1; i <= 1000; i++ {
		h.RegisterNode(apitest.TestNode(i))
	}
	h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	for i := 1; i <= 10; i++ {
		h.PlaceAlloc(i, job, apitest.NodeID(500), "")
	}
	handler := h.srv.Handler()
	b.ReportAllocs()
	apitest.BenchGet(b, handler, "/v1/node/"+apitest.NodeID(500)+"/allocations")
}
