// Package http is sched's HTTP core: the server, its route table
// (package http/router), the codec it shares with the client agent's
// surface (http/codec: one error-to-status mapper, bodies, query
// parameters), forwarding to the leader, authentication and the ACL rule
// of every /v1 route (the request's namespace resolved once, here),
// limits, blocking reads, metrics. The jobs API (/v1, package http/jobs)
// and the management API (/api/v2, package http/mgmt) are mounted on the
// core through the methods of mount.go; the agent wires them. What a
// client agent serves of its allocations (logs, files, stats, exec) is
// package http/clientapi: the core serves it for the client of its own
// process and relays it, signed, to other nodes (relay, node_proxy.go).
// Writes are turned into replicated commands and handed to a Writer.
//
// Handlers return (value, error); one wrapper encodes the value as JSON and
// maps typed errors to status codes, so no handler writes a status itself.
package http

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedhq/sched/http/agentops"
	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/http/router"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Writer commits a command through consensus and returns what the state
// machine answered. An error answer from the state machine comes back as
// err, keeping its chain (errors.Is against state's sentinels works).
type Writer interface {
	Apply(ctx context.Context, t store.MessageType, req any) (resp any, index uint64, err error)
}

// Cluster tells a handler what it needs of the consensus layer for reads.
type Cluster interface {
	// KnownLeader reports whether this server knows a current leader.
	KnownLeader() bool
	// LastContact is the time since this server last heard from the
	// leader; zero on the leader itself.
	LastContact() time.Duration
	// ReadBarrier returns once the local store holds every write that was
	// committed when it was called, for consistent reads.
	ReadBarrier(ctx context.Context) error
}

// Config wires a Server. Store, Writer and Cluster are required.
type Config struct {
	Store   *store.Store
	Writer  Writer
	Cluster Cluster
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock used to stamp submit and create times; nil means
	// time.Now.
	Now func() time.Time
	// NewID makes IDs for evaluations and other objects; nil means random
	// UUIDs.
	NewID func() string
	// MaxBodyBytes bounds request bodies; zero means 32 MiB.
	MaxBodyBytes int64
	// ACL resolves tokens and enforces /v1 capabilities. Nil means every
	// request is allowed.
	ACL ACLResolver
	// Forwarder sends requests this server cannot answer itself to the
	// leader. Nil means answer locally.
	Forwarder Forwarder
	// ForwardTLS, when set, makes forwarding to the leader HTTPS with this
	// config: the CA as RootCAs, the name every server's certificate
	// carries as ServerName, and this server's certificate for a leader
	// that requires one. Nil forwards over plain HTTP.
	ForwardTLS *tls.Config
	// NodeTLS, when set, makes requests proxied to a node's agent
	// (/v1/client/...) HTTPS with this config. Nil proxies over plain HTTP.
	NodeTLS *tls.Config
	// EnableDebug serves the runtime profiles (GET /v1/agent/pprof/...)
	// without ACLs; with ACLs on they are served to agent:write tokens
	// either way.
	EnableDebug bool
	// Client is the client agent running in this process (dev mode), which
	// serves /v1/client/* for its own allocations; nil proxies every such
	// request to the allocation's node (node_proxy.go).
	Client clientapi.Client
	// LocalIntroSecret, when set, introduces a new node on a register as a
	// node:write token would: the agent gives it to the client running in
	// its own process, so that a dev agent with ACLs on needs no token.
	// It is never stored nor sent off the host; a register forwarded to
	// another leader needs the client's intro_token instead.
	LocalIntroSecret string
	// ExecIdleTimeout ends an exec or action session in which nothing
	// moved for this long; zero means clientapi.DefaultExecIdleTimeout.
	ExecIdleTimeout time.Duration
	// Monitor copies this agent's log lines to /v1/agent/monitor; nil
	// answers that endpoint 501.
	Monitor LogMonitor
	// Metrics serves /v1/metrics; nil answers it 501.
	Metrics MetricsSource
	// MaxBlockingQueries bounds the blocking reads (?index=) waiting at
	// once; one beyond it is answered at once with the current result
	// and index (agent config limits.max_blocking_queries). Zero means
	// DefaultMaxBlockingQueries; negative means no bound.
	MaxBlockingQueries int
}

