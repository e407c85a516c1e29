package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"
	dto "github.com/prometheus/client_model/go"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// serveAsyncAs is serveAsync with X-Sched-Token: secret ("" sends none).
func serveAsyncAs(h *harness, secret, target string) (*httptest.ResponseRecorder, <-chan struct{}) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if secret != "" {
		req.Header.Set(HeaderToken, secret)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.srv.Handler().ServeHTTP(rec, req)
	}()
	return rec, done
}

func jobsIndex(h *harness) uint64 {
	return max(h.Store.Index(store.TableJobs), h.Store.Index(store.TableJobSummary))
}

func jobIDs(t *testing.T, rec *httptest.ResponseRecorder) []string {
	t.Helper()
	var stubs []*state.JobListStub
	if err := json.Unmarshal(rec.Body.Bytes(), &stubs); err != nil {
		t.Fatalf("%v: %q", err, rec.Body.String())
	}
	var ids []string
	for _, s := range stubs {
		ids = append(ids, s.Namespace+"/"+s.ID)
	}
	return ids
}

// TestBlockingReadsShareOneAnswer: many callers of one list at one index
// wait as one question, and the write that wakes them is answered with
// the same bytes for all, with the index and length headers.
func TestBlockingReadsShareOneAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.register(apitest.TestJob("a"))
		h.register(apitest.TestJob("b"))
		target := "/v1/jobs?index=" + strconv.FormatUint(jobsIndex(h), 10) + "&wait=1m"
		const n = 40
		recs := make([]*httptest.ResponseRecorder, n)
		dones := make([]<-chan struct{}, n)
		for i := range n {
			q := target
			if i%2 == 1 {
				q += "&stale" // how a caller reads changes nothing of the answer
			}
			recs[i], dones[i] = h.ServeAsync(http.MethodGet, q)
		}
		synctest.Wait()
		if got := h.srv.answers.groups.Questions(); got != 1 {
			t.Fatalf("%d questions for one list, want 1", got)
		}
		if got := blockingInFlight(h.srv); got != n {
			t.Fatalf("in-flight gauge %v, want %d", got, n)
		}
		reg := h.register(apitest.TestJob("c"))
		for i := range n {
			<-dones[i]
			if recs[i].Code != http.StatusOK {
				t.Fatalf("status %d: %q", recs[i].Code, recs[i].Body.String())
			}
			if !bytes.Equal(recs[i].Body.Bytes(), recs[0].Body.Bytes()) {
				t.Fatalf("answer %d differs from the first", i)
			}
			if got := apitest.HeaderIndexOf(t, recs[i]); got != reg.Index {
				t.Fatalf("index %d, want the write's %d", got, reg.Index)
			}
			if cl := recs[i].Header().Get("Content-Length"); cl != strconv.Itoa(recs[i].Body.Len()) {
				t.Fatalf("Content-Length %q for %d bytes", cl, recs[i].Body.Len())
			}
		}
		if got := strings.Join(jobIDs(t, recs[0]), ","); got != "default/a,default/b,default/c" {
			t.Fatalf("jobs %s", got)
		}
		// The answer is what a non-blocking read gives.
		plain := h.OK(http.MethodGet, "/v1/jobs", nil, nil)
		if !bytes.Equal(plain.Body.Bytes(), recs[0].Body.Bytes()) {
			t.Fatalf("shared answer %q, a plain read %q", recs[0].Body.String(), plain.Body.String())
		}
		synctest.Wait()
		if got := h.srv.answers.groups.Questions(); got != 0 {
			t.Fatalf("%d questions left after every caller", got)
		}
	})
}

