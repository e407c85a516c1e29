// Package apitest holds what the tests of the HTTP packages (the core, the
// jobs API, the management API) share: a harness that sends requests to a
// handler over a real store, the fake leader, ACL tokens, fixtures and a
// CPU-time benchmark metric. It imports neither the core nor the jobs API,
// so that the internal tests of both can use it; each package wraps it in a
// harness that builds its own server.
package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Now is the fixed clock of every harness.
var Now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// HeaderIndex and HeaderToken are the core's index and token headers.
const (
	HeaderIndex = "X-Sched-Index"
	HeaderToken = "X-Sched-Token"
)

// Applier is the core's in-memory writer, as the harness uses it.
type Applier interface {
	Apply(ctx context.Context, t store.MessageType, req any) (any, uint64, error)
	Writes() int
}

// Harness sends requests to a server's handler over a real store.
type Harness struct {
	T     testing.TB
	Store *store.Store
	// Writer applies commands to Store as the Raft log would.
	Writer Applier
	// Handler returns the server's handler.
	Handler func() http.Handler
}

// Do sends one request through the handler. body is sent as is when it is
// a string or []byte, JSON-encoded otherwise, and omitted when nil.
func (h *Harness) Do(method, target string, body any) *httptest.ResponseRecorder {
	h.T.Helper()
	r := testutil.Body(h.T, body)
	req := httptest.NewRequest(method, target, r)
	rec := httptest.NewRecorder()
	h.Handler().ServeHTTP(rec, req)
	return rec
}

// OK sends a request, fails the test unless it answers 200, and decodes
// the body into out (when not nil).
func (h *Harness) OK(method, target string, body, out any) *httptest.ResponseRecorder {
	h.T.Helper()
	return expectOK(h.T, h.Do(method, target, body), method, target, out)
}

func expectOK(t testing.TB, rec *httptest.ResponseRecorder, method, target string, out any) *httptest.ResponseRecorder {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("%s %s: status %d, body %q", method, target, rec.Code, rec.Body.String())
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, target, rec.Body.String(), err)
		}
	}
	return rec
}

// Fail sends a request and fails the test unless it answers code with a
// plain-text body containing every one of want.
func (h *Harness) Fail(method, target string, body any, code int, want ...string) string {
	h.T.Helper()
	rec := h.Do(method, target, body)
	msg := rec.Body.String()
	if rec.Code != code {
		h.T.Fatalf("%s %s: status %d, want %d; body %q", method, target, rec.Code, code, msg)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		h.T.Errorf("%s %s: error Content-Type %q, want text/plain", method, target, ct)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			h.T.Errorf("%s %s: body %q does not mention %q", method, target, msg, w)
		}
	}
	return msg
}

// RegisterReq registers a job through POST /v1/jobs with req (the jobs
// API's JobRegisterRequest) and returns the answer.
func (h *Harness) RegisterReq(req any) *state.JobRegisterResponse {
	h.T.Helper()
	var out state.JobRegisterResponse
	h.OK(http.MethodPost, "/v1/jobs", req, &out)
	return &out
}

// Apply writes a command straight through the writer, as the scheduler
// or a client would, and fails the test on error.
func (h *Harness) Apply(t store.MessageType, req any) uint64 {
	h.T.Helper()
	_, index, err := h.Writer.Apply(context.Background(), t, req)
	if err != nil {
		h.T.Fatalf("apply %d: %v", t, err)
	}
	return index
}

// Writes returns how many commands reached the store so far.
func (h *Harness) Writes() int {
	return h.Writer.Writes()
}

// Job reads a job from the store, nil when it does not exist.
func (h *Harness) Job(ns, id string) *state.Job {
	h.T.Helper()
	j, err := h.Store.JobByID(nil, ns, id)
	if err != nil {
		h.T.Fatal(err)
	}
	return j
}