// LogMonitor copies an agent's log lines to a reader (agentops.LogMonitor).
type LogMonitor = agentops.LogMonitor

// MetricsSource is what GET /v1/metrics reports (agentops.MetricsSource).
type MetricsSource = agentops.MetricsSource

// Server is the HTTP API of one sched server agent.
type Server struct {
	cfg    Config
	store  *store.Store
	log    *slog.Logger
	router *router.Router
	// execTimes are the clocks of exec sessions (clientapi.Timings).
	execTimes clientapi.Timings
	// metrics are the HTTP layer's own metrics (ops.go).
	metrics *httpMetrics
	// answers are the blocking reads' shared answers and their bound
	// (answers.go).
	answers answers
	// unavailable samples the log lines of 503 answers (codec.go).
	unavailable unavailableLog
}

// New validates cfg, fills its defaults and builds the routes.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Writer == nil || cfg.Cluster == nil {
		return nil, errors.New("http: Store, Writer and Cluster are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewID == nil {
		cfg.NewID = state.NewID
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.MaxBlockingQueries == 0 {
		cfg.MaxBlockingQueries = DefaultMaxBlockingQueries
	}
	s := &Server{cfg: cfg, store: cfg.Store, log: cfg.Logger, router: router.New(),
		execTimes: clientapi.DefaultTimings(cfg.ExecIdleTimeout), metrics: newHTTPMetrics(),
		answers: newAnswers(cfg.Store, cfg.MaxBlockingQueries)}
	s.metrics.blockingEarly = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: "sched", Subsystem: "http", Name: "blocking_queries_answered_early_total",
		Help: "Blocking queries answered at once, without waiting, because limits.max_blocking_queries were waiting.",
	}, func() float64 { return float64(s.answers.limit.Early()) })
	s.router.RedirectTrailingSlash = false
	s.router.HandleMethodNotAllowed = true
	s.router.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeRouteError(w, r, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	})
	s.router.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeRouteError(w, r, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	s.routes()
	return s, nil
}

// Handler returns the server's root handler: the router, behind request
// forwarding to the leader when a Forwarder is configured (forward.go).
// Each call builds a new forwarding layer; call it once.
func (s *Server) Handler() http.Handler { return s.withForwarding(s.router) }

// route is a registered endpoint: its method and path pattern. Per-route
// rules (the capability a request needs) are keyed by it.
type route struct {
	Method string
	Path   string
}

// handle registers h for method and path. Every endpoint goes through
// here, so the wrapper knows which route a request matched.
func (s *Server) handle(method, path string, h codec.Handler) {
	s.router.Handle(method, path, s.wrap(route{Method: method, Path: path}, h))
}

// write registers h for POST and PUT: Nomad's own client and CLI write with
// PUT, curl users with POST, and both must work.
func (s *Server) write(path string, h codec.Handler) {
	s.handle(http.MethodPost, path, h)
	s.handle(http.MethodPut, path, h)
}

// routes registers the core's own endpoints. Each area keeps its routes in
// its own file; the /v1 jobs API (http/jobs) and the management API
// (http/mgmt) mount theirs through mount.go.
func (s *Server) routes() {
	s.defaultACL()             // acl.go: a resolver over the store when none is configured
	s.clusterRoutes()          // cluster_routes.go: runtime profiles, the internal read index
	relay{s}.nodeLocalRoutes() // node_local.go: an allocation's logs, stats, file system
	relay{s}.execRoutes()      // alloc_exec.go: a job's action, exec; alloc_lifecycle.go: restart, signal
	s.opsRoutes()              // ops.go: metrics, the agent's log stream
}

// writeRouteError answers a request no route matched: a JSON:API error
// document under /api/v2, whose clients parse every error body, and the
// plain-text message elsewhere.
func writeRouteError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/v2/") {
		jsonapi.WriteError(w, jsonapi.NewError(code, http.StatusText(code), msg))
		return
	}
	codec.WriteError(w, &CodedError{Code: code, Message: msg})
}
