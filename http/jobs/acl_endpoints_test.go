package jobs

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

func TestACLBootstrapOnceAndResetFile(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		t.Run("enforce="+strconv.FormatBool(enforce), func(t *testing.T) {
			reset := filepath.Join(t.TempDir(), schedhttp.BootstrapResetFile)
			a := newACLHarness(t, enforce, reset)

			var first state.ACLToken
			a.OKAs("", http.MethodPost, "/v1/acl/bootstrap", nil, &first)
			if first.SecretID == "" || first.AccessorID == "" || first.Type != state.ACLTokenTypeManagement || first.Name != "Bootstrap Token" {
				t.Fatalf("bootstrap token = %+v", first)
			}
			// It works: a management-only endpoint accepts it.
			a.OKAs(first.SecretID, http.MethodGet, "/v1/acl/tokens", nil, nil)

			resetIndex, _, _ := a.Store.ACLBootstrapped(nil)
			want := "ACL bootstrap already done (reset index: " + strconv.FormatUint(resetIndex, 10) + ")"
			before := a.Store.LatestIndex()
			a.FailAs("", http.MethodPut, "/v1/acl/bootstrap", nil, http.StatusBadRequest, want)
			a.FailAs(first.SecretID, http.MethodPost, "/v1/acl/bootstrap", nil, http.StatusBadRequest, want)
			if a.Store.LatestIndex() != before {
				t.Error("a refused bootstrap wrote something")
			}

			// A wrong index in the reset file changes nothing and stays.
			os.WriteFile(reset, []byte("12345\n"), 0o600)
			a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", nil, http.StatusBadRequest, want)
			os.WriteFile(reset, []byte("garbage"), 0o600)
			a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", nil, http.StatusBadRequest, schedhttp.BootstrapResetFile+` on the leader: "garbage" is not a reset index`)

			// The right index re-arms bootstrap once, with a chosen secret;
			// the file is consumed.
			os.WriteFile(reset, []byte(strconv.FormatUint(resetIndex, 10)), 0o600)
			chosen := "0b6c9a44-2c1c-4e55-9d2a-6a1f3ad0c7e1"
			var second state.ACLToken
			a.OKAs("", http.MethodPost, "/v1/acl/bootstrap", map[string]string{"BootstrapSecret": chosen}, &second)
			if second.SecretID != chosen || second.AccessorID == first.AccessorID {
				t.Errorf("re-bootstrap token = %+v", second)
			}
			if _, err := os.Stat(reset); !os.IsNotExist(err) {
				t.Errorf("reset file still there: %v", err)
			}
			a.OKAs(chosen, http.MethodGet, "/v1/acl/token/self", nil, nil)
			a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", nil, http.StatusBadRequest, "ACL bootstrap already done")
		})
	}
}

func TestACLBootstrapBadSecret(t *testing.T) {
	a := newACLHarness(t, true, "")
	a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", map[string]string{"BootstrapSecret": "short"}, http.StatusBadRequest, "BootstrapSecret: must be a UUID")
	a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", `{"BootstrapSecret": 3}`, http.StatusBadRequest, "BootstrapSecret")
	a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", map[string]string{"AdminName": "no spaces"}, http.StatusBadRequest, "AdminName")
	a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", map[string]string{"AdminEmail": "nobody"}, http.StatusBadRequest, "AdminEmail")
	a.FailAs("", http.MethodPost, "/v1/acl/bootstrap", map[string]string{"AdminName": strings.Repeat("a", 65)}, http.StatusBadRequest, "AdminName: must be at most 64")
	if _, done, _ := a.Store.ACLBootstrapped(nil); done {
		t.Error("a refused bootstrap bootstrapped")
	}
}

// TestACLBootstrapCreatesAdminUser: the bootstrap token speaks for the
// site administrator the bootstrap creates.
func TestACLBootstrapCreatesAdminUser(t *testing.T) {
	a := newACLHarness(t, true, "")
	var tok state.ACLToken
	a.OKAs("", http.MethodPost, "/v1/acl/bootstrap", map[string]string{"AdminName": "root", "AdminEmail": "root@example.com"}, &tok)
	u, err := a.Store.UserByUsername(nil, "root")
	if err != nil || u == nil || !u.IsAdmin || u.Email != "root@example.com" {
		t.Fatalf("admin user = %+v, %v", u, err)
	}
	if tok.Subject == nil || tok.Subject.Kind != state.SubjectKindUser || tok.Subject.ID != u.ID || tok.Type != state.ACLTokenTypeManagement {
		t.Errorf("bootstrap token = %+v", tok)
	}
}