// TestBlockingReadsShareOnlyTheSameQuestion: callers whose parameters,
// namespace or permissions differ wait apart, and each gets its own
// answer; management tokens share one.
func TestBlockingReadsShareOnlyTheSameQuestion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newACLHarness(t, true, "")
		mgmt, mgmt2 := a.ManagementToken(), a.ManagementToken()
		a.OKAs(mgmt, http.MethodPut, "/v1/namespace/other", map[string]string{"Description": "other"}, nil)
		web := apitest.TestJob("web")
		other := apitest.TestJob("web-other")
		other.Namespace = "other"
		a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: web}, nil)
		a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: other}, nil)
		readDefault := a.ClientToken(`namespace "default" { policy = "read" }`)
		readOther := a.ClientToken(`namespace "other" { policy = "read" }`)
		idx := strconv.FormatUint(jobsIndex(a.harness), 10)
		all := "/v1/jobs?namespace=*&index=" + idx
		cases := []struct {
			secret, target, want string
		}{
			{readDefault, all, "default/web,default/web2"},
			{readOther, all, "other/web-other"},
			{mgmt, all, "default/web,default/web2,other/web-other"},
			{mgmt2, all, "default/web,default/web2,other/web-other"},
			{mgmt, "/v1/jobs?index=" + idx, "default/web,default/web2"},
			{mgmt, "/v1/jobs?namespace=other&index=" + idx, "other/web-other"},
			{mgmt, "/v1/jobs?prefix=web2&index=" + idx, "default/web2"},
		}
		recs := make([]*httptest.ResponseRecorder, len(cases))
		dones := make([]<-chan struct{}, len(cases))
		for i, tc := range cases {
			recs[i], dones[i] = serveAsyncAs(a.harness, tc.secret, tc.target)
		}
		synctest.Wait()
		// The two management tokens share: one question fewer than callers.
		if got := a.srv.answers.groups.Questions(); got != len(cases)-1 {
			t.Fatalf("%d questions, want %d", got, len(cases)-1)
		}
		a.OKAs(mgmt, http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: apitest.TestJob("web2")}, nil)
		for i, tc := range cases {
			<-dones[i]
			if recs[i].Code != http.StatusOK {
				t.Fatalf("%s: status %d %q", tc.target, recs[i].Code, recs[i].Body.String())
			}
			if got := strings.Join(jobIDs(t, recs[i]), ","); got != tc.want {
				t.Errorf("case %d %s: jobs %s, want %s", i, tc.target, got, tc.want)
			}
		}
	})
}

// TestBlockingReadLimitAnswersAtOnce: past max_blocking_queries a
// blocking read is answered at once with the current result and index,
// and counted.
func TestBlockingReadLimitAnswersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.MaxBlockingQueries = 2 })
		reg := h.register(apitest.TestJob("web"))
		target := "/v1/jobs?index=" + strconv.FormatUint(jobsIndex(h), 10) + "&wait=1m"
		_, d1 := h.ServeAsync(http.MethodGet, target)
		_, d2 := h.ServeAsync(http.MethodGet, "/v1/job/web?index="+strconv.FormatUint(reg.Index, 10)) // unshared reads count too
		synctest.Wait()
		start := time.Now()
		rec := h.OK(http.MethodGet, target, nil, nil)
		if time.Since(start) != 0 {
			t.Fatalf("the caller past the limit waited %v", time.Since(start))
		}
		if got := apitest.HeaderIndexOf(t, rec); got != jobsIndex(h) {
			t.Fatalf("index %d, want the current %d", got, jobsIndex(h))
		}
		if got := strings.Join(jobIDs(t, rec), ","); got != "default/web" {
			t.Fatalf("jobs %s", got)
		}
		var m dto.Metric
		h.srv.metrics.blockingEarly.Write(&m)
		if got := m.GetCounter().GetValue(); got != 1 {
			t.Fatalf("early answers %v, want 1", got)
		}
		upd := apitest.TestJob("web")
		upd.TaskGroups[0].Count = 3
		h.register(upd)
		<-d1
		<-d2
	})
}

