// Package jobs is the jobs API under /v1 and its neighbours (nodes,
// allocations, evaluations, deployments, namespaces, ACL, operator,
// events, search), mounted on the HTTP core (package http) through the
// interface Core, as the management API (http/mgmt) is. None of the three
// packages imports another: the agent wires them together. Each noun has
// a small handler type (jobAPI, nodeAPI, allocAPI, ...) over api, what
// they all share.
//
// Handlers return (value, error); the core's wrapper checks the route's
// ACL rule before a handler runs, encodes the value and maps the error to
// its status (http/codec).
package jobs

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Core is what the jobs API needs of the HTTP core.
type Core interface {
	// Route registers h for method and path behind the core's wrapper:
	// the route's ACL rule (the request's namespace resolved once), the
	// body limit, metrics, forwarding of writes to the leader.
	Route(method, path string, h codec.Handler)
	// Read runs a (possibly blocking) read of the local store: the
	// consistency barrier unless ?stale, ?index and ?wait, and the index
	// headers. query is given the request's namespace.
	Read(w http.ResponseWriter, r *http.Request, query func(ws memdb.WatchSet, ns string) (uint64, error)) error
	// Propose commits a command through consensus, sets the index
	// headers of w, and returns what the state machine answered.
	Propose(w http.ResponseWriter, r *http.Request, t store.MessageType, req any) (any, uint64, error)
	// Store is the local replicated store.
	Store() *store.Store
	// Namespace is the request's namespace as the core resolved it.
	Namespace(r *http.Request) string
	// Query is the request's decoded query, to be read only.
	Query(r *http.Request) url.Values
	// NamespaceVisible reports which namespaces the caller may see at
	// all; nil: every one.
	NamespaceVisible(r *http.Request) func(ns string) bool
	// NamespaceFilter returns whether a namespace's objects may be shown
	// to the caller, who needs capability there; nil: everything may be.
	// List handlers that serve namespace=* apply it to every entry.
	NamespaceFilter(r *http.Request, capability string) func(ns string) bool
	// ACL is the caller's ACL, nil when capabilities are not checked for
	// the request (everything is allowed).
	ACL(r *http.Request) *state.ACL
	// SetMeta sets X-Sched-Index to index and the leader headers.
	SetMeta(w http.ResponseWriter, index uint64)
	// ReadBarrier returns once the local store holds every write
	// committed when it was called.
	ReadBarrier(ctx context.Context) error
	// PlaceJob puts a job decoded from the request's body in the
	// request's namespace: the one the job names, or the request's when it
	// names none; a job that names another namespace than the one the
	// request was checked in is a 400.
	PlaceJob(r *http.Request, job *state.Job) error
	// RawBody is the body of a snapshot restore as it arrived, before the
	// core's general size limit; false for any other request.
	RawBody(r *http.Request) (io.ReadCloser, bool)
	// StreamOpened counts an open event stream in the core's metrics
	// until done is called.
	StreamOpened() (done func())
	// RequestToken is the secret r carries, or "".
	RequestToken(r *http.Request) string
	// Token is the caller's resolved token; nil when none was checked.
	Token(r *http.Request) *state.ACLToken
	// BootstrapResetPath is the file whose content allows one more ACL
	// bootstrap ("" for none).
	BootstrapResetPath() string
	// Apply commits a command outside any request (a batch of client
	// updates), through the same writer as Propose.
	Apply(ctx context.Context, t store.MessageType, req any) (any, uint64, error)
	// KnownLeader reports whether this server knows a current leader, and
	// LastContact how long ago it heard from it (0 on the leader).
	KnownLeader() bool
	LastContact() time.Duration
	// Now is the server's clock.
	Now() time.Time
	// NewID makes an object ID.
	NewID() string
	// Logger is where failures are logged.
	Logger() *slog.Logger
}

// Config is what the jobs API needs beside its Core.
type Config struct {
	// Leader reaches the leader-only scheduler services (node heartbeat
	// timers, GC). Nil on a server that has none wired: those endpoints
	// answer 503.
	Leader LeaderServices
	// JobLimits bounds group counts and job sizes (server block keys
	// max_group_count, max_job_count, max_job_size); zero fields mean
	// state's defaults.
	JobLimits state.JobLimits
	// Cluster serves the status, agent and operator endpoints; nil leaves
	// them out (a server without a cluster).
	Cluster ClusterOps
	// Client is the client agent running in this process (dev mode),
	// named in /v1/agent/self; nil for none.
	Client clientapi.Client
	// MaxSubmissionBytes bounds a job's source kept as its submission;
	// larger sources are dropped with a warning. Zero means 1 MiB.
	MaxSubmissionBytes int
}