func TestACLTokenCRUD(t *testing.T) {
	a := newACLHarness(t, false, "")
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPut, "/v1/acl/policy/readers", ACLPolicyRequest{Description: "read all", Rules: `namespace "*" { policy = "read" }`}, nil)

	var created state.ACLToken
	a.OKAs(mgmt, http.MethodPost, "/v1/acl/token", ACLTokenRequest{Name: "ci", Type: "client", Policies: []string{"readers"},
		ExpirationTTL: time.Hour, Subject: &state.TokenSubject{Kind: "team", ID: "team-1"}}, &created)
	if created.SecretID == "" || created.AccessorID == "" || created.CreateIndex == 0 {
		t.Fatalf("created = %+v", created)
	}
	if created.ExpirationTime == nil || !created.ExpirationTime.Equal(apitest.Now.Add(time.Hour)) || !created.CreateTime.Equal(apitest.Now) {
		t.Errorf("expiry %v, create time %v", created.ExpirationTime, created.CreateTime)
	}
	// Stored hashed, found by hash.
	stored, _ := a.Store.ACLTokenByAccessorID(nil, created.AccessorID)
	if stored.SecretID != "" || stored.SecretHash != state.HashSecret(created.SecretID) {
		t.Fatalf("stored token keeps %q / %q", stored.SecretID, stored.SecretHash)
	}

	// Secrets never come back on list or read.
	for _, target := range []string{"/v1/acl/tokens", "/v1/acl/token/" + created.AccessorID, "/v1/acl/token/self"} {
		secret := mgmt
		if strings.HasSuffix(target, "self") {
			secret = created.SecretID
		}
		rec := a.OKAs(secret, http.MethodGet, target, nil, nil)
		body := rec.Body.String()
		if strings.Contains(body, created.SecretID) || strings.Contains(body, mgmt) || strings.Contains(body, "SecretID") || strings.Contains(body, "SecretHash") {
			t.Errorf("GET %s shows a secret: %s", target, body)
		}
	}
	var self state.ACLToken
	a.OKAs(created.SecretID, http.MethodGet, "/v1/acl/token/self", nil, &self)
	if self.AccessorID != created.AccessorID || self.Subject == nil || self.Subject.ID != "team-1" {
		t.Errorf("self = %+v", self)
	}
	var list []*state.ACLToken
	a.OKAs(mgmt, http.MethodGet, "/v1/acl/tokens?prefix="+created.AccessorID[:8], nil, &list)
	if len(list) != 1 || list[0].AccessorID != created.AccessorID {
		t.Errorf("list by prefix = %+v", list)
	}

	// Update: name and policies change, secret and expiry stay.
	var updated state.ACLToken
	a.OKAs(mgmt, http.MethodPut, "/v1/acl/token/"+created.AccessorID, ACLTokenRequest{Name: "ci-2", Type: "management"}, &updated)
	if updated.Name != "ci-2" || updated.Type != "management" || updated.ExpirationTime == nil || updated.SecretID != "" {
		t.Errorf("updated = %+v", updated)
	}
	a.OKAs(created.SecretID, http.MethodGet, "/v1/acl/tokens", nil, nil) // now management

	a.OKAs(mgmt, http.MethodDelete, "/v1/acl/token/"+created.AccessorID, nil, nil)
	a.FailAs(created.SecretID, http.MethodGet, "/v1/acl/token/self", nil, http.StatusForbidden, "ACL token not found")
	a.FailAs(mgmt, http.MethodGet, "/v1/acl/token/"+created.AccessorID, nil, http.StatusNotFound)
	a.FailAs(mgmt, http.MethodDelete, "/v1/acl/token/"+created.AccessorID, nil, http.StatusNotFound)
}

