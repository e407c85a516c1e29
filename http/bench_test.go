package http

import (
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
)

// BenchmarkJobRead measures GET /v1/job/:id through the router, the read
// barrier double, the store and JSON encoding.
func BenchmarkJobRead(b *testing.B) {
	h := newHarness(b)
	h.register(apitest.TestJob("web"))
	handler := h.srv.Handler()
	b.ReportAllocs()
	defer apitest.ReportCPU(b)()
	apitest.BenchGet(b, handler, "/v1/job/web")
}

// BenchmarkJobRegister measures POST /v1/jobs of a changed job each time
// (a new version and an eval), through JSON decoding, validation, the
// msgpack log encoding and the store's Apply.
func BenchmarkJobRegister(b *testing.B) {
	h := newHarness(b)
	handler := h.srv.Handler()
	job := apitest.TestJob("web")
	b.ReportAllocs()
	defer apitest.ReportCPU(b)()
	i := apitest.BenchPost(b, handler, "/v1/jobs", func(i int) any {
		job.TaskGroups[0].Count = i
		return &jobs.JobRegisterRequest{Job: job}
	})
	if got := h.Job("default", "web"); got == nil || got.TaskGroups[0].Count != i {
		b.Fatalf("last register not stored (want count %d)", i)
	}
}
