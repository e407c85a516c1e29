package http

import (
	"github.com/schedhq/sched/state"
)

// ACLResolver resolves a request's token to what it may do. TokenResolver
// is the implementation a server uses; the management API (/api/v2) calls
// ResolveToken too, answering 401 where /v1 answers 403.
type ACLResolver interface {
	// ResolveToken returns the compiled ACL and the token of secret. An
	// empty secret is anonymous: an ACL that grants nothing and a nil
	// token, with a nil error. A secret that names no token, or an expired
	// one, returns an error wrapping state.ErrACLTokenNotFound. It must be cheap:
	// it runs on every request.
	ResolveToken(secret string) (*state.ACL, *state.ACLToken, error)
	// Enforcing reports whether /v1 endpoints check capabilities (agent
	// config `acl { enabled = true }`). The ACL endpoints check their
	// tokens either way.
	Enforcing() bool
	// BootstrapResetPath is the file whose content (a reset index)
	// re-arms ACL bootstrap on this server, or "" for none.
	BootstrapResetPath() string
}

// defaultACL gives a server configured without a resolver one over its own
// store that does not enforce /v1 capabilities, so that tokens (which
// /api/v2 always needs) can be bootstrapped and managed on every server.
func (s *Server) defaultACL() {
	if s.cfg.ACL == nil {
		// Cannot fail: the store is set (New checked it).
		s.cfg.ACL, _ = NewTokenResolver(TokenResolverConfig{Store: s.store, Now: s.cfg.Now})
	}
}