// api holds what every handler of the jobs API shares.
type api struct {
	core  Core
	store *store.Store
	cfg   Config
	// hclSlots holds a place for each HCL text being parsed (jobParse):
	// one costs up to about 300 MB and a second of CPU at the token bound
	// (state.MaxHCLTokens), so no more run at once than there are CPUs.
	hclSlots chan struct{}
	// clientUpdates writes client reports in batches
	// (node_allocs_batch.go).
	clientUpdates *clientUpdateBatcher
	// eventHeartbeat is how often an idle event stream sends `{}`; zero
	// means defaultEventHeartbeat (tests shorten it).
	eventHeartbeat time.Duration
	// events encodes each event once for every stream (events.go).
	events eventCache
}

// Mount registers the jobs API's routes on core, and returns the node
// endpoints' in-process form for a client agent in the same process.
func Mount(core Core, cfg Config) *Local { return &Local{mount(core, cfg)} }

// Local serves a client agent in the server's own process (`sched agent
// -dev`, a server agent with its client on) what it would otherwise ask
// of the node endpoints by HTTP: its allocations' changes and its
// reports, without encoding and decoding every allocation, job and task
// state as JSON on both sides. Nomad's client talks to a server in its
// own process the same way. There is no caller to authenticate: the
// client is the agent's own.
type Local struct{ a *api }

// mount is Mount, returning what the handlers share (for tests).
func mount(core Core, cfg Config) *api {
	if cfg.MaxSubmissionBytes == 0 {
		cfg.MaxSubmissionBytes = 1 << 20
	}
	a := &api{core: core, store: core.Store(), cfg: cfg, hclSlots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	a.clientUpdates = &clientUpdateBatcher{apply: func(ctx context.Context, req *store.AllocClientUpdateRequest) (uint64, error) {
		_, index, err := core.Apply(ctx, store.AllocClientUpdateRequestType, req)
		return index, err
	}}
	namespaceAPI{a}.routes()
	quotaAPI{a}.routes() // quotas.go
	evalAPI{a}.evalRoutes()
	allocAPI{a}.allocRoutes()
	deploymentAPI{a}.deploymentRoutes()
	searchAPI{a}.searchRoutes()
	jobAPI{a}.jobRoutes()
	jobAPI{a}.jobDeployRoutes()
	serviceAPI{a}.serviceRoutes()
	a.schedulerRoutes()
	aclAPI{a}.aclRoutes()
	clusterAPI{a}.clusterRoutes()
	schedConfigAPI{a}.routes() // scheduler_config.go
	eventAPI{a}.eventRoutes()
	return a
}

// write registers fn for POST and PUT: Nomad's own client and CLI write
// with PUT, curl users with POST, and both must work.
func (h *api) write(path string, fn codec.Handler) {
	h.core.Route(http.MethodPost, path, fn)
	h.core.Route(http.MethodPut, path, fn)
}

// maxIndex returns the largest of the named tables' indexes, the index of a
// result that reads those tables.
func (h *api) maxIndex(tables ...string) uint64 {
	var m uint64
	for _, t := range tables {
		if i := h.store.Index(t); i > m {
			m = i
		}
	}
	return m
}

// nonNil makes an empty result encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// allNamespaces is the namespace of a request for every namespace.
const allNamespaces = "*"

// newEval builds the evaluation a job write creates (priority 0: the
// job's). The leader stamps its ID and times here, before proposing.
func (h *api) newEval(job *state.Job, priority int, trigger string, now int64) *state.Evaluation {
	if priority == 0 {
		priority = job.Priority
	}
	return &state.Evaluation{
		ID:          h.core.NewID(),
		Namespace:   job.Namespace,
		Priority:    priority,
		Type:        job.Type,
		TriggeredBy: trigger,
		JobID:       job.ID,
		Status:      state.EvalStatusPending,
		CreateTime:  now,
		ModifyTime:  now,
	}
}

// readByID serves a read of one object by ID: lookup finds it (nil when
// absent), and an object of another namespace than the request's answers
// the same 404 as one that does not exist (see codec.InNamespace), so
// that IDs do not leak across namespaces. The read blocks on table.
func readByID[T comparable](h *api, w http.ResponseWriter, r *http.Request, table, what, id string,
	lookup func(ws memdb.WatchSet, id string) (T, error), namespace func(T) string) (any, error) {
	var zero, out T
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		v, err := lookup(ws, id)
		if err != nil {
			return 0, err
		}
		out = zero
		if v != zero && codec.InNamespace(ns, namespace(v)) {
			out = v
		}
		return h.maxIndex(table), nil
	})
	if err != nil {
		return nil, err
	}
	if out == zero {
		return nil, state.NotFoundf("%s %q", what, id)
	}
	return out, nil
}

// node returns the node of id, or a 404 naming it.
func (h *api) node(id string) (*state.Node, error) {
	n, err := h.store.NodeByID(nil, id)
	if err == nil && n == nil {
		err = state.NotFoundf("node %q", id)
	}
	return n, err
}
