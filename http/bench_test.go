package http

import (
	"encoding/json"
	"github.com/schedhq/sched/http/internal/apitest"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	for b.Loop() {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/job/web", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
	}
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
	i := 0
	for b.Loop() {
		i++
		job.TaskGroups[0].Count = i
		body, err := json.Marshal(&jobs.JobRegisterRequest{Job: job})
		if err != nil {
			b.Fatal(err)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(string(body))))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
	}
	if got := h.Job("default", "web"); got == nil || got.TaskGroups[0].Count != i {
		b.Fatalf("last register not stored (want count %d)", i)
	}
}
