package mgmt

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
)

// Spec §5 and issue item 6: every request needs a token (401 otherwise);
// who the token speaks for decides the rest.
func TestMgmtAuthentication(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()

	m.fail("", "GET", "/organizations", nil, 401, "", "token is required")
	m.fail("not-a-token", "GET", "/organizations/acme", nil, 401, "", "unknown or has expired")
	m.fail("", "POST", "/organizations", docBody("organizations", map[string]any{"name": "x", "email": "a@b.c"}), 401, "")

	// The secret is accepted as X-Sched-Token too.
	req := httptest.NewRequest("GET", "/api/v2/organizations/acme", nil)
	req.Header.Set(schedhttp.HeaderToken, w.owner)
	rec := httptest.NewRecorder()
	m.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("X-Sched-Token: %d %s", rec.Code, rec.Body.String())
	}

	// An expired token is a 401 once the clock passes its expiry.
	tok := m.call(m.root, "POST", "/users/"+w.ownerID+"/authentication-tokens",
		docBody("authentication-tokens", map[string]any{"expired-at": apitest.Now.Add(2 * time.Minute).Format(time.RFC3339)}), 201).one(t)
	short := tok.Attributes["token"].(string)
	if tok.Attributes["expired-at"] != "2025-06-01T12:02:00.000Z" {
		t.Errorf("expired-at = %v", tok.Attributes["expired-at"])
	}
	m.call(short, "GET", "/account/details", nil, 200)
	m.clock.Advance(3 * time.Minute)
	m.fail(short, "GET", "/account/details", nil, 401, "", "expired")
	m.fail(m.root, "POST", "/users/"+w.ownerID+"/authentication-tokens",
		docBody("authentication-tokens", map[string]any{"expired-at": "tomorrow"}), 422, "/data/attributes/expired-at")
	m.fail(m.root, "POST", "/users/"+w.ownerID+"/authentication-tokens",
		docBody("authentication-tokens", map[string]any{"expired-at": m.clock.Now().Add(time.Second).Format(time.RFC3339)}), 422, "/data/attributes/expired-at")

	// A /v1 client token speaks for nobody here.
	v1 := m.clientToken(`namespace "default" { policy = "read" }`)
	m.fail(v1, "GET", "/organizations", nil, 401, "", "speaks for no user")
	// A token whose subject is gone authenticates no one.
	ghost := m.token(&state.ACLToken{Type: state.ACLTokenTypeClient, Subject: &state.TokenSubject{Kind: state.SubjectKindUser, ID: "user-gone"}})
	m.fail(ghost, "GET", "/organizations", nil, 401, "", "no longer exists")

	// Deleting a user revokes their tokens.
	gone, goneSecret := m.user("gone")
	m.call(goneSecret, "GET", "/account/details", nil, 200)
	m.call(m.root, "DELETE", "/admin/users/"+gone, nil, 204)
	m.fail(goneSecret, "GET", "/account/details", nil, 401, "")
	if toks, _ := m.api.tokensOf(state.TokenSubject{Kind: state.SubjectKindUser, ID: gone}); len(toks) != 0 {
		t.Errorf("%d tokens of a deleted user remain", len(toks))
	}
}

// Team and organization tokens act as their team and as an owner (spec
// §5.3: the organization token and the owners team token act as owner).
func TestMgmtTeamAndOrganizationTokens(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()

	orgTok := m.call(w.owner, "POST", "/organizations/acme/authentication-token", nil, 201).one(t)
	orgSecret := orgTok.Attributes["token"].(string)
	if orgTok.Type != "authentication-tokens" || orgSecret == "" {
		t.Fatalf("organization token = %+v", orgTok)
	}
	// The organization token acts as an owner: it creates projects and
	// manages team access, but creates no organizations.
	p := m.project(orgSecret, "acme", "by-org-token", nil)
	m.grant(orgSecret, w.managersTeam, p.ID, "write", nil)
	m.fail(orgSecret, "POST", "/organizations", docBody("organizations", map[string]any{"name": "new", "email": "a@b.c"}), 403, "")
	m.fail(orgSecret, "GET", "/account/details", nil, 404, "")
	// Regenerating replaces the previous token.
	again := m.call(w.owner, "POST", "/organizations/acme/authentication-token", nil, 201).one(t).Attributes["token"].(string)
	m.fail(orgSecret, "GET", "/organizations/acme", nil, 401, "")
	m.call(again, "GET", "/organizations/acme", nil, 200)
	// Only owners manage it.
	m.fail(w.manager, "POST", "/organizations/acme/authentication-token", nil, 403, "")
	m.fail(w.outsider, "POST", "/organizations/acme/authentication-token", nil, 404, "")
	m.call(w.owner, "DELETE", "/organizations/acme/authentication-token", nil, 204)
	m.fail(again, "GET", "/organizations/acme", nil, 401, "")
	m.fail(w.owner, "DELETE", "/organizations/acme/authentication-token", nil, 404, "")

	// The owners team's token acts as an owner; another team's token as
	// that team.
	ownersTeam := m.call(w.owner, "GET", "/organizations/acme", nil, 200).one(t).relID(t, "owners-team")
	ownersSecret := m.teamToken(w.owner, ownersTeam)
	m.project(ownersSecret, "acme", "by-owners-token", nil)
	readersSecret := m.teamToken(w.reader, w.readersTeam) // a member generates its team's token
	if ids := m.call(readersSecret, "GET", "/organizations/acme/projects", nil, 200).ids(t); len(ids) != 1 || ids[0] != w.appProject {
		t.Errorf("readers team token sees %v", ids)
	}
	m.fail(readersSecret, "POST", "/organizations/acme/projects", docBody("projects", map[string]any{"name": "nope"}), 403, "")
	m.fail(w.outsider, "POST", "/teams/"+w.readersTeam+"/authentication-token", nil, 404, "")
	m.fail(w.manager, "POST", "/teams/"+w.readersTeam+"/authentication-token", nil, 404, "") // secret team, not his
	// Deleting the team revokes its token.
	m.call(w.owner, "DELETE", "/teams/"+w.readersTeam, nil, 204)
	m.fail(readersSecret, "GET", "/organizations/acme", nil, 401, "")
}

