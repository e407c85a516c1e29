package store

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

const stRulesRead = `namespace "default" { policy = "read" }`

var stTokenTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// stClientToken is a new client token with secret "secret-<id>".
func stClientToken(id string, policies ...string) *state.ACLToken {
	return &state.ACLToken{AccessorID: id, SecretHash: state.HashSecret("secret-" + id), Name: "token " + id,
		Type: state.ACLTokenTypeClient, Policies: policies, CreateTime: stTokenTime}
}

// stFillACLTables writes a policy, a token and the bootstrap record at
// indexes base..base+2, for the snapshot round-trip test.
func stFillACLTables(t *testing.T, s *Store, base uint64) {
	t.Helper()
	stApply(t, s, base, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "readers", Description: "d", Rules: stRulesRead}}})
	exp := stTokenTime.Add(time.Hour)
	tok := stClientToken("t1", "readers")
	tok.ExpirationTime, tok.ExpirationTTL = &exp, time.Hour
	tok.Subject = &state.TokenSubject{Kind: state.SubjectKindUser, ID: "user-1"}
	stApply(t, s, base+1, ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}})
	stApply(t, s, base+2, ACLBootstrapRequestType, &ACLBootstrapRequest{Token: &state.ACLToken{AccessorID: "boot",
		SecretHash: state.HashSecret("boot-secret"), Type: state.ACLTokenTypeManagement, CreateTime: stTokenTime}})
}

func TestACLTokenUpsertCreateAndUpdate(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 10, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{
		{Name: "readers", Rules: stRulesRead}, {Name: "writers", Rules: `namespace "*" { policy = "write" }`}}})
	stApply(t, s, 11, ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{stClientToken("t1", "readers")}})

	got := stMust[*state.ACLToken](t)(s.ACLTokenByAccessorID(nil, "t1"))
	if got == nil || got.CreateIndex != 11 || got.ModifyIndex != 11 || !got.CreateTime.Equal(stTokenTime) {
		t.Fatalf("created token = %+v", got)
	}
	if bySecret := stMust[*state.ACLToken](t)(s.ACLTokenBySecret(nil, "secret-t1")); bySecret == nil || bySecret.AccessorID != "t1" {
		t.Errorf("ACLTokenBySecret = %+v", bySecret)
	}
	for _, wrong := range []string{"", "secret-t2", "SECRET-T1"} {
		if tok := stMust[*state.ACLToken](t)(s.ACLTokenBySecret(nil, wrong)); tok != nil {
			t.Errorf("ACLTokenBySecret(%q) found %s", wrong, tok.AccessorID)
		}
	}

	// An update replaces name and policies but never the secret, create
	// time or expiry, whatever it carries.
	exp := stTokenTime.Add(time.Hour)
	upd := &state.ACLToken{AccessorID: "t1", SecretHash: state.HashSecret("stolen"), Name: "renamed", Type: state.ACLTokenTypeClient,
		Policies: []string{"writers"}, CreateTime: stTokenTime.Add(time.Hour), ExpirationTime: &exp}
	stApply(t, s, 12, ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{upd}})
	got = stMust[*state.ACLToken](t)(s.ACLTokenByAccessorID(nil, "t1"))
	if got.Name != "renamed" || got.Policies[0] != "writers" || got.CreateIndex != 11 || got.ModifyIndex != 12 {
		t.Errorf("updated token = %+v", got)
	}
	if got.SecretHash != state.HashSecret("secret-t1") || !got.CreateTime.Equal(stTokenTime) || got.ExpirationTime != nil {
		t.Errorf("update changed secret, create time or expiry: %+v", got)
	}
	if stMust[*state.ACLToken](t)(s.ACLTokenBySecret(nil, "stolen")) != nil {
		t.Error("update re-keyed the token to a new secret")
	}
}