func TestACLTokenCreateRejects(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPut, "/v1/acl/policy/readers", ACLPolicyRequest{Rules: `namespace "*" { policy = "read" }`}, nil)
	past := apitest.Now.Add(30 * time.Second)
	cases := []struct {
		name string
		body any
		want string
	}{
		{"unknown policy", ACLTokenRequest{Type: "client", Policies: []string{"readers", "ghost"}}, `Policies[1]: policy "ghost" does not exist`},
		{"no type", ACLTokenRequest{Policies: []string{"readers"}}, "Type: required"},
		{"bad type", ACLTokenRequest{Type: "root"}, `Type: "root" is not one of management, client`},
		{"client without policies", ACLTokenRequest{Type: "client"}, "Policies: a client token needs at least one policy"},
		{"management with policies", ACLTokenRequest{Type: "management", Policies: []string{"readers"}}, "Policies: a management token takes no policies"},
		{"short ttl", ACLTokenRequest{Type: "management", ExpirationTTL: time.Second}, "ExpirationTTL: must be at least 1m0s"},
		{"negative ttl", ACLTokenRequest{Type: "management", ExpirationTTL: -time.Minute}, "ExpirationTTL: must not be negative"},
		{"both expiries", ACLTokenRequest{Type: "management", ExpirationTTL: time.Hour, ExpirationTime: &past}, "give one or the other"},
		{"expiry too soon", ACLTokenRequest{Type: "management", ExpirationTime: &past}, "ExpirationTime: must be at least 1m0s in the future"},
		{"accessor given", ACLTokenRequest{AccessorID: "x", Type: "management"}, "AccessorID: must be empty on create"},
		{"secret given", ACLTokenRequest{SecretID: "x", Type: "management"}, "SecretID: secrets are generated"},
		{"bad subject", ACLTokenRequest{Type: "client", Subject: &state.TokenSubject{Kind: "robot", ID: "r"}}, `Subject.Kind: "robot"`},
		{"malformed", `{"Type": 7}`, "Type"},
		{"empty", "", "request body is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := a.Store.LatestIndex()
			a.harness.T = t
			a.FailAs(mgmt, http.MethodPost, "/v1/acl/token", tc.body, http.StatusBadRequest, tc.want)
			if a.Store.LatestIndex() != before {
				t.Error("a refused create wrote something")
			}
		})
	}
	a.harness.T = t
	a.FailAs(mgmt, http.MethodPost, "/v1/acl/token/nope", ACLTokenRequest{Type: "management"}, http.StatusNotFound)
	tok := a.ClientToken(`node { policy = "read" }`)
	acc := a.AccessorOf(tok)
	a.FailAs(mgmt, http.MethodPost, "/v1/acl/token/"+acc, ACLTokenRequest{AccessorID: "other", Type: "management"}, http.StatusBadRequest, "does not match the accessor in the path")
	a.FailAs(mgmt, http.MethodPost, "/v1/acl/token/"+acc, ACLTokenRequest{Type: "management", ExpirationTTL: time.Hour}, http.StatusBadRequest, "expiry cannot be changed")
	a.FailAs(mgmt, http.MethodPost, "/v1/acl/token/"+acc, ACLTokenRequest{Type: "management", SecretID: state.NewID()}, http.StatusBadRequest, "secret cannot be changed")
	// The token's own secret, sent back as Nomad's client does, is no change.
	var up state.ACLToken
	a.OKAs(mgmt, http.MethodPost, "/v1/acl/token/"+acc, ACLTokenRequest{Name: "renamed", Type: "management", SecretID: tok}, &up)
	if up.Name != "renamed" || up.AccessorID != acc {
		t.Errorf("update with the token's own secret: %+v", up)
	}
}

