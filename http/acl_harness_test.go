package http

import (
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state/store"
)

// aclHarness is a harness whose server resolves tokens with a real
// TokenResolver over its store, with a clock the test moves; tokens and
// requests with them are apitest.ACL's.
type aclHarness struct {
	*harness
	*apitest.ACL
	resolver *TokenResolver
}

// newACLHarness builds a server with /v1 enforcement on or off and the
// bootstrap reset file at resetPath ("" for none).
func newACLHarness(t testing.TB, enforce bool, resetPath string) *aclHarness {
	t.Helper()
	return newACLHarnessWith(t, func(a *aclHarness, c *testConfig) {
		r, err := NewTokenResolver(TokenResolverConfig{Store: c.Store, Enforce: enforce, Now: a.Clock.Now, BootstrapResetPath: resetPath})
		if err != nil {
			t.Fatal(err)
		}
		a.resolver = r
		c.ACL = r
		c.Now = a.Clock.Now
		c.Jobs.Leader = apitest.NewFakeLeader()
	})
}

// newACLHarnessWith builds an aclHarness whose server config adjust sets
// (the resolver included).
func newACLHarnessWith(t testing.TB, adjust func(*aclHarness, *testConfig)) *aclHarness {
	t.Helper()
	a := &aclHarness{ACL: apitest.NewACL(nil)}
	a.harness = newHarnessWith(t, store.Config{}, func(c *testConfig) { adjust(a, c) })
	a.H = &a.harness.Harness
	return a
}