func TestMgmtPing(t *testing.T) {
	m := newAPIHarness(t, 0) // the default limit
	rec := m.send("", "GET", "/ping", nil)
	if rec.Code != http.StatusNoContent || rec.Header().Get("TFP-API-Version") != APIVersion ||
		rec.Header().Get(HeaderRateLimitLimit) != "30" || rec.Header().Get("Content-Type") != jsonapi.MediaType {
		t.Errorf("ping: %d %v", rec.Code, rec.Header())
	}
}

// The rate limit: a token rateBucket per token (default 30 per second), with
// an injected clock.
func TestMgmtRateLimit(t *testing.T) {
	m := newAPIHarness(t, 3)
	_, alice := m.user("alice")
	m.clock.Advance(time.Hour) // the fixtures' requests are forgotten
	_, bob := m.user("bob")
	m.clock.Advance(time.Hour)

	for i, wantRemaining := range []string{"2", "1", "0"} {
		rec := m.send(alice, "GET", "/account/details", nil)
		if rec.Code != 200 || rec.Header().Get(HeaderRateLimitLimit) != "3" || rec.Header().Get(HeaderRateLimitRemaining) != wantRemaining {
			t.Fatalf("request %d: %d, headers %v", i, rec.Code, rec.Header())
		}
	}
	doc := m.fail(alice, "GET", "/account/details", nil, http.StatusTooManyRequests, "", "rate limit of 3 requests per second")
	if doc.Errors[0].Title != jsonapi.TitleRateLimited {
		t.Errorf("429 title = %q", doc.Errors[0].Title)
	}
	rec := m.send(alice, "GET", "/account/details", nil)
	if reset := rec.Header().Get(HeaderRateLimitReset); reset != "0.333" || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("reset = %q, Retry-After = %q", reset, rec.Header().Get("Retry-After"))
	}
	// Another token has its own rateBucket.
	m.call(bob, "GET", "/account/details", nil, 200)
	// One token's worth of time later, one more request passes.
	m.clock.Advance(334 * time.Millisecond)
	m.call(alice, "GET", "/account/details", nil, 200)
	m.fail(alice, "GET", "/account/details", nil, 429, "")
	// A full second refills the rateBucket, but never above its size.
	m.clock.Advance(10 * time.Second)
	for range 3 {
		m.call(alice, "GET", "/account/details", nil, 200)
	}
	m.fail(alice, "GET", "/account/details", nil, 429, "")
	// Requests without a valid token share their address's rateBucket, and
	// are limited before they are told they are unauthorized.
	for range 3 {
		m.fail("", "GET", "/organizations", nil, 401, "")
	}
	m.fail("", "GET", "/organizations", nil, 429, "")
	if rec := m.send("", "GET", "/ping", nil); rec.Code != 429 {
		t.Errorf("ping over the limit: %d", rec.Code)
	}
}

func TestRateLimiterSweepsFullBuckets(t *testing.T) {
	now := apitest.Now
	l := newRateLimiter(10, func() time.Time { return now })
	for i := range maxBuckets {
		l.take("k" + string(rune(i)))
	}
	now = now.Add(time.Second)
	l.take("fresh")
	if len(l.buckets) != 1 {
		t.Errorf("%d buckets after a sweep, want 1", len(l.buckets))
	}
	if off := newRateLimiter(-1, time.Now); off.admit(httptest.NewRecorder(), "k") != nil {
		t.Error("a disabled limiter refused a request")
	}
}

// Spec §5.4: every admin path is a 404 for a caller who is not a site
// administrator, whatever the method, and a 401 without a token.
func TestMgmtAdminPathsHiddenFromNonAdmins(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	adminRoutes := 0
	for _, rt := range m.api.Routes() {
		if !strings.HasPrefix(rt.Path, "/api/v2/admin/") && rt.Path != "/api/v2/admin" {
			continue
		}
		adminRoutes++
		path := strings.NewReplacer(":id", "x", ":name", "acme", ":user", w.ownerID).Replace(rt.Path)
		m.on(t).fail(w.owner, rt.Method, path, docBody("x", nil), 404, "")
		m.on(t).fail("", rt.Method, path, nil, 401, "")
	}
	if adminRoutes < 20 {
		t.Fatalf("only %d admin routes found", adminRoutes)
	}
	// A user granted admin uses them; revoked, loses them.
	m.call(m.root, "POST", "/admin/users/"+w.ownerID+"/actions/grant_admin", nil, 200)
	m.call(w.owner, "GET", "/admin/organizations", nil, 200)
	if u := m.call(w.owner, "GET", "/account/details", nil, 200).one(t); u.Attributes["is-site-admin"] != true {
		t.Errorf("account = %v", u.Attributes)
	}
	m.call(m.root, "POST", "/admin/users/"+w.ownerID+"/actions/revoke_admin", nil, 200)
	m.fail(w.owner, "GET", "/admin/organizations", nil, 404, "")
}
