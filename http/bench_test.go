package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/schedhq/sched/http/jobs"
)

// BenchmarkJobRead measures GET /v1/job/:id through the router, the read
// barrier double, the store and JSON encoding.
func BenchmarkJobRead(b *testing.B) {
	h := newHarness(b)
	h.register(testJob("web"))
	handler := h.srv.Handler()
	b.ReportAllocs()
	defer reportCPU(b)()
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
	job := testJob("web")
	b.ReportAllocs()
	defer reportCPU(b)()
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
	if got := h.job("default", "web"); got == nil || got.TaskGroups[0].Count != i {
		b.Fatalf("last register not stored (want count %d)", i)
	}
}

// reportCPU starts counting the process's CPU time (user and system, of
// every goroutine: a stream subscriber's too); the function it returns
// reports it per iteration as cpu-ns/op. Unlike ns/op, it leaves out the
// time other processes of a shared machine take from this one.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// cpuTime is the CPU time this process has used, in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
