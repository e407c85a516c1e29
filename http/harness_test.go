package http

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The tests of this package drive the real router and handlers over a real
// state store. Writes go through MemWriter, which encodes every command the
// way the Raft log does and applies it to the store, so a handler that sends
// something msgpack cannot carry fails here rather than in a cluster. The
// requests, reads and fixtures are apitest's.

// harness is one server over a fresh store.
type harness struct {
	apitest.Harness
	writer  *MemWriter
	cluster *FakeCluster
	srv     *Server
	ids     *atomic.Int64
}

func newHarness(t testing.TB) *harness {
	return newHarnessWith(t, store.Config{}, nil)
}

// newHarnessWith builds a harness with a store config and a hook to adjust
// the server config.
func newHarnessWith(t testing.TB, sc store.Config, adjust func(*testConfig)) *harness {
	t.Helper()
	st, err := store.NewStore(sc)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{writer: NewMemWriter(st), cluster: &FakeCluster{}, ids: new(atomic.Int64)}
	h.Harness = apitest.Harness{T: t, Store: st, Writer: h.writer, Handler: func() http.Handler { return h.srv.Handler() }}
	ids := h.ids
	cfg := testConfig{Config: Config{
		Store:   st,
		Writer:  h.writer,
		Cluster: h.cluster,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:     func() time.Time { return apitest.Now },
		NewID:   func() string { return apitest.SourceID(ids.Add(1)) },
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
	h.srv, err = New(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	jobs.Mount(h.srv, cfg.Jobs) // the /v1 handlers, as the agent mounts them
	return h
}

// testConfig is a harness's configuration: the core's, and the jobs
// API's mounted on it.
type testConfig struct {
	Config
	Jobs jobs.Config
}

// newSchedHarness is a harness whose server has leader services.
func newSchedHarness(t testing.TB) (*harness, *apitest.FakeLeader) {
	t.Helper()
	fl := apitest.NewFakeLeader()
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Jobs.Leader = fl })
	return h, fl
}

// on returns h reporting to t, for use inside a subtest: a helper that
// fails must stop the subtest, not its parent.
func (h *harness) on(t testing.TB) *harness {
	c := *h
	c.T = t
	return &c
}

// register registers job through POST /v1/jobs and returns the answer.
func (h *harness) register(job *state.Job) *state.JobRegisterResponse {
	h.T.Helper()
	return h.RegisterReq(&jobs.JobRegisterRequest{Job: job})
}

func itoa(i int) string { return strconv.Itoa(i) }

func urlEscape(s string) string { return url.QueryEscape(s) }
