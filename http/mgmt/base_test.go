package mgmt

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The management API is tested mounted on a real HTTP core over a real
// store, with the core's in-memory Writer and Cluster doubles: requests
// take the whole path a client's do, with no Raft.

// testNow is the fixed clock of every harness.
var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// harness is one server (core plus management API) over a fresh store.
type harness struct {
	t      testing.TB
	store  *store.Store
	writer *schedhttp.MemWriter
	srv    *schedhttp.Server
	api    *Server
	// ids counts the IDs the core's ID source has given out (sourceID).
	ids *atomic.Int64
}

// sourceID is the n-th ID of every harness's ID source.
func sourceID(n int64) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

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
	st, err := store.NewStore(store.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a := &aclHarness{clock: testutil.NewClock(testNow)}
	a.resolver, err = schedhttp.NewTokenResolver(schedhttp.TokenResolverConfig{Store: st, Now: a.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: st, writer: schedhttp.NewMemWriter(st), ids: new(atomic.Int64)}
	h.srv, err = schedhttp.New(schedhttp.Config{
		Store:   st,
		Writer:  h.writer,
		Cluster: &schedhttp.FakeCluster{},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:     a.clock.Now,
		NewID:   func() string { return sourceID(h.ids.Add(1)) },
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
	c.t = t
	return &c
}

// apply writes a command straight through the writer and fails the test
// on error.
func (h *harness) apply(t store.MessageType, req any) uint64 {
	h.t.Helper()
	_, index, err := h.writer.Apply(context.Background(), t, req)
	if err != nil {
		h.t.Fatalf("apply %d: %v", t, err)
	}
	return index
}

// managementToken writes a management token straight to the store and
// returns its secret.
func (a *aclHarness) managementToken() string {
	a.t.Helper()
	return a.token(&state.ACLToken{Type: state.ACLTokenTypeManagement})
}

// token completes tok (accessor, secret, create time), writes it and
// returns its secret.
func (a *aclHarness) token(tok *state.ACLToken) string {
	a.t.Helper()
	secret, accessor := rand.Text(), rand.Text()
	tok.AccessorID = accessor
	tok.SecretHash = state.HashSecret(secret)
	tok.CreateTime = a.clock.Now()
	a.apply(store.ACLTokenUpsertRequestType, &store.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}})
	return secret
}

// clientToken writes one policy of rules and a client token holding it,
// and returns the token's secret.
func (a *aclHarness) clientToken(rules string) string {
	a.t.Helper()
	name := "p-" + rand.Text()
	a.apply(store.ACLPolicyUpsertRequestType, &store.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: name, Rules: rules}}})
	return a.token(&state.ACLToken{Type: state.ACLTokenTypeClient, Policies: []string{name}})
}
