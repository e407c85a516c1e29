package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// aclHarness is a harness whose server resolves tokens with a real
// TokenResolver over its store, with a clock the test moves.
type aclHarness struct {
	*harness
	resolver *schedhttp.TokenResolver
	clock    *testutil.Clock
	// policies counts policies made by clientToken, for unique names.
	policies int
}

// newACLHarness builds a server with /v1 enforcement on or off and the
// bootstrap reset file at resetPath ("" for none).
func newACLHarness(t testing.TB, enforce bool, resetPath string) *aclHarness {
	t.Helper()
	a := &aclHarness{clock: testutil.NewClock(testNow)}
	a.harness = newHarnessWith(t, store.StoreConfig{}, func(c *testConfig) {
		r, err := schedhttp.NewTokenResolver(schedhttp.TokenResolverConfig{Store: c.Store, Enforce: enforce, Now: a.clock.Now, BootstrapResetPath: resetPath})
		if err != nil {
			t.Fatal(err)
		}
		a.resolver = r
		c.ACL = r
		c.Now = a.clock.Now
		c.Jobs.Leader = &fakeLeader{ttl: testTTL}
	})
	return a
}

// managementToken writes a management token straight to the store and
// returns its secret.
func (a *aclHarness) managementToken() string {
	a.t.Helper()
	return a.token(&state.ACLToken{Type: state.ACLTokenTypeManagement})
}

// clientToken writes one policy per rules text and a client token holding
// them, and returns the token's secret.
func (a *aclHarness) clientToken(rules ...string) string {
	a.t.Helper()
	var names []string
	for _, r := range rules {
		a.policies++
		name := fmt.Sprintf("p%d", a.policies)
		a.apply(store.ACLPolicyUpsertRequestType, &store.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: name, Rules: r}}})
		names = append(names, name)
	}
	return a.token(&state.ACLToken{Type: state.ACLTokenTypeClient, Policies: names})
}

// token completes tok (accessor, secret, create time), writes it and
// returns its secret.
func (a *aclHarness) token(tok *state.ACLToken) string {
	a.t.Helper()
	secret := state.NewID()
	tok.AccessorID = state.NewID()
	tok.SecretHash = state.HashSecret(secret)
	tok.CreateTime = a.clock.Now()
	a.apply(store.ACLTokenUpsertRequestType, &store.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}})
	return secret
}

// accessorOf returns the accessor of the token with secret.
func (a *aclHarness) accessorOf(secret string) string {
	a.t.Helper()
	tok, err := a.store.ACLTokenBySecret(nil, secret)
	if err != nil || tok == nil {
		a.t.Fatalf("token lookup: %v, %v", tok, err)
	}
	return tok.AccessorID
}

// as sends a request with X-Sched-Token: secret ("" sends none).
func (a *aclHarness) as(secret, method, target string, body any) *httptest.ResponseRecorder {
	a.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(buf)
	}
	req := httptest.NewRequest(method, target, r)
	if secret != "" {
		req.Header.Set(schedhttp.HeaderToken, secret)
	}
	rec := httptest.NewRecorder()
	a.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// okAs is as, failing unless the answer is 200, decoding into out.
func (a *aclHarness) okAs(secret, method, target string, body, out any) *httptest.ResponseRecorder {
	a.t.Helper()
	rec := a.as(secret, method, target, body)
	if rec.Code != http.StatusOK {
		a.t.Fatalf("%s %s: status %d, body %q", method, target, rec.Code, rec.Body.String())
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			a.t.Fatalf("%s %s: decode %q: %v", method, target, rec.Body.String(), err)
		}
	}
	return rec
}

// failAs is as, failing unless the answer is code with a body holding
// every one of want.
func (a *aclHarness) failAs(secret, method, target string, body any, code int, want ...string) {
	a.t.Helper()
	rec := a.as(secret, method, target, body)
	if rec.Code != code {
		a.t.Fatalf("%s %s: status %d, want %d; body %q", method, target, rec.Code, code, rec.Body.String())
	}
	for _, w := range want {
		if !strings.Contains(rec.Body.String(), w) {
			a.t.Errorf("%s %s: body %q does not mention %q", method, target, rec.Body.String(), w)
		}
	}
}

// deniedAs asserts a 403 "Permission denied".
func (a *aclHarness) deniedAs(secret, method, target string, body any) {
	a.t.Helper()
	a.failAs(secret, method, target, body, http.StatusForbidden, "Permission denied")
}