// TestBlockingReadOfAbsentJobWaitsForIt: a handler's error after its read
// (404: no such job yet) is the answer at that index, so the caller keeps
// waiting, as before answers were shared.
func TestBlockingReadOfAbsentJobWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.register(apitest.TestJob("web"))
		target := "/v1/job/later?index=" + strconv.FormatUint(jobsIndex(h), 10) + "&wait=1m"
		rec, done := h.ServeAsync(http.MethodGet, target)
		rec2, done2 := h.ServeAsync(http.MethodGet, target)
		synctest.Wait()
		if apitest.Returned(done) || apitest.Returned(done2) {
			t.Fatalf("returned at once: %d %q", rec.Code, rec.Body.String())
		}
		h.register(apitest.TestJob("later"))
		<-done
		<-done2
		for _, r := range []*httptest.ResponseRecorder{rec, rec2} {
			if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"ID":"later"`) {
				t.Fatalf("status %d %q", r.Code, r.Body.String())
			}
		}
		// And a job that stays absent answers 404 once the wait ends.
		start := time.Now()
		rec, done = h.ServeAsync(http.MethodGet, "/v1/job/never?index="+strconv.FormatUint(jobsIndex(h), 10)+"&wait=2s")
		<-done
		if rec.Code != http.StatusNotFound || time.Since(start) < 2*time.Second {
			t.Fatalf("status %d after %v", rec.Code, time.Since(start))
		}
		if apitest.HeaderIndexOf(t, rec) != jobsIndex(h) {
			t.Fatalf("404 without the index")
		}
	})
}

// TestBlockingReadOfLargeAnswerSharesTheWaitOnly: an answer past the
// shared bound is written by each caller itself, once the shared wait
// ends.
func TestBlockingReadOfLargeAnswerSharesTheWaitOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.srv.answers.maxBytes = 100
		h.register(apitest.TestJob("web"))
		target := "/v1/jobs?index=" + strconv.FormatUint(jobsIndex(h), 10)
		rec, done := h.ServeAsync(http.MethodGet, target)
		rec2, done2 := h.ServeAsync(http.MethodGet, target)
		synctest.Wait()
		if got := h.srv.answers.groups.Questions(); got != 1 {
			t.Fatalf("%d questions, want 1", got)
		}
		reg := h.register(apitest.TestJob("web2"))
		<-done
		<-done2
		for _, r := range []*httptest.ResponseRecorder{rec, rec2} {
			if r.Code != http.StatusOK || apitest.HeaderIndexOf(t, r) != reg.Index {
				t.Fatalf("status %d index %s", r.Code, r.Header().Get(HeaderIndex))
			}
			if got := strings.Join(jobIDs(t, r), ","); got != "default/web,default/web2" {
				t.Fatalf("jobs %s", got)
			}
		}
	})
}

// TestBlockingReadOfUnwatchedHandlerRunsAsBefore: a handler that does not
// read through Server.read (the token's own record) answers as it did.
func TestBlockingReadOfUnwatchedHandlerRunsAsBefore(t *testing.T) {
	a := newACLHarness(t, true, "")
	secret := a.ClientToken(`namespace "default" { policy = "read" }`)
	for range 2 {
		var tok state.ACLToken
		a.OKAs(secret, http.MethodGet, "/v1/acl/token/self?index=1&wait=1s", nil, &tok)
		if tok.AccessorID != a.AccessorOf(secret) {
			t.Fatalf("token self answered %+v", tok)
		}
	}
}

// TestBlockingReadPanicIsA500: a handler's panic in a group's run, off the
// connection's goroutine where net/http would recover it, answers 500 to
// the waiters and leaves the server up.
func TestBlockingReadPanicIsA500(t *testing.T) {
	h := newHarness(t)
	h.srv.handle(http.MethodGet, "/v1/test/panic", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
		err := h.srv.read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) { return 1, nil })
		if err != nil {
			return nil, err
		}
		panic("boom")
	})
	h.Fail(http.MethodGet, "/v1/test/panic?index=5", nil, http.StatusInternalServerError, "panicked")
	h.OK(http.MethodGet, "/v1/jobs", nil, nil)
}
