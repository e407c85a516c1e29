package jobs

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// BenchmarkNodeServicesUpsert measures one client registration (two
// entries of one allocation) against a catalog that already holds 2,000
// entries of 1,000 allocations: the cost of the ownership scan and the
// write.
func BenchmarkNodeServicesUpsert(b *testing.B) {
	h, _ := newSchedHarness(b)
	h.RegisterNode(apitest.TestNode(1))
	h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	const allocs = 1000
	var regs []*state.ServiceRegistration
	for i := 1; i <= allocs; i++ {
		h.PlaceAlloc(i, job, apitest.NodeID(1), "")
		for _, name := range []string{"web", "admin"} {
			regs = append(regs, &state.ServiceRegistration{ID: fmt.Sprintf("%s-%d", name, i), ServiceName: name, Namespace: "default",
				NodeID: apitest.NodeID(1), JobID: "web", AllocID: apitest.AllocID(i), Port: 20000 + i})
		}
	}
	h.Apply(store.ServiceUpsertRequestType, &store.ServiceUpsertRequest{Services: regs})
	body := map[string]any{"Services": []any{apitest.SvcReg("web-1", "web", apitest.AllocID(1), 1), apitest.SvcReg("admin-1", "admin", apitest.AllocID(1), 2)}}
	b.ResetTimer()
	for b.Loop() {
		h.OK(http.MethodPut, svcURL(1), body, nil)
	}
}

// BenchmarkJobServicesRead measures GET /v1/job/:job_id/services of a job
// with 2,000 entries.
func BenchmarkJobServicesRead(b *testing.B) {
	h, _ := newSchedHarness(b)
	h.RegisterNode(apitest.TestNode(1))
	h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	var regs []*state.ServiceRegistration
	for i := 1; i <= 1000; i++ {
		h.PlaceAlloc(i, job, apitest.NodeID(1), "")
		for _, name := range []string{"web", "admin"} {
			regs = append(regs, &state.ServiceRegistration{ID: fmt.Sprintf("%s-%d", name, i), ServiceName: name, Namespace: "default",
				NodeID: apitest.NodeID(1), JobID: "web", AllocID: apitest.AllocID(i), Port: 20000 + i})
		}
	}
	h.Apply(store.ServiceUpsertRequestType, &store.ServiceUpsertRequest{Services: regs})
	b.ResetTimer()
	for b.Loop() {
		h.OK(http.MethodGet, "/v1/job/web/services", nil, nil)
	}
}
