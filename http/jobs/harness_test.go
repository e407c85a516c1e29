package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The tests of this package drive the real core (package http), with the
// jobs API mounted on it, over a real state store. Writes go through MemWriter, which encodes every command the
// way the Raft log does and applies it to the store, so a handler that sends
// something msgpack cannot carry fails here rather than in a cluster.

// testNow is the fixed clock of every harness.
var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// harness is one server over a fresh store.
type harness struct {
	t       testing.TB
	store   *store.Store
	writer  *schedhttp.MemWriter
	cluster *schedhttp.FakeCluster
	srv     *schedhttp.Server
	api     *api // the jobs API mounted on srv
	ids     *atomic.Int64
}

func newHarness(t testing.TB) *harness {
	return newHarnessWith(t, store.StoreConfig{}, nil)
}

// newHarnessWith builds a harness with a store config and a hook to adjust
// the server config.
func newHarnessWith(t testing.TB, sc store.StoreConfig, adjust func(*testConfig)) *harness {
	t.Helper()
	store, err := store.NewStore(sc)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: store, writer: schedhttp.NewMemWriter(store), cluster: &schedhttp.FakeCluster{}, ids: new(atomic.Int64)}
	ids := h.ids
	cfg := testConfig{Config: schedhttp.Config{
		Store:   store,
		Writer:  h.writer,
		Cluster: h.cluster,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:     func() time.Time { return testNow },
		NewID:   func() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", ids.Add(1)) },
	}}
	if adjust != nil {
		adjust(&cfg)
	}
	// As the agent wires them: the cluster and the local client serve
	// the jobs API's status, agent and operator endpoints too.
	if cfg.Jobs.Cluster == nil && cfg.Forwarder != nil {
		cfg.Jobs.Cluster = cfg.Forwarder
	}
	if cfg.Jobs.Client == nil && cfg.Client != nil {
		cfg.Jobs.Client = cfg.Client
	}
	h.srv, err = schedhttp.New(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	h.api = mount(h.srv, cfg.Jobs) // as the agent mounts it
	return h
}

// testConfig is a harness's configuration: the core's, and the jobs
// API's mounted on it.
type testConfig struct {
	schedhttp.Config
	Jobs Config
}

// on returns h reporting to t, for use inside a subtest: a helper that
// fails must stop the subtest, not its parent.
func (h *harness) on(t testing.TB) *harness {
	c := *h
	c.t = t
	return &c
}

// do sends one request through the handler. body is sent as is when it is
// a string or []byte, JSON-encoded otherwise, and omitted when nil.
func (h *harness) do(method, target string, body any) *httptest.ResponseRecorder {
	h.t.Helper()
	r := testutil.Body(h.t, body)
	req := httptest.NewRequest(method, target, r)
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// ok sends a request, fails the test unless it answers 200, and decodes
// the body into out (when not nil).
func (h *harness) ok(method, target string, body, out any) *httptest.ResponseRecorder {
	h.t.Helper()
	rec := h.do(method, target, body)
	if rec.Code != http.StatusOK {
		h.t.Fatalf("%s %s: status %d, body %q", method, target, rec.Code, rec.Body.String())
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			h.t.Fatalf("%s %s: decode %q: %v", method, target, rec.Body.String(), err)
		}
	}
	return rec
}

// fail sends a request and fails the test unless it answers code with a
// plain-text body containing every one of want.
func (h *harness) fail(method, target string, body any, code int, want ...string) string {
	h.t.Helper()
	rec := h.do(method, target, body)
	msg := rec.Body.String()
	if rec.Code != code {
		h.t.Fatalf("%s %s: status %d, want %d; body %q", method, target, rec.Code, code, msg)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		h.t.Errorf("%s %s: error Content-Type %q, want text/plain", method, target, ct)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			h.t.Errorf("%s %s: body %q does not mention %q", method, target, msg, w)
		}
	}
	return msg
}

