package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// ACL writes tokens and policies through a harness and sends requests
// with a token, on a clock the test moves.
type ACL struct {
	H     *Harness
	Clock *testutil.Clock
	// policies counts policies made by ClientToken, for unique names.
	policies int
}

// NewACL is an ACL over h with a clock at Now.
func NewACL(h *Harness) *ACL { return &ACL{H: h, Clock: testutil.NewClock(Now)} }

// ManagementToken writes a management token straight to the store and
// returns its secret.
func (a *ACL) ManagementToken() string {
	a.H.T.Helper()
	return a.Token(&state.ACLToken{Type: state.ACLTokenTypeManagement})
}

// ClientToken writes one policy per rules text and a client token holding
// them, and returns the token's secret.
func (a *ACL) ClientToken(rules ...string) string {
	a.H.T.Helper()
	var names []string
	for _, r := range rules {
		a.policies++
		name := fmt.Sprintf("p%d", a.policies)
		a.H.Apply(store.ACLPolicyUpsertRequestType, &store.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: name, Rules: r}}})
		names = append(names, name)
	}
	return a.Token(&state.ACLToken{Type: state.ACLTokenTypeClient, Policies: names})
}

// Token completes tok (accessor, secret, create time), writes it and
// returns its secret.
func (a *ACL) Token(tok *state.ACLToken) string {
	a.H.T.Helper()
	secret := state.NewID()
	tok.AccessorID = state.NewID()
	tok.SecretHash = state.HashSecret(secret)
	tok.CreateTime = a.Clock.Now()
	a.H.Apply(store.ACLTokenUpsertRequestType, &store.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}})
	return secret
}

// AccessorOf returns the accessor of the token with secret.
func (a *ACL) AccessorOf(secret string) string {
	a.H.T.Helper()
	tok, err := a.H.Store.ACLTokenBySecret(nil, secret)
	if err != nil || tok == nil {
		a.H.T.Fatalf("token lookup: %v, %v", tok, err)
	}
	return tok.AccessorID
}

// As sends a request with X-Sched-Token: secret ("" sends none).
func (a *ACL) As(secret, method, target string, body any) *httptest.ResponseRecorder {
	a.H.T.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			a.H.T.Fatal(err)
		}
		r = bytes.NewReader(buf)
	}
	req := httptest.NewRequest(method, target, r)
	if secret != "" {
		req.Header.Set(HeaderToken, secret)
	}
	rec := httptest.NewRecorder()
	a.H.Handler().ServeHTTP(rec, req)
	return rec
}

// OKAs is As, failing unless the answer is 200, decoding into out.
func (a *ACL) OKAs(secret, method, target string, body, out any) *httptest.ResponseRecorder {
	a.H.T.Helper()
	return expectOK(a.H.T, a.As(secret, method, target, body), method, target, out)
}

// FailAs is As, failing unless the answer is code with a body holding
// every one of want.
func (a *ACL) FailAs(secret, method, target string, body any, code int, want ...string) {
	a.H.T.Helper()
	rec := a.As(secret, method, target, body)
	if rec.Code != code {
		a.H.T.Fatalf("%s %s: status %d, want %d; body %q", method, target, rec.Code, code, rec.Body.String())
	}
	for _, w := range want {
		if !strings.Contains(rec.Body.String(), w) {
			a.H.T.Errorf("%s %s: body %q does not mention %q", method, target, rec.Body.String(), w)
		}
	}
}

// DeniedAs asserts a 403 "Permission denied".
func (a *ACL) DeniedAs(secret, method, target string, body any) {
	a.H.T.Helper()
	a.FailAs(secret, method, target, body, http.StatusForbidden, "Permission denied")
}

// Policies returns how many policies ClientToken has made.
func (a *ACL) Policies() int { return a.policies }