// Registered returns the stored version of a job registered through h.
func (h *Harness) Registered(job *state.Job) *state.Job {
	h.T.Helper()
	ns := job.Namespace
	if ns == "" {
		ns = state.DefaultNamespace
	}
	j := h.Job(ns, job.ID)
	if j == nil {
		h.T.Fatalf("job %s/%s not registered", ns, job.ID)
	}
	return j
}

// CreateNamespace creates a namespace through the API.
func (h *Harness) CreateNamespace(name string) {
	h.T.Helper()
	h.OK(http.MethodPut, "/v1/namespace/"+name, map[string]string{"Description": "ns " + name}, nil)
}

// RegisterNode registers n through the API and returns the answer.
func (h *Harness) RegisterNode(n *state.Node) *state.NodeUpdateResponse {
	h.T.Helper()
	var out state.NodeUpdateResponse
	h.OK(http.MethodPut, "/v1/node/register", map[string]any{"Node": n}, &out)
	return &out
}

// Node reads a node from the store, failing the test when it is missing.
func (h *Harness) Node(id string) *state.Node {
	h.T.Helper()
	n, err := h.Store.NodeByID(nil, id)
	if err != nil || n == nil {
		h.T.Fatalf("node %s: %v, %v", id, n, err)
	}
	return n
}

// Eval reads an evaluation from the store, failing when it is missing.
func (h *Harness) Eval(id string) *state.Evaluation {
	h.T.Helper()
	e, err := h.Store.EvalByID(nil, id)
	if err != nil || e == nil {
		h.T.Fatalf("eval %s: %v, %v", id, e, err)
	}
	return e
}

// Alloc reads an allocation from the store, failing when it is missing.
func (h *Harness) Alloc(id string) *state.Allocation {
	h.T.Helper()
	a, err := h.Store.AllocByID(nil, id)
	if err != nil || a == nil {
		h.T.Fatalf("alloc %s: %v, %v", id, a, err)
	}
	return a
}

// PlaceAlloc writes allocation i of job's first group on node, as a plan
// would, and returns its ID.
func (h *Harness) PlaceAlloc(i int, job *state.Job, node, clientStatus string) string {
	h.T.Helper()
	id := AllocID(i)
	a := &state.Allocation{
		ID: id, Namespace: job.Namespace, JobID: job.ID, EvalID: "e-" + id, NodeID: node,
		Name: fmt.Sprintf("%s.%s[%d]", job.ID, job.TaskGroups[0].Name, i), TaskGroup: job.TaskGroups[0].Name,
		DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: clientStatus,
	}
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{a}, Now: Now.UnixNano()})
	return id
}

// ServeAsync runs one request in its own goroutine and closes the returned
// channel when the handler has returned.
func (h *Harness) ServeAsync(method, target string) (*httptest.ResponseRecorder, <-chan struct{}) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, target, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Handler().ServeHTTP(rec, req)
	}()
	return rec, done
}

// Park starts a blocking GET of target (ServeAsync) and checks that it
// stays parked, at once and after a write to the namespaces table, which
// it does not watch. Call it inside a synctest bubble (it waits with
// synctest.Wait).
func (h *Harness) Park(target string) (*httptest.ResponseRecorder, <-chan struct{}) {
	h.T.Helper()
	rec, done := h.ServeAsync(http.MethodGet, target)
	synctest.Wait()
	if Returned(done) {
		h.T.Fatalf("returned at once: %d %q", rec.Code, rec.Body.String())
	}
	h.CreateNamespace("unrelated")
	synctest.Wait()
	if Returned(done) {
		h.T.Fatal("woke on an unrelated write")
	}
	return rec, done
}

// Returned reports whether done is closed.
func Returned(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// HeaderIndexOf returns X-Sched-Index, failing the test when it is missing
// or not a positive integer.
func HeaderIndexOf(t testing.TB, rec *httptest.ResponseRecorder) uint64 {
	t.Helper()
	v := rec.Header().Get(HeaderIndex)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("%s = %q, want a positive integer", HeaderIndex, v)
	}
	return n
}
