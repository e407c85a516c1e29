package mgmt

import (
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The management API is tested mounted on a real HTTP core over a real
// store, with the core's in-memory Writer and Cluster doubles: requests
// take the whole path a client's do, with no Raft.

// harness is one server (core plus management API) over a fresh store.
type harness struct {
	apitest.Harness
	writer *schedhttp.MemWriter
	srv    *schedhttp.Server
	api    *Server
	// ids counts the IDs the core's ID source has given out
	// (apitest.SourceID).
	ids *atomic.Int64
}

// aclHarness is a harness whose core resolves tokens with a real
// TokenResolver over its store, with a clock the test moves.
type aclHarness struct {
	*harness
	resolver *schedhttp.TokenResolver
	clock    *testutil.Clock
}

// newACLHarness builds the server; rateLimit is the management API's.
func newACLHarness(t testing.TB, rateLimit float64) *aclHarness {
	t.Helper()
	st, err := store.NewStore(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := &aclHarness{clock: testutil.NewClock(apitest.Now)}
	a.resolver, err = schedhttp.NewTokenResolver(schedhttp.TokenResolverConfig{Store: st, Now: a.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{writer: schedhttp.NewMemWriter(st), ids: new(atomic.Int64)}
	h.Harness = apitest.Harness{T: t, Store: st, Writer: h.writer, Handler: func() http.Handler { return h.srv.Handler() }}
	h.srv, err = schedhttp.New(schedhttp.Config{
		Store:   st,
		Writer:  h.writer,
		Cluster: &schedhttp.FakeCluster{},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:     a.clock.Now,
		NewID:   func() string { return apitest.SourceID(h.ids.Add(1)) },
		ACL:     a.resolver,
	})
	if err != nil {
		t.Fatal(err)
	}
	jobs.Mount(h.srv, jobs.Config{}) // /v1 (the ACL bootstrap), as the agent mounts it
	h.api = New(h.srv, Config{RateLimit: rateLimit})
	a.harness = h
	return a
}

// on returns h reporting to t, for use inside a subtest.
func (h *harness) on(t testing.TB) *harness {
	c := *h
	c.T = t
	return &c
}

// managementToken writes a management token straight to the store and
// returns its secret.
func (a *aclHarness) managementToken() string {
	a.T.Helper()
	return a.token(&state.ACLToken{Type: state.ACLTokenTypeManagement})
}

// token completes tok (accessor, secret, create time), writes it and
// returns its secret.
func (a *aclHarness) token(tok *state.ACLToken) string {
	a.T.Helper()
	secret, accessor := rand.Text(), rand.Text()
	tok.AccessorID = accessor
	tok.SecretHash = state.HashSecret(secret)
	tok.CreateTime = a.clock.Now()
	a.Apply(store.ACLTokenUpsertRequestType, &store.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}})
	return secret
}

// clientToken writes one policy of rules and a client token holding it,
// and returns the token's secret.
func (a *aclHarness) clientToken(rules string) string {
	a.T.Helper()
	name := "p-" + rand.Text()
	a.Apply(store.ACLPolicyUpsertRequestType, &store.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: name, Rules: rules}}})
	return a.token(&state.ACLToken{Type: state.ACLTokenTypeClient, Policies: []string{name}})
}
