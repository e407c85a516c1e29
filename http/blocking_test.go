package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
)

// TestBlockingJobReadWakesOnWrite parks a blocking read of a job, checks
// that neither time alone (short of the wait) nor an unrelated write
// releases it, then updates the job and checks the read returns the new
// version. synctest makes "parked" observable: synctest.Wait returns only
// once the handler goroutine is durably blocked on its watch set.
func TestBlockingJobReadWakesOnWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		reg := h.register(apitest.TestJob("web"))
		start := time.Now()
		rec, done := h.Park("/v1/job/web?index=" + strconv.FormatUint(reg.Index, 10) + "&wait=5s") // an unrelated write does not wake it
		time.Sleep(4 * time.Second)                                                                // fake time: well inside the wait
		synctest.Wait()
		if apitest.Returned(done) {
			t.Fatal("returned before the wait ended and before any job write")
		}

		changed := apitest.TestJob("web")
		changed.TaskGroups[0].Count = 7
		upd := h.register(changed)
		<-done

		if elapsed := time.Since(start); elapsed != 4*time.Second {
			t.Errorf("returned after %v, want right at the write (4s)", elapsed)
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %q", rec.Code, rec.Body.String())
		}
		var job state.Job
		if err := json.Unmarshal(rec.Body.Bytes(), &job); err != nil {
			t.Fatal(err)
		}
		if job.TaskGroups[0].Count != 7 || job.Version != 1 {
			t.Errorf("woke with job Version %d Count %d, want the update", job.Version, job.TaskGroups[0].Count)
		}
		if got := apitest.HeaderIndexOf(t, rec); got != upd.Index || got <= reg.Index {
			t.Errorf("index %d, want the update's %d", got, upd.Index)
		}
	})
}

// TestBlockingTimesOut: with nothing written, the read returns after its
// wait (plus at most 1/16 jitter) with the index it was given. No wait
// parameter means the default of 5m.
func TestBlockingTimesOut(t *testing.T) {
	cases := []struct {
		target string
		param  string
		wait   time.Duration
	}{
		{"/v1/job/web", "50ms", 50 * time.Millisecond},
		{"/v1/job/web", "", 5 * time.Minute},
		{"/v1/jobs", "2s", 2 * time.Second},
		{"/v1/job/web/allocations", "1s", time.Second},
		{"/v1/job/web/summary", "1s", time.Second},
		{"/v1/job/web/versions", "1s", time.Second},
		{"/v1/namespaces", "1s", time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.target+" "+tc.param, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.register(apitest.TestJob("web"))
				var have uint64
				{
					rec := h.OK(http.MethodGet, tc.target, nil, nil)
					have = apitest.HeaderIndexOf(t, rec)
				}
				start := time.Now()
				target := tc.target + "?index=" + strconv.FormatUint(have, 10)
				if tc.param != "" {
					target += "&wait=" + tc.param
				}
				rec, done := h.ServeAsync(http.MethodGet, target)
				<-done
				elapsed := time.Since(start)
				if elapsed < tc.wait || elapsed > tc.wait+tc.wait/16+time.Nanosecond {
					t.Errorf("returned after %v, want %v plus at most 1/16", elapsed, tc.wait)
				}
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d: %q", rec.Code, rec.Body.String())
				}
				if got := apitest.HeaderIndexOf(t, rec); got != have {
					t.Errorf("index %d after a timeout, want the same %d", got, have)
				}
			})
		})
	}
}

// TestBlockingWaitIsCapped: a wait over the maximum is cut to it.
func TestBlockingWaitIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		reg := h.register(apitest.TestJob("web"))
		start := time.Now()
		_, done := h.ServeAsync(http.MethodGet, "/v1/job/web?index="+strconv.FormatUint(reg.Index, 10)+"&wait=24h")
		<-done
		if elapsed := time.Since(start); elapsed > 10*time.Minute+10*time.Minute/16+time.Nanosecond {
			t.Errorf("blocked %v, want at most 10m plus jitter", elapsed)
		}
	})
}