// register registers job through POST /v1/jobs and returns the answer.
func (h *harness) register(job *state.Job) *state.JobRegisterResponse {
	h.t.Helper()
	return h.registerReq(&JobRegisterRequest{Job: job})
}

func (h *harness) registerReq(req *JobRegisterRequest) *state.JobRegisterResponse {
	h.t.Helper()
	var out state.JobRegisterResponse
	h.ok(http.MethodPost, "/v1/jobs", req, &out)
	return &out
}

// apply writes a command straight through the writer, as the scheduler
// or a client would, and fails the test on error.
func (h *harness) apply(t store.MessageType, req any) uint64 {
	h.t.Helper()
	_, index, err := h.writer.Apply(context.Background(), t, req)
	if err != nil {
		h.t.Fatalf("apply %d: %v", t, err)
	}
	return index
}

// job reads a job from the store, nil when it does not exist.
func (h *harness) job(ns, id string) *state.Job {
	h.t.Helper()
	j, err := h.store.JobByID(nil, ns, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// createNamespace creates a namespace through the API.
func (h *harness) createNamespace(name string) {
	h.t.Helper()
	h.ok(http.MethodPut, "/v1/namespace/"+name, map[string]string{"Description": "ns " + name}, nil)
}

// headerIndex returns X-Sched-Index, failing the test when it is missing
// or not a positive integer.
func headerIndex(t testing.TB, rec *httptest.ResponseRecorder) uint64 {
	t.Helper()
	v := rec.Header().Get(schedhttp.HeaderIndex)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("%s = %q, want a positive integer", schedhttp.HeaderIndex, v)
	}
	return n
}

// testJob is a minimal valid service job: one group "web" of Count 2 with
// one task "server".
func testJob(id string) *state.Job {
	return &state.Job{
		ID:          id,
		Type:        state.JobTypeService,
		Datacenters: []string{"dc1"},
		Meta:        map[string]string{"owner": "team-" + id},
		TaskGroups: []*state.TaskGroup{{
			Name:  "web",
			Count: 2,
			Tasks: []*state.Task{{
				Name:      "server",
				Driver:    "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"60"}},
				Resources: &state.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
}

// batchJob is testJob as a batch job.
func batchJob(id string) *state.Job {
	j := testJob(id)
	j.Type = state.JobTypeBatch
	return j
}

// periodicJob is a batch job launched every minute.
func periodicJob(id string) *state.Job {
	j := batchJob(id)
	j.Periodic = &state.PeriodicConfig{Enabled: true, Spec: "* * * * *"}
	return j
}

// parameterizedJob is a batch job instantiated by dispatch.
func parameterizedJob(id string) *state.Job {
	j := batchJob(id)
	j.ParameterizedJob = &state.ParameterizedJobConfig{Payload: state.DispatchPayloadOptional}
	return j
}

func itoa(i int) string { return strconv.Itoa(i) }

func urlEscape(s string) string { return url.QueryEscape(s) }

// serveAsync runs one request in its own goroutine and closes the returned
// channel when the handler has returned.
func serveAsync(h *harness, method, target string) (*httptest.ResponseRecorder, <-chan struct{}) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, target, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.srv.Handler().ServeHTTP(rec, req)
	}()
	return rec, done
}

func returned(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// rulesText writes policy rules: capabilities in namespace "*" (or ns),
// and node, agent and operator levels ("" for no rule).
func rulesText(ns string, caps []string, node, agent, operator string) string {
	var b strings.Builder
	if len(caps) > 0 {
		fmt.Fprintf(&b, "namespace %q {\n  capabilities = [%s]\n}\n", ns, quoteAll(caps))
	}
	for _, lv := range [][2]string{{"node", node}, {"agent", agent}, {"operator", operator}} {
		if lv[1] != "" {
			fmt.Fprintf(&b, "%s { policy = %q }\n", lv[0], lv[1])
		}
	}
	return b.String()
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
