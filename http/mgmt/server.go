// Package mgmt serves the management API under /api/v2: organizations,
// users, teams, tokens, projects, team project access, workspaces, runs,
// state versions, policy sets and site administration, as JSON:API
// documents (package http/jsonapi).
//
// It is mounted on the HTTP core (package http) through Core, a small
// interface the core satisfies, so neither package imports the other: the
// agent builds the core, then calls New with it. Every request resolves
// its token to a caller (401 without one), passes the per-token rate
// limit, reads after the core's read barrier (unless ?stale) and writes
// through the core's Writer, so writes reach the leader as /v1 writes do.
package mgmt

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Core is what the HTTP core lends the management API. The core's
// *http.Server satisfies it.
type Core interface {
	// Mount registers h, which writes its own response, for method and
	// path behind the core's per-route wrapper (body limit, forwarding of
	// writes to the leader).
	Mount(method, path string, h httprouter.Handle)
	// Store is the local replicated store.
	Store() *store.Store
	// Propose commits a command through consensus, sets the index
	// headers of w, and returns what the state machine answered; an
	// error answer keeps its chain (errors.Is against state's sentinels).
	Propose(w http.ResponseWriter, r *http.Request, t store.MessageType, req any) (any, uint64, error)
	// ReadBarrier returns once the local store holds every write
	// committed when it was called.
	ReadBarrier(ctx context.Context) error
	// ResolveToken resolves a secret to its ACL and token; an unknown or
	// expired secret is an error wrapping state.ErrACLTokenNotFound.
	ResolveToken(secret string) (*state.ACL, *state.ACLToken, error)
	// RequestToken is the secret a request carries, or "".
	RequestToken(r *http.Request) string
	// Now is the server's clock.
	Now() time.Time
	// NewID makes an object ID.
	NewID() string
	// Logger is where failures are logged.
	Logger() *slog.Logger
}

// Config configures the management API.
type Config struct {
	// RateLimit is the limit in requests per second per token (per
	// client address without one), per server. Zero means
	// DefaultRateLimit; negative disables the limit.
	RateLimit float64
	// MaxStateBytes bounds one state file, and one JSON state, of a state
	// version. Zero means mgmt.DefaultMaxStateBytes (16 MiB); values over
	// mgmt.HardMaxStateBytes (24 MiB) are lowered to it.
	MaxStateBytes int
}

// Server is the management API mounted on a Core.
type Server struct {
	Core
	store  *store.Store
	log    *slog.Logger
	cfg    Config
	routes []Route
}

// Route is a registered endpoint.
type Route struct {
	Method string
	Path   string
}

// New mounts every /api/v2 endpoint on core and returns the server.
func New(core Core, cfg Config) *Server {
	s := &Server{Core: core, store: core.Store(), log: core.Logger(), cfg: cfg}
	s.managementRoutes()
	return s
}

// Routes lists the endpoints New mounted, in registration order.
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }

// mount records a route and mounts it on the core.
func (s *Server) mount(method, path string, h httprouter.Handle) {
	s.routes = append(s.routes, Route{Method: method, Path: path})
	s.Mount(method, path, h)
}

// newID makes the ID of an object the management API creates: prefix and
// 16 characters of TFE's ID alphabet, drawn from the core's ID source
// (Core.NewID), so that a server given its own source (a test's, say)
// decides every ID it hands out, as it does on /v1.
func (s *Server) newID(prefix string) string { return idFrom(prefix, s.NewID()) }

// idFrom derives a management ID from an ID of the core's source: the
// first 16 bytes of its SHA-256, so any source (a UUID, a counter) gives
// IDs of one form, and distinct source IDs distinct IDs.
func idFrom(prefix, source string) string { return mgmt.IDFrom(prefix, source) }
