package http

import (
	"context"
	"log/slog"
	"net/http"
	"time"

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
