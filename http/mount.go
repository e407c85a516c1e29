package http

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The management API (package http/mgmt) is mounted on this core through
// the methods below, which satisfy its Core interface. Neither package
// imports the other: the agent wires them together.

// Mount registers h, which writes its own response, for method and path.
// It sits behind the wrapper every route has (body limit, route rules,
// forwarding of writes to the leader), like the /v1 endpoints.
func (s *Server) Mount(method, path string, h httprouter.Handle) {
	s.handle(method, path, func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		h(w, r, p)
		return codec.AlreadyWritten{}, nil
	})
}

// Store is the local replicated store; read it after ReadBarrier for a
// consistent read.
func (s *Server) Store() *store.Store { return s.store }

// Propose commits a command through the Writer and sets the index headers
// of w; see Writer for the error contract.
func (s *Server) Propose(w http.ResponseWriter, r *http.Request, t store.MessageType, req any) (any, uint64, error) {
	return s.apply(w, r, t, req)
}

// ReadBarrier waits until the local store holds every write committed when
// it was called.
func (s *Server) ReadBarrier(ctx context.Context) error { return s.cfg.Cluster.ReadBarrier(ctx) }

// ResolveToken resolves a token secret with the server's ACLResolver (one
// over its own store when none was configured).
func (s *Server) ResolveToken(secret string) (*state.ACL, *state.ACLToken, error) {
	return s.cfg.ACL.ResolveToken(secret)
}

// RequestToken is the secret r carries, as X-Sched-Token or
// Authorization: Bearer; "" for none.
func (s *Server) RequestToken(r *http.Request) string { return tokenOf(r) }

// Now is the server's clock (the leader stamps times with it).
func (s *Server) Now() time.Time { return s.cfg.Now() }

// NewID makes an object ID (a random UUID unless configured otherwise).
func (s *Server) NewID() string { return s.cfg.NewID() }

// Logger is the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// The jobs API (package http/jobs) is mounted on this core the same way,
// through the methods above and those below, which satisfy its Core
// interface.

// Route registers h for method and path behind the wrapper every route
// has: the route's ACL rule, the body limit, metrics, the shared answers
// of blocking reads, forwarding of writes to the leader.
func (s *Server) Route(method, path string, h codec.Handler) { s.handle(method, path, h) }

// Read runs a (possibly blocking) read: the consistency barrier unless
// ?stale, ?index and ?wait through package blocking, and the index and
// leader headers. query is given the request's namespace.
func (s *Server) Read(w http.ResponseWriter, r *http.Request, query func(ws memdb.WatchSet, ns string) (uint64, error)) error {
	return s.read(w, r, query)
}

// Namespace is the request's namespace as the core resolved it
// (requestScope).
func (s *Server) Namespace(r *http.Request) string { return namespaceOf(r) }

// Query is the request's decoded query, to be read only.
func (s *Server) Query(r *http.Request) url.Values { return queryOf(r) }

// NamespaceVisible reports which namespaces the caller may see at all;
// nil means every one.
func (s *Server) NamespaceVisible(r *http.Request) func(ns string) bool { return namespaceVisible(r) }

// NamespaceFilter returns whether a namespace's objects may be shown to
// the caller, who needs capability there; nil means everything may be.
func (s *Server) NamespaceFilter(r *http.Request, capability string) func(ns string) bool {
	return namespaceFilter(r, capability)
}

// ACL is the caller's ACL, nil when capabilities are not checked for the
// request.
func (s *Server) ACL(r *http.Request) *state.ACL { return aclOf(r) }

// SetMeta sets X-Sched-Index to index and the leader headers.
func (s *Server) SetMeta(w http.ResponseWriter, index uint64) { s.setMeta(w, index) }

// Apply commits a command outside any request, through the Writer.
func (s *Server) Apply(ctx context.Context, t store.MessageType, req any) (any, uint64, error) {
	return s.cfg.Writer.Apply(ctx, t, req)
}

// KnownLeader reports whether this server knows a current leader.
func (s *Server) KnownLeader() bool { return s.cfg.Cluster.KnownLeader() }

// LastContact is how long ago this server heard from the leader.
func (s *Server) LastContact() time.Duration { return s.cfg.Cluster.LastContact() }

// Token is the caller's resolved token; nil when none was checked.
func (s *Server) Token(r *http.Request) *state.ACLToken {
	if a := authOf(r); a != nil {
		return a.token
	}
	return nil
}

// BootstrapResetPath is the file whose content allows one more ACL
// bootstrap.
func (s *Server) BootstrapResetPath() string { return s.cfg.ACL.BootstrapResetPath() }

// PlaceJob puts a job decoded from the request's body in the request's
// namespace (placeJob).
func (s *Server) PlaceJob(r *http.Request, job *state.Job) error { return placeJob(r, job) }

// StreamOpened counts an open event stream until done is called.
func (s *Server) StreamOpened() (done func()) {
	s.metrics.eventSubscribers.Inc()
	return s.metrics.eventSubscribers.Dec
}

// RawBody is the body of a snapshot restore as it arrived, before the
// general size limit (forward.go keeps it); false for other requests.
func (s *Server) RawBody(r *http.Request) (io.ReadCloser, bool) {
	raw, ok := r.Context().Value(rawBodyKey{}).(io.ReadCloser)
	return raw, ok
}