func TestACLTokenUpsertRejects(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 10, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "readers", Rules: stRulesRead}}})
	stApply(t, s, 11, ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{stClientToken("t1", "readers")}})
	mgmtWithPolicy := stClientToken("m", "readers")
	mgmtWithPolicy.Type = state.ACLTokenTypeManagement
	noPolicies := stClientToken("np")
	badType := stClientToken("bt", "readers")
	badType.Type = "root"
	badSubject := stClientToken("bs", "readers")
	badSubject.Subject = &state.TokenSubject{Kind: "robot"}
	sameSecret := stClientToken("t2", "readers")
	sameSecret.SecretHash = state.HashSecret("secret-t1")

	cases := []struct {
		name   string
		tokens []*state.ACLToken
		is     error
		want   string
	}{
		{"unknown policy", []*state.ACLToken{stClientToken("t9", "readers", "ghost")}, state.ErrInvalid, `Tokens[0].Policies[1]: policy "ghost" does not exist`},
		{"management with policies", []*state.ACLToken{mgmtWithPolicy}, state.ErrInvalid, "Tokens[0].Policies: a management token takes no policies"},
		{"client without policies", []*state.ACLToken{noPolicies}, state.ErrInvalid, "needs at least one policy"},
		{"bad type", []*state.ACLToken{badType}, state.ErrInvalid, `Tokens[0].Type: "root"`},
		{"bad subject", []*state.ACLToken{badSubject}, state.ErrInvalid, "Subject.Kind"},
		{"update of a missing token", []*state.ACLToken{{AccessorID: "gone", Type: state.ACLTokenTypeClient, Policies: []string{"readers"}}}, state.ErrNotFound, "gone"},
		{"secret clash", []*state.ACLToken{sameSecret}, state.ErrConflict, "already exists"},
		{"no accessor", []*state.ACLToken{{Type: state.ACLTokenTypeManagement, SecretHash: state.HashSecret("x")}}, state.ErrInvalid, "AccessorID"},
		{"all or none", []*state.ACLToken{stClientToken("ok", "readers"), stClientToken("bad", "ghost")}, state.ErrInvalid, "Tokens[1]"},
		{"empty", nil, state.ErrInvalid, "at least one"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stDump(t, s)
			resp := stApplyErr(t, s, uint64(20+i), ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: tc.tokens})
			err, ok := resp.(error)
			if !ok {
				t.Fatalf("applied; want an error")
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q (is %v?), want %v mentioning %q", err, errors.Is(err, tc.is), tc.is, tc.want)
			}
			stCompareDumps(t, before, stDump(t, s))
		})
	}
}

func TestACLTokenDelete(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 10, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "readers", Rules: stRulesRead}}})
	stApply(t, s, 11, ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{stClientToken("t1", "readers"), stClientToken("t2", "readers")}})
	resp := stApplyErr(t, s, 12, ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{"t1", "ghost"}})
	if err, ok := resp.(error); !ok || !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("delete with an unknown accessor = %v, want ErrNotFound", resp)
	}
	if stMust[*state.ACLToken](t)(s.ACLTokenByAccessorID(nil, "t1")) == nil {
		t.Fatal("failed delete removed t1")
	}
	stApply(t, s, 13, ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{"t1"}})
	if stMust[*state.ACLToken](t)(s.ACLTokenBySecret(nil, "secret-t1")) != nil {
		t.Error("deleted token still resolves")
	}
	if got := stMust[[]*state.ACLToken](t)(s.ACLTokens(nil, "")); len(got) != 1 || got[0].AccessorID != "t2" {
		t.Errorf("tokens after delete = %v", got)
	}
	if s.Index(TableACLTokens) != 13 {
		t.Errorf("Index(acl_tokens) = %d, want 13", s.Index(TableACLTokens))
	}
}