func TestACLPolicyCRUD(t *testing.T) {
	a := newACLHarness(t, false, "")
	mgmt := a.ManagementToken()
	var p state.ACLPolicy
	a.OKAs(mgmt, http.MethodPost, "/v1/acl/policy/devs", ACLPolicyRequest{Name: "devs", Description: "dev", Rules: "namespace \"dev-*\" {\n  policy = \"write\"\n}\n"}, &p)
	if p.Name != "devs" || p.CreateIndex == 0 || !strings.Contains(p.Rules, "dev-*") {
		t.Fatalf("policy = %+v", p)
	}
	// JSON rules are accepted too.
	a.OKAs(mgmt, http.MethodPut, "/v1/acl/policy/ops", ACLPolicyRequest{Rules: `{"operator": {"policy": "write"}}`}, nil)

	before := a.Store.LatestIndex()
	a.FailAs(mgmt, http.MethodPut, "/v1/acl/policy/bad", ACLPolicyRequest{Rules: "namespace \"x\" {\n  policy = \"admin\"\n}"}, http.StatusBadRequest,
		"Rules: line 2, column 3", `policy "admin" is not one of deny, read, write, scale`)
	a.FailAs(mgmt, http.MethodPut, "/v1/acl/policy/bad", ACLPolicyRequest{Rules: "namespace \"x\" {"}, http.StatusBadRequest, "Rules: line 1")
	a.FailAs(mgmt, http.MethodPut, "/v1/acl/policy/bad", ACLPolicyRequest{Name: "other", Rules: `node { policy = "read" }`}, http.StatusBadRequest, "does not match the policy in the path")
	a.FailAs(mgmt, http.MethodPut, "/v1/acl/policy/bad%20name", ACLPolicyRequest{Rules: `node { policy = "read" }`}, http.StatusBadRequest, "Name:")
	if a.Store.LatestIndex() != before {
		t.Error("refused policy writes wrote something")
	}

	// A client token lists and reads only the policies it holds.
	holder := a.Token(&state.ACLToken{Type: state.ACLTokenTypeClient, Policies: []string{"devs"}})
	var list []*state.ACLPolicy
	a.OKAs(holder, http.MethodGet, "/v1/acl/policies", nil, &list)
	if len(list) != 1 || list[0].Name != "devs" {
		t.Errorf("holder's list = %+v", list)
	}
	a.OKAs(mgmt, http.MethodGet, "/v1/acl/policies", nil, &list)
	if len(list) != 2 {
		t.Errorf("management's list = %d policies", len(list))
	}
	a.OKAs(holder, http.MethodGet, "/v1/acl/policy/devs", nil, nil)
	a.DeniedAs(holder, http.MethodGet, "/v1/acl/policy/ops", nil)
	a.DeniedAs(holder, http.MethodPut, "/v1/acl/policy/devs", ACLPolicyRequest{Rules: `namespace "*" { policy = "write" }`})

	a.OKAs(mgmt, http.MethodDelete, "/v1/acl/policy/devs", nil, nil)
	a.FailAs(mgmt, http.MethodGet, "/v1/acl/policy/devs", nil, http.StatusNotFound)
	a.FailAs(mgmt, http.MethodDelete, "/v1/acl/policy/devs", nil, http.StatusNotFound)
}

// The ACL endpoints demand their tokens even with /v1 enforcement off:
// tokens also guard /api/v2, so anyone minting them would defeat it.
func TestACLEndpointsAlwaysEnforced(t *testing.T) {
	a := newACLHarness(t, false, "")
	client := a.ClientToken(`namespace "*" { policy = "write" }`)
	a.DeniedAs("", http.MethodPost, "/v1/acl/token", ACLTokenRequest{Type: "management"})
	a.DeniedAs(client, http.MethodPost, "/v1/acl/token", ACLTokenRequest{Type: "management"})
	a.DeniedAs(client, http.MethodGet, "/v1/acl/tokens", nil)
	a.DeniedAs("", http.MethodGet, "/v1/acl/token/self", nil)
	a.FailAs("not-a-token", http.MethodGet, "/v1/acl/token/self", nil, http.StatusForbidden, "ACL token not found")
	// While the rest of /v1 is open.
	a.OKAs("", http.MethodGet, "/v1/jobs", nil, nil)
	a.OKAs("not-a-token", http.MethodGet, "/v1/jobs", nil, nil)
}