// TestBlockingOlderIndexReturnsAtOnce: an index below the current one is
// answered without waiting.
func TestBlockingOlderIndexReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		reg := h.register(apitest.TestJob("web"))
		start := time.Now()
		rec, done := h.ServeAsync(http.MethodGet, "/v1/job/web?index="+strconv.FormatUint(reg.Index-1, 10)+"&wait=1m")
		<-done
		if time.Since(start) != 0 || apitest.HeaderIndexOf(t, rec) != reg.Index {
			t.Errorf("waited %v, index %s", time.Since(start), rec.Header().Get(HeaderIndex))
		}
	})
}

// TestReadBarrier: reads fail with the barrier's error unless stale, and
// every read sets the index and leader headers.
func TestReadBarrier(t *testing.T) {
	reads := []string{
		"/v1/jobs",
		"/v1/job/web",
		"/v1/job/web/submission?version=0",
		"/v1/job/web/versions",
		"/v1/job/web/allocations",
		"/v1/job/web/evaluations",
		"/v1/job/web/deployments",
		"/v1/job/web/deployment",
		"/v1/job/web/summary",
		"/v1/namespaces",
		"/v1/namespace/default",
	}
	h := newHarness(t)
	h.RegisterReq(&jobs.JobRegisterRequest{Job: apitest.TestJob("web"), Submission: &state.JobSubmission{Format: "hcl2", Source: `job "web" {}`}})
	for _, target := range reads {
		t.Run(target, func(t *testing.T) {
			h := h.on(t)
			h.cluster.barrierErr.Store(nil)
			calls := h.cluster.BarrierCalls.Load()
			rec := h.OK(http.MethodGet, target, nil, nil)
			if h.cluster.BarrierCalls.Load() != calls+1 {
				t.Error("a consistent read did not pass the read barrier")
			}
			apitest.HeaderIndexOf(t, rec)
			if rec.Header().Get(HeaderKnownLeader) != "true" || rec.Header().Get(HeaderLastContact) != "0" {
				t.Errorf("leader headers %q %q", rec.Header().Get(HeaderKnownLeader), rec.Header().Get(HeaderLastContact))
			}

			h.cluster.FailBarrier(&CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader"})
			h.Fail(http.MethodGet, target, nil, http.StatusServiceUnavailable, "no cluster leader")
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			h.Fail(http.MethodGet, target+sep+"stale=false", nil, http.StatusServiceUnavailable, "no cluster leader")

			calls = h.cluster.BarrierCalls.Load()
			for _, stale := range []string{"stale", "stale=true"} {
				rec = h.OK(http.MethodGet, target+sep+stale, nil, nil)
				apitest.HeaderIndexOf(t, rec)
			}
			if h.cluster.BarrierCalls.Load() != calls {
				t.Error("a stale read waited on the read barrier")
			}
		})
	}
}

// TestOverNetwork runs a write and a read through a real HTTP server, so
// the handler is exercised with real request bodies and connections.
func TestOverNetwork(t *testing.T) {
	h := newHarness(t)
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()

	body := jobBody(t, apitest.TestJob("web"), nil)
	req, err := http.NewRequest(http.MethodPut, ts.URL+"/v1/job/web", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var reg state.JobRegisterResponse
	err = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || reg.EvalID == "" {
		t.Fatalf("register: %d %+v %v", resp.StatusCode, reg, err)
	}

	resp, err = ts.Client().Get(ts.URL + "/v1/job/web?index=1&wait=1s")
	if err != nil {
		t.Fatal(err)
	}
	var job state.Job
	err = json.NewDecoder(resp.Body).Decode(&job)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || job.ID != "web" {
		t.Fatalf("read: %d %+v %v", resp.StatusCode, job, err)
	}
	if resp.Header.Get(HeaderIndex) != strconv.FormatUint(reg.Index, 10) {
		t.Errorf("index header %q, want %d", resp.Header.Get(HeaderIndex), reg.Index)
	}
}