func TestACLPolicyUpsertAndDelete(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 10, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "readers", Rules: stRulesRead}}})
	stApply(t, s, 11, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "readers", Description: "v2", Rules: stRulesRead}}})
	p := stMust[*state.ACLPolicy](t)(s.ACLPolicyByName(nil, "readers"))
	if p.Description != "v2" || p.CreateIndex != 10 || p.ModifyIndex != 11 {
		t.Errorf("policy = %+v", p)
	}
	resp := stApplyErr(t, s, 12, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "ok", Rules: stRulesRead}, {Name: "bad", Rules: `node { policy = "root" }`}}})
	if err, ok := resp.(error); !ok || !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "Policies[1].Rules") {
		t.Fatalf("bad rules = %v, want ErrInvalid naming Policies[1].Rules", resp)
	}
	if stMust[*state.ACLPolicy](t)(s.ACLPolicyByName(nil, "ok")) != nil {
		t.Error("a failed upsert wrote its valid half")
	}
	resp = stApplyErr(t, s, 13, ACLPolicyDeleteRequestType, &ACLPolicyDeleteRequest{Names: []string{"ghost"}})
	if err, ok := resp.(error); !ok || !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("delete unknown = %v", resp)
	}
	stApply(t, s, 14, ACLPolicyDeleteRequestType, &ACLPolicyDeleteRequest{Names: []string{"readers"}})
	if got := stMust[[]*state.ACLPolicy](t)(s.ACLPolicies(nil, "")); len(got) != 0 {
		t.Errorf("policies after delete = %v", got)
	}
}

func TestACLBootstrapOnceAndReset(t *testing.T) {
	s := stStore(t, Config{})
	boot := func(id string, reset uint64) *ACLBootstrapRequest {
		return &ACLBootstrapRequest{ResetIndex: reset, Token: &state.ACLToken{AccessorID: id, SecretHash: state.HashSecret(id + "-secret"),
			Name: "Bootstrap Token", Type: state.ACLTokenTypeManagement, Global: true, CreateTime: stTokenTime}}
	}
	if _, done, _ := s.ACLBootstrapped(nil); done {
		t.Fatal("a new store is bootstrapped")
	}
	stApply(t, s, 10, ACLBootstrapRequestType, boot("b1", 0))
	if idx, done, _ := s.ACLBootstrapped(nil); !done || idx != 10 {
		t.Fatalf("ACLBootstrapped = %d, %v", idx, done)
	}
	for _, reset := range []uint64{0, 9, 11} {
		resp := stApplyErr(t, s, 11, ACLBootstrapRequestType, boot("b2", reset))
		err, ok := resp.(error)
		if !ok || !errors.Is(err, state.ErrInvalid) || err.Error() != "ACL bootstrap already done (reset index: 10)" {
			t.Fatalf("second bootstrap with reset %d = %v", reset, resp)
		}
	}
	if stMust[*state.ACLToken](t)(s.ACLTokenByAccessorID(nil, "b2")) != nil {
		t.Fatal("refused bootstrap wrote its token")
	}
	// The reset index re-arms bootstrap once: it moves with the new one.
	stApply(t, s, 12, ACLBootstrapRequestType, boot("b2", 10))
	if idx, _, _ := s.ACLBootstrapped(nil); idx != 12 {
		t.Errorf("reset index after re-bootstrap = %d, want 12", idx)
	}
	if resp := stApplyErr(t, s, 13, ACLBootstrapRequestType, boot("b3", 10)); resp == nil {
		t.Error("an old reset index was accepted twice")
	}
	if tok := stMust[*state.ACLToken](t)(s.ACLTokenBySecret(nil, "b2-secret")); tok == nil || !tok.IsManagement() {
		t.Errorf("re-bootstrap token = %+v", tok)
	}
	client := boot("b4", 12)
	client.Token.Type = state.ACLTokenTypeClient
	if resp := stApplyErr(t, s, 14, ACLBootstrapRequestType, client); resp == nil {
		t.Error("a client bootstrap token was accepted")
	}
}

// The secret must never reach the log or a snapshot, even when a caller
// leaves it set on the token it proposes.
func TestACLSecretNeverReplicated(t *testing.T) {
	tok := stClientToken("t1", "readers")
	tok.SecretID = "very-secret-value"
	data, err := Encode(ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("very-secret-value")) {
		t.Fatal("the log entry carries the secret")
	}
	s := stStore(t, Config{})
	stApply(t, s, 10, ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "readers", Rules: stRulesRead}}})
	s.Apply(11, data)
	got := stMust[*state.ACLToken](t)(s.ACLTokenByAccessorID(nil, "t1"))
	if got == nil || got.SecretID != "" || got.SecretHash != state.HashSecret("secret-t1") {
		t.Fatalf("stored token = %+v", got)
	}
	snap, _ := s.Snapshot()
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("secret-t1")) {
		t.Error("the snapshot carries a secret")
	}
}

