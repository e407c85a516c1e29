package jobs

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
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
	job := apitest.TestJob("web")
	b.ReportAllocs()
	defer apitest.ReportCPU(b)()
	apitest.BenchPost(b, handler, "/v1/jobs", func(i int) any {
		job.TaskGroups[0].Count = i
		return &JobRegisterRequest{Job: job}
	})
}

func BenchmarkJobReadWithSubscriber(b *testing.B) {
	h := newHarness(b)
	h.register(apitest.TestJob("web"))
	subscribe(b, h)
	handler := h.srv.Handler()
	b.ReportAllocs()
	defer apitest.ReportCPU(b)()
	apitest.BenchGet(b, handler, "/v1/job/web")
}

// BenchmarkEventEncode measures the encoding of one JobRegistered event
// (the job the other benchmarks register): "envelope" as the stream
// encodes it, "wire-struct" as encoding/json encodes the whole eventWire
// (what the stream did before).
func BenchmarkEventEncode(b *testing.B) {
	h := newHarness(b)
	h.register(apitest.TestJob("web"))
	ev := &state.Event{Topic: state.TopicJob, Type: "JobRegistered", Key: "web", Namespace: "default", Index: 9,
		Object: h.Job("default", "web")}
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
