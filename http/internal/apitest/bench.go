package apitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

// ReportCPU starts counting the process's CPU time (user and system, of
// every goroutine: a stream subscriber's too); the function it returns
// reports it per iteration as cpu-ns/op. Unlike ns/op, it leaves out the
// time other processes of a shared machine take from this one.
func ReportCPU(b *testing.B) func() {
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

// BenchGet runs GET target through handler once per iteration of b's
// loop, failing on any answer but 200.
func BenchGet(b *testing.B, handler http.Handler, target string) {
	for b.Loop() {
		benchServe(b, handler, httptest.NewRequest(http.MethodGet, target, nil))
	}
}

// BenchPost runs POST target through handler once per iteration of b's
// loop with body(i) JSON-encoded, i counting from 1, failing on any answer
// but 200. It returns the last i.
func BenchPost(b *testing.B, handler http.Handler, target string, body func(i int) any) int {
	i := 0
	for b.Loop() {
		i++
		buf, err := json.Marshal(body(i))
		if err != nil {
			b.Fatal(err)
		}
		benchServe(b, handler, httptest.NewRequest(http.MethodPost, target, strings.NewReader(string(buf))))
	}
	return i
}

func benchServe(b *testing.B, handler http.Handler, req *http.Request) {
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
}