func TestACLTokenExpiry(t *testing.T) {
	exp := stTokenTime.Add(time.Hour)
	tok := &state.ACLToken{ExpirationTime: &exp}
	if tok.IsExpired(exp.Add(-time.Nanosecond)) || !tok.IsExpired(exp) || !tok.IsExpired(exp.Add(time.Second)) {
		t.Error("IsExpired boundaries wrong")
	}
	if (&state.ACLToken{}).IsExpired(stTokenTime.Add(100 * 365 * 24 * time.Hour)) {
		t.Error("a token without expiry expired")
	}
}

// TestACLBootstrapAdminUser: the bootstrap creates its site administrator
// and the token speaks for them; a bootstrap after a reset with the same
// username reuses that user (made an administrator again), and bad names
// are refused before anything is written.
func TestACLBootstrapAdminUser(t *testing.T) {
	s := stStore(t, Config{})
	admin, err := NewBootstrapAdmin("", "", stTokenTime, "source-1")
	if err != nil || admin.Username != DefaultAdminUsername || admin.Email != DefaultAdminEmail || !admin.IsAdmin {
		t.Fatalf("default admin = %+v, %v", admin, err)
	}
	if want := mgmt.IDFrom(mgmt.PrefixUser, "source-1"); admin.ID != want {
		t.Fatalf("admin ID %q, want %q from the injected source", admin.ID, want)
	}
	boot := func(id string, reset uint64, u *mgmt.User) *ACLBootstrapRequest {
		return &ACLBootstrapRequest{ResetIndex: reset, AdminUser: u, Token: &state.ACLToken{AccessorID: id, SecretHash: state.HashSecret(id + "-secret"),
			Name: "Bootstrap Token", Type: state.ACLTokenTypeManagement, Global: true, CreateTime: stTokenTime}}
	}
	stApply(t, s, 10, ACLBootstrapRequestType, boot("b1", 0, admin))
	u := stMust[*mgmt.User](t)(s.UserByUsername(nil, "admin"))
	if u == nil || u.ID != admin.ID || !u.IsAdmin || u.Email != DefaultAdminEmail {
		t.Fatalf("admin user = %+v", u)
	}
	tok := stMust[*state.ACLToken](t)(s.ACLTokenByAccessorID(nil, "b1"))
	if tok.Subject == nil || tok.Subject.Kind != state.SubjectKindUser || tok.Subject.ID != admin.ID {
		t.Fatalf("bootstrap token subject = %+v", tok.Subject)
	}
	// Revoke, then re-bootstrap with the same name: the same user again.
	stApply(t, s, 11, UserUpsertRequestType, &UserUpsertRequest{User: &mgmt.User{ID: u.ID, Username: u.Username, Email: u.Email, CreatedAt: u.CreatedAt}})
	again, err := NewBootstrapAdmin("ADMIN", "ops@example.com", stTokenTime, "source-2")
	if err != nil {
		t.Fatal(err)
	}
	stApply(t, s, 12, ACLBootstrapRequestType, boot("b2", 10, again))
	if u2 := stMust[*mgmt.User](t)(s.UserByUsername(nil, "admin")); u2 == nil || u2.ID != admin.ID || !u2.IsAdmin {
		t.Fatalf("re-bootstrap admin = %+v", u2)
	}
	if tok := stMust[*state.ACLToken](t)(s.ACLTokenByAccessorID(nil, "b2")); tok.Subject == nil || tok.Subject.ID != admin.ID {
		t.Fatalf("re-bootstrap token subject = %+v", tok.Subject)
	}
	for _, c := range []struct{ name, email, want string }{
		{"no spaces", "", "AdminName"}, {"admin", "nope", "AdminEmail"}, {strings.Repeat("a", 65), "", "AdminName"},
	} {
		if _, err := NewBootstrapAdmin(c.name, c.email, stTokenTime, "source-3"); err == nil || !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewBootstrapAdmin(%q, %q) = %v, want an error naming %s", c.name, c.email, err, c.want)
		}
	}
}