func TestACLTokenFromBearerHeader(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.ManagementToken()
	req := func(h, v string) int {
		r, _ := http.NewRequest(http.MethodGet, "/v1/acl/token/self", nil)
		r.Header.Set(h, v)
		rec := httptest.NewRecorder()
		a.srv.Handler().ServeHTTP(rec, r)
		return rec.Code
	}
	if c := req("Authorization", "Bearer "+mgmt); c != http.StatusOK {
		t.Errorf("Bearer: %d", c)
	}
	if c := req("Authorization", "bearer  "+mgmt+" "); c != http.StatusOK {
		t.Errorf("lower-case bearer with spaces: %d", c)
	}
	if c := req("Authorization", "Basic "+mgmt); c != http.StatusForbidden {
		t.Errorf("Basic scheme accepted: %d", c)
	}
	if c := req(schedhttp.HeaderToken, mgmt); c != http.StatusOK {
		t.Errorf("%s: %d", schedhttp.HeaderToken, c)
	}
}

func TestACLTokenReadSelfByAccessor(t *testing.T) {
	a := newACLHarness(t, true, "")
	tok := a.ClientToken(`node { policy = "read" }`)
	other := a.ClientToken(`node { policy = "read" }`)
	var got state.ACLToken
	a.OKAs(tok, http.MethodGet, "/v1/acl/token/"+a.AccessorOf(tok), nil, &got)
	if got.AccessorID != a.AccessorOf(tok) {
		t.Errorf("read own token = %+v", got)
	}
	a.DeniedAs(tok, http.MethodGet, "/v1/acl/token/"+a.AccessorOf(other), nil)
}

func TestACLTokenExpiry(t *testing.T) {
	a := newACLHarness(t, true, "")
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPut, "/v1/acl/policy/readers", ACLPolicyRequest{Rules: `namespace "*" { policy = "read" }`}, nil)
	var tok state.ACLToken
	a.OKAs(mgmt, http.MethodPost, "/v1/acl/token", ACLTokenRequest{Type: "client", Policies: []string{"readers"}, ExpirationTTL: 10 * time.Minute}, &tok)
	a.OKAs(tok.SecretID, http.MethodGet, "/v1/jobs", nil, nil)
	a.Clock.Advance(10*time.Minute - time.Nanosecond)
	a.OKAs(tok.SecretID, http.MethodGet, "/v1/jobs", nil, nil)
	a.Clock.Advance(time.Nanosecond)
	a.FailAs(tok.SecretID, http.MethodGet, "/v1/jobs", nil, http.StatusForbidden, "ACL token not found")
	a.FailAs(tok.SecretID, http.MethodGet, "/v1/acl/token/self", nil, http.StatusForbidden, "ACL token not found")
	if _, _, err := a.resolver.ResolveToken(tok.SecretID); err != state.ErrACLTokenNotFound {
		t.Errorf("ResolveToken of an expired token: %v", err)
	}
	// The token is still listed (for the operator to see and delete).
	var list []*state.ACLToken
	a.OKAs(mgmt, http.MethodGet, "/v1/acl/tokens", nil, &list)
	found := false
	for _, l := range list {
		found = found || l.AccessorID == tok.AccessorID
	}
	if !found {
		t.Error("expired token not listed")
	}
}

// TestACLTokenRequestTTLForms: ExpirationTTL is read as nanoseconds or as
// a duration string (Nomad's client sends "" or "1h0m0s"); anything else
// is refused with the field named.
func TestACLTokenRequestTTLForms(t *testing.T) {
	for body, want := range map[string]time.Duration{
		`{"Name":"a"}`:                         0,
		`{"Name":"a","ExpirationTTL":""}`:      0,
		`{"Name":"a","ExpirationTTL":null}`:    0,
		`{"Name":"a","ExpirationTTL":"1h"}`:    time.Hour,
		`{"Name":"a","ExpirationTTL":6e10}`:    time.Minute,
		`{"Name":"a","ExpirationTTL":1000000}`: time.Millisecond,
	} {
		var r ACLTokenRequest
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.ExpirationTTL != want || r.Name != "a" {
			t.Errorf("%s: TTL %v name %q err %v, want %v", body, r.ExpirationTTL, r.Name, err, want)
		}
	}
	for _, body := range []string{`{"ExpirationTTL":"soon"}`, `{"ExpirationTTL":true}`} {
		var r ACLTokenRequest
		if err := json.Unmarshal([]byte(body), &r); err == nil || !strings.Contains(err.Error(), "ExpirationTTL") {
			t.Errorf("%s: err %v, want one naming ExpirationTTL", body, err)
		}
	}
}
