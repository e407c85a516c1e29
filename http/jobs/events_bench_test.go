package jobs

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/schedhq/sched/state"
)

// subscribe opens an event stream of every topic on h's handler, served
// by a real HTTP server, and drains it in the background until the
// benchmark ends: the cost of a subscriber shows in the benchmark's
// figures (compare with BenchmarkJobRegister and BenchmarkJobRead).
func subscribe(b *testing.B, h *harness) {
	ts := httptest.NewServer(h.srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/v1/event/stream?namespace=*", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
		}
	}()
	b.Cleanup(func() { cancel(); resp.Body.Close(); <-done; ts.Close() })
}

func BenchmarkJobRegisterWithSubscriber(b *testing.B) {
	h := newHarness(b)
	subscribe(b, h)
	handler := h.srv.Handler()
	job := testJob("web")
	b.ReportAllocs()
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		i++
		job.TaskGroups[0].Count = i
		body, err := json.Marshal(&JobRegisterRequest{Job: job})
		if err != nil {
			b.Fatal(err)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(string(body))))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
	}
}

func BenchmarkJobReadWithSubscriber(b *testing.B) {
	h := newHarness(b)
	h.register(testJob("web"))
	subscribe(b, h)
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

// BenchmarkEventEncode measures the encoding of one JobRegistered event
// (the job the other benchmarks register): "envelope" as the stream
// encodes it, "wire-struct" as encoding/json encodes the whole eventWire
// (what the stream did before).
func BenchmarkEventEncode(b *testing.B) {
	h := newHarness(b)
	h.register(testJob("web"))
	ev := &state.Event{Topic: state.TopicJob, Type: "JobRegistered", Key: "web", Namespace: "default", Index: 9,
		Object: h.job("default", "web")}
	b.Run("envelope", func(b *testing.B) {
		var c eventCache
		c.enc = json.NewEncoder(&c.scratch)
		b.ReportAllocs()
		for b.Loop() {
			c.encodeEvent(ev)
		}
	})
	b.Run("wire-struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(wireEvent(ev)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU reports the CPU time per operation (bench_test.go of the core).
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
