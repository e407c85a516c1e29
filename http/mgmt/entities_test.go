package mgmt

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

func TestMgmtOrganizations(t *testing.T) {
	m := newAPIHarness(t)
	ownerID, owner := m.user("olivia")
	_, member := m.user("manny")
	memberID := m.call(member, "GET", "/account/details", nil, 200).one(t).ID
	_, outsider := m.user("oscar")

	o := m.call(owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": "acme", "email": "ops@acme.example"}), 201).one(t)
	if o.ID != "acme" || !strings.HasPrefix(o.Attributes["external-id"].(string), "org-") || o.attr("permissions", "can-update") != true {
		t.Errorf("created = %+v", o)
	}
	// Every new organization has an owners team (with its creator on it)
	// and a Default Project.
	owners := m.call(owner, "GET", "/teams/"+o.relID(t, "owners-team")+"?include=users", nil, 200)
	ot := owners.one(t)
	if ot.Attributes["name"] != "owners" || ot.Attributes["is-owners"] != true || len(owners.Included) != 1 || owners.Included[0].ID != ownerID {
		t.Errorf("owners team = %+v %+v", ot, owners.Included)
	}
	dp := m.call(owner, "GET", "/projects/"+o.relID(t, "default-project"), nil, 200).one(t)
	if dp.Attributes["name"] != "Default Project" || dp.Attributes["is-default"] != true {
		t.Errorf("default project = %v", dp.Attributes)
	}
	// Bad bodies.
	m.fail(owner, "POST", "/organizations", docBody("organizations", map[string]any{"email": "a@b.c"}), 422, "/data/attributes/name", "is required")
	m.fail(owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": "x"}), 422, "/data/attributes/email")
	m.fail(owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": "bad name", "email": "a@b.c"}), 422, "/data/attributes/name")
	m.fail(owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": "ok", "email": "not-an-email"}), 422, "/data/attributes/email")
	m.fail(owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": "ACME", "email": "a@b.c"}), 422, "/data/attributes/name", "already been taken")
	m.fail(owner, "POST", "/organizations", docBody("teams", map[string]any{"name": "ok", "email": "a@b.c"}), 422, "/data/type")

	// Membership decides who sees it.
	m.team(owner, "acme", "devs", "organization", nil, memberID)
	if got := m.call(member, "GET", "/organizations", nil, 200).ids(t); !slices.Equal(got, []string{"acme"}) {
		t.Errorf("member's organizations = %v", got)
	}
	if got := m.call(outsider, "GET", "/organizations", nil, 200).ids(t); len(got) != 0 {
		t.Errorf("outsider's organizations = %v", got)
	}
	if got := m.call(m.root, "GET", "/organizations", nil, 200).ids(t); !slices.Equal(got, []string{"acme"}) {
		t.Errorf("administrator's organizations = %v", got)
	}
	m.fail(outsider, "GET", "/organizations/acme", nil, 404, "")
	if mo := m.call(member, "GET", "/organizations/acme", nil, 200).one(t); mo.attr("permissions", "can-update") != false {
		t.Errorf("member's permissions = %v", mo.Attributes["permissions"])
	}
	// Update: owners only; the name cannot change.
	m.fail(member, "PATCH", "/organizations/acme", docBody("organizations", map[string]any{"email": "x@y.z"}), 403, "")
	m.fail(outsider, "PATCH", "/organizations/acme", docBody("organizations", map[string]any{"email": "x@y.z"}), 404, "")
	m.fail(owner, "PATCH", "/organizations/acme", docBody("organizations", map[string]any{"name": "acme2"}), 422, "/data/attributes/name")
	m.fail(owner, "PATCH", "/organizations/acme", docBody("organizations", map[string]any{"email": "nope"}), 422, "/data/attributes/email")
	if u := m.call(owner, "PATCH", "/organizations/acme", docBody("organizations", map[string]any{"email": "new@acme.example"}), 200).one(t); u.Attributes["email"] != "new@acme.example" {
		t.Errorf("updated = %v", u.Attributes)
	}
	// Team tokens create no organizations; users do.
	devsToken := m.teamToken(owner, m.call(owner, "GET", "/organizations/acme/teams?filter[names]=devs", nil, 200).ids(t)[0])
	m.fail(devsToken, "POST", "/organizations", docBody("organizations", map[string]any{"name": "x2", "email": "a@b.c"}), 403, "")
	// Delete: owners only.
	m.fail(member, "DELETE", "/organizations/acme", nil, 403, "")
	m.call(owner, "DELETE", "/organizations/acme", nil, 204)
	m.fail(owner, "GET", "/organizations/acme", nil, 404, "")
	m.fail(devsToken, "GET", "/account/details", nil, 401, "")
}

func TestMgmtUsersAndTokens(t *testing.T) {
	m := newAPIHarness(t)
	aliceID, alice := m.user("alice")
	bobID, bob := m.user("bob")

	me := m.call(alice, "GET", "/account/details", nil, 200).one(t)
	if me.ID != aliceID || me.Attributes["username"] != "alice" || me.Attributes["email"] != "alice@example.com" {
		t.Errorf("account = %+v", me)
	}
	m.call(alice, "GET", "/users/"+aliceID, nil, 200)
	m.fail(alice, "GET", "/users/"+bobID, nil, 404, "")
	m.call(m.root, "GET", "/users/"+bobID, nil, 200)
	m.fail(m.root, "GET", "/account/details", nil, 404, "")
	// Admin user endpoints.
	m.fail(m.root, "POST", "/admin/users", docBody("users", map[string]any{"username": "ALICE", "email": "a@b.c"}), 422, "/data/attributes/username", "already been taken")
	m.fail(m.root, "POST", "/admin/users", docBody("users", map[string]any{"email": "a@b.c"}), 422, "/data/attributes/username", "required")
	m.fail(m.root, "POST", "/admin/users", docBody("users", map[string]any{"username": "bad name", "email": "a@b.c"}), 422, "/data/attributes/username")
	m.fail(m.root, "POST", "/admin/users", docBody("users", map[string]any{"username": "carol", "email": "a@b.c", "is-admin": "no"}), 422, "/data/attributes/is-admin")
	if got := m.call(m.root, "GET", "/admin/users?q=BO", nil, 200).ids(t); !slices.Equal(got, []string{bobID}) {
		t.Errorf("q=BO = %v", got)
	}
	m.call(m.root, "GET", "/admin/users/"+aliceID, nil, 200)
	m.fail(m.root, "GET", "/admin/users/user-none", nil, 404, "")
	// Tokens: a user lists and deletes their own; others' are 404.
	extra := m.call(alice, "POST", "/users/"+aliceID+"/authentication-tokens", docBody("authentication-tokens", map[string]any{"description": "ci"}), 201).one(t)
	if extra.Attributes["description"] != "ci" || extra.Attributes["token"] == nil || extra.relID(t, "user") != aliceID {
		t.Errorf("token = %+v", extra)
	}
	toks := m.call(alice, "GET", "/users/"+aliceID+"/authentication-tokens", nil, 200).many(t)
	if len(toks) != 2 {
		t.Fatalf("alice's tokens = %d", len(toks))
	}
	for _, tok := range toks {
		if tok.Attributes["token"] != nil {
			t.Errorf("a list shows a secret: %v", tok.Attributes)
		}
	}
	m.fail(bob, "GET", "/users/"+aliceID+"/authentication-tokens", nil, 404, "")
	m.fail(bob, "POST", "/users/"+aliceID+"/authentication-tokens", nil, 404, "")
	m.fail(bob, "GET", "/authentication-tokens/"+extra.ID, nil, 404, "")
	m.fail(bob, "DELETE", "/authentication-tokens/"+extra.ID, nil, 404, "")
	if got := m.call(alice, "GET", "/authentication-tokens/"+extra.ID, nil, 200).one(t); got.Attributes["token"] != nil {
		t.Errorf("read shows the secret: %v", got.Attributes)
	}
	m.call(alice, "DELETE", "/authentication-tokens/"+extra.ID, nil, 204)
	m.fail(extra.Attributes["token"].(string), "GET", "/account/details", nil, 401, "")
	m.call(alice, "GET", "/account/details", nil, 200)
	// The last owner of an organization cannot be deleted.
	m.org(bob, "bobco")
	m.fail(m.root, "DELETE", "/admin/users/"+bobID, nil, 409, "", "at least one member")
}

func TestMgmtTeams(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	// Create: owners and Manage teams; 403 for other members.
	m.fail(w.reader, "POST", "/organizations/acme/teams", docBody("teams", map[string]any{"name": "x"}), 403, "")
	m.fail(w.outsider, "POST", "/organizations/acme/teams", docBody("teams", map[string]any{"name": "x"}), 404, "")
	tm := m.call(w.owner, "POST", "/organizations/acme/teams", docBody("teams", map[string]any{"name": "quiet"}), 201).one(t)
	if tm.Attributes["visibility"] != "secret" || tm.attr("organization-access", "manage-projects") != false {
		t.Errorf("new team = %v", tm.Attributes)
	}
	m.fail(w.owner, "POST", "/organizations/acme/teams", docBody("teams", map[string]any{"name": "QUIET"}), 422, "/data/attributes/name", "already been taken")
	m.fail(w.owner, "POST", "/organizations/acme/teams", docBody("teams", map[string]any{"name": "x", "visibility": "public"}), 422, "/data/attributes/visibility")
	m.fail(w.owner, "POST", "/organizations/acme/teams", docBody("teams", map[string]any{"name": "x", "organization-access": map[string]any{"manage-projects": "yes"}}),
		422, "/data/attributes/organization-access/manage-projects")
	// Visibility: secret teams are seen by their members and owners.
	list := func(secret string) []string {
		var out []string
		for _, r := range m.call(secret, "GET", "/organizations/acme/teams", nil, 200).many(t) {
			out = append(out, r.Attributes["name"].(string))
		}
		return out
	}
	if got := list(w.reader); !slices.Equal(got, []string{"managers", "readers"}) {
		t.Errorf("reader sees %v", got)
	}
	if got := list(w.owner); !slices.Equal(got, []string{"owners", "managers", "readers", "quiet"}) {
		t.Errorf("owner sees %v", got)
	}
	m.fail(w.reader, "GET", "/teams/"+tm.ID, nil, 404, "")
	if got := m.call(w.owner, "GET", "/organizations/acme/teams?q=ER", nil, 200).many(t); len(got) != 3 {
		t.Errorf("q=ER = %d", len(got))
	}
	// Update and delete; the owners team keeps its name and cannot go.
	u := m.call(w.owner, "PATCH", "/teams/"+tm.ID, docBody("teams", map[string]any{"visibility": "organization",
		"organization-access": map[string]any{"access-secret-teams": true}}), 200).one(t)
	if u.Attributes["visibility"] != "organization" || u.attr("organization-access", "access-secret-teams") != true {
		t.Errorf("updated = %v", u.Attributes)
	}
	m.fail(w.reader, "PATCH", "/teams/"+tm.ID, docBody("teams", map[string]any{"name": "y"}), 403, "")
	ownersID := m.call(w.owner, "GET", "/organizations/acme", nil, 200).one(t).relID(t, "owners-team")
	m.fail(w.owner, "PATCH", "/teams/"+ownersID, docBody("teams", map[string]any{"name": "bosses"}), 422, "/data/attributes/name")
	m.fail(w.owner, "DELETE", "/teams/"+ownersID, nil, 409, "")
	// Membership, by user ID or username; unknown users are 422s.
	m.call(w.owner, "POST", "/teams/"+tm.ID+"/relationships/users", map[string]any{"data": []any{
		map[string]any{"type": "users", "id": "rita"}, map[string]any{"type": "users", "id": w.managerID}}}, 204)
	got := m.call(w.owner, "GET", "/teams/"+tm.ID+"?include=users", nil, 200)
	if got.one(t).Attributes["users-count"] != 2.0 || len(got.Included) != 2 {
		t.Errorf("members = %v %+v", got.one(t).Attributes, got.Included)
	}
	m.fail(w.owner, "POST", "/teams/"+tm.ID+"/relationships/users", map[string]any{"data": []any{map[string]any{"type": "users", "id": "nobody"}}},
		422, "/data/0/id", "does not exist")
	m.fail(w.reader, "POST", "/teams/"+tm.ID+"/relationships/users", map[string]any{"data": []any{map[string]any{"type": "users", "id": "rita"}}}, 403, "")
	m.call(w.owner, "DELETE", "/teams/"+tm.ID+"/relationships/users", map[string]any{"data": []any{map[string]any{"type": "users", "id": "rita"}}}, 204)
	if n := m.call(w.owner, "GET", "/teams/"+tm.ID, nil, 200).one(t).Attributes["users-count"]; n != 1.0 {
		t.Errorf("users-count after remove = %v", n)
	}
	// The owners team keeps its last member.
	m.fail(w.owner, "DELETE", "/teams/"+ownersID+"/relationships/users", map[string]any{"data": []any{map[string]any{"type": "users", "id": w.ownerID}}}, 409, "")
	m.call(w.owner, "DELETE", "/teams/"+tm.ID, nil, 204)
	m.fail(w.owner, "GET", "/teams/"+tm.ID, nil, 404, "")
}

func TestMgmtWorkspacesAndLocks(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	writers := m.team(w.owner, "acme", "writers", "organization", nil, w.managerID)
	m.call(w.owner, "PATCH", "/teams/"+w.managersTeam, docBody("teams", map[string]any{"organization-access": map[string]any{"manage-projects": false}}), 200)
	m.grant(w.owner, writers, w.appProject, "write", nil)

	ws := m.workspace(w.owner, "acme", "site", w.appProject, map[string]any{"description": "web", "vcs-repo": map[string]any{"identifier": "acme/site", "branch": "main"}})
	if ws.relID(t, "project") != w.appProject || ws.Attributes["locked"] != false || ws.attr("vcs-repo", "branch") != "main" ||
		ws.Links["self"] != "/api/v2/organizations/acme/workspaces/site" {
		t.Errorf("created = %+v", ws)
	}
	def := m.workspace(w.owner, "acme", "default-one", "", nil)
	if def.relID(t, "project") != w.defaultProject {
		t.Errorf("without a project: %s", def.relID(t, "project"))
	}
	for _, c := range []struct {
		attrs   map[string]any
		pointer string
	}{
		{map[string]any{"name": strings.Repeat("w", 91)}, "/data/attributes/name"},
		{map[string]any{"name": "bad name"}, "/data/attributes/name"},
		{map[string]any{"name": "SITE"}, "/data/attributes/name"},
		{map[string]any{"name": "ok", "tool-version": "9.9.9"}, "/data/attributes/tool-version"},
		{map[string]any{"name": "ok", "tool-version": "latest"}, "/data/attributes/tool-version"},
		{map[string]any{"name": "ok", "vcs-repo": map[string]any{"branch": "main"}}, "/data/attributes/vcs-repo/identifier"},
		{map[string]any{"name": "ok", "auto-destroy-activity-duration": "5m"}, "/data/attributes/auto-destroy-activity-duration"},
	} {
		m.on(t).fail(w.owner, "POST", "/organizations/acme/workspaces", docBody("workspaces", c.attrs), 422, c.pointer)
	}
	// Who may create where: the reader (read on app) may not; the
	// manager (write on app: no create) may not; an unknown project is 404.
	m.fail(w.reader, "POST", "/organizations/acme/workspaces", docBody("workspaces", map[string]any{"name": "x"}, "project", relTo("projects", w.appProject)), 403, "")
	m.fail(w.manager, "POST", "/organizations/acme/workspaces", docBody("workspaces", map[string]any{"name": "x"}, "project", relTo("projects", w.appProject)), 403, "")
	m.fail(w.owner, "POST", "/organizations/acme/workspaces", docBody("workspaces", map[string]any{"name": "x"}, "project", relTo("projects", "prj-none")), 404, "")

	// Reads: by ID and by name; invisible is 404.
	m.call(w.reader, "GET", "/organizations/acme/workspaces/SITE", nil, 200)
	m.fail(w.reader, "GET", "/workspaces/"+def.ID, nil, 404, "")
	m.fail(w.outsider, "GET", "/workspaces/"+ws.ID, nil, 404, "")
	if got := m.call(w.reader, "GET", "/organizations/acme/workspaces", nil, 200).ids(t); !slices.Equal(got, []string{ws.ID}) {
		t.Errorf("reader's workspaces = %v", got)
	}
	if got := m.call(w.owner, "GET", "/organizations/acme/workspaces?search[name]=DEF", nil, 200).ids(t); !slices.Equal(got, []string{def.ID}) {
		t.Errorf("search = %v", got)
	}
	if got := m.call(w.owner, "GET", "/organizations/acme/workspaces?filter%5Bproject%5D%5Bid%5D="+w.appProject, nil, 200).ids(t); !slices.Equal(got, []string{ws.ID}) {
		t.Errorf("filter[project][id] = %v", got)
	}
	if d := m.call(w.owner, "GET", "/organizations/acme/workspaces?page[size]=1&page[number]=2", nil, 200); !slices.Equal(d.ids(t), []string{def.ID}) || d.Links["next"] != nil {
		t.Errorf("page 2 = %v", d.ids(t))
	}
	// Update needs the admin workspace role (403 for write).
	m.fail(w.manager, "PATCH", "/workspaces/"+ws.ID, docBody("workspaces", map[string]any{"description": "x"}), 403, "")
	m.call(w.owner, "PATCH", "/workspaces/"+ws.ID, docBody("workspaces", map[string]any{"vcs-repo": nil}), 200)

	// Locks: write may lock; read may not; twice is 409; only the holder
	// unlocks, unless forced by the admin role.
	lockPath := "/workspaces/" + ws.ID + "/actions/"
	m.fail(w.reader, "POST", lockPath+"lock", nil, 403, "")
	l := m.call(w.manager, "POST", lockPath+"lock", `{"reason":"deploying"}`, 200).one(t)
	if l.Attributes["locked"] != true || l.Attributes["lock-reason"] != "deploying" {
		t.Errorf("locked = %v", l.Attributes)
	}
	m.fail(w.manager, "POST", lockPath+"lock", nil, 409, "", "already locked")
	m.fail(w.owner, "POST", lockPath+"unlock", nil, 409, "", "locked by "+w.managerID)
	m.fail(w.manager, "POST", lockPath+"force-unlock", nil, 403, "")
	m.fail(w.manager, "POST", lockPath+"lock", `{"reason": 5}`, 422, "/reason")
	m.fail(w.manager, "POST", lockPath+"lock", `{"reason":`, 400, "")
	m.call(w.owner, "POST", lockPath+"force-unlock", nil, 200)
	m.fail(w.owner, "POST", lockPath+"unlock", nil, 409, "", "not locked")
	// go-tfe sends the reason as a JSON:API attribute.
	l = m.call(w.manager, "POST", lockPath+"lock", `{"data":{"type":"","attributes":{"reason":"from go-tfe"}}}`, 200).one(t)
	if l.Attributes["lock-reason"] != "from go-tfe" {
		t.Errorf("JSON:API lock reason = %v", l.Attributes["lock-reason"])
	}
	m.call(w.manager, "POST", lockPath+"unlock", nil, 200)
	m.fail(w.manager, "POST", lockPath+"lock", `{"data":{"type":"","attributes":{"reason":1}}}`, 422, "/data/attributes/reason")

	// Delete needs delete (write has none).
	m.fail(w.manager, "DELETE", "/workspaces/"+ws.ID, nil, 403, "")
	m.call(w.owner, "DELETE", "/organizations/acme/workspaces/site", nil, 204)
	m.fail(w.owner, "GET", "/workspaces/"+ws.ID, nil, 404, "")
}

func TestMgmtRunsAndStateVersions(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	planners := m.team(w.owner, "acme", "planners", "organization", nil, w.managerID)
	m.call(w.owner, "PATCH", "/teams/"+w.managersTeam, docBody("teams", map[string]any{"organization-access": map[string]any{"manage-projects": false}}), 200)
	m.grant(w.owner, planners, w.appProject, "custom", map[string]any{"workspace-access": map[string]any{"runs": "plan", "state-versions": "read-outputs"}})
	ws := m.workspace(w.owner, "acme", "site", w.appProject, nil).ID
	queue := func(secret string) string {
		return m.call(secret, "POST", "/runs", docBody("runs", map[string]any{"message": "plan it"}, "workspace", relTo("workspaces", ws)), 201).one(t).ID
	}
	r1 := queue(w.manager)
	m.clock.Advance(time.Second)
	r2 := queue(w.owner)
	run := m.call(w.reader, "GET", "/runs/"+r2, nil, 200).one(t)
	if run.Attributes["status"] != "pending" || run.relID(t, "workspace") != ws || run.relID(t, "created-by") != w.ownerID ||
		run.attr("status-timestamps", "pending-at") == nil || run.attr("actions", "is-discardable") != true {
		t.Errorf("run = %+v", run)
	}
	// The newest run is the workspace's current run.
	if cur := m.call(w.owner, "GET", "/workspaces/"+ws, nil, 200).one(t).relID(t, "current-run"); cur != r2 {
		t.Errorf("current-run = %s, want %s", cur, r2)
	}
	if got := m.call(w.owner, "GET", "/workspaces/"+ws+"/runs", nil, 200).ids(t); !slices.Equal(got, []string{r2, r1}) {
		t.Errorf("runs = %v", got)
	}
	m.fail(w.reader, "POST", "/runs", docBody("runs", nil, "workspace", relTo("workspaces", ws)), 403, "")
	m.fail(w.outsider, "POST", "/runs", docBody("runs", nil, "workspace", relTo("workspaces", ws)), 404, "")
	m.fail(w.owner, "POST", "/runs", docBody("runs", nil), 422, "/data/relationships/workspace")
	m.fail(w.owner, "POST", "/runs", docBody("runs", map[string]any{"is-destroy": "no"}, "workspace", relTo("workspaces", ws)), 422, "/data/attributes/is-destroy")
	m.fail(w.outsider, "GET", "/runs/"+r1, nil, 404, "")

	// Spec §3 statuses through the actions: a pending run cannot be
	// applied (409); discard works; a planned run is applied (confirmed)
	// and then cancelled.
	m.fail(w.owner, "POST", "/runs/"+r1+"/actions/apply", nil, 409, "", "pending")
	m.fail(w.manager, "POST", "/runs/"+r1+"/actions/apply", nil, 403, "") // plan, not apply
	m.call(w.manager, "POST", "/runs/"+r1+"/actions/discard", nil, 202)
	if st := m.call(w.owner, "GET", "/runs/"+r1, nil, 200).one(t).Attributes["status"]; st != "discarded" {
		t.Errorf("after discard: %v", st)
	}
	m.fail(w.owner, "POST", "/runs/"+r1+"/actions/cancel", nil, 409, "")
	for _, st := range []string{mgmt.RunPlanning, mgmt.RunPlanned} {
		m.Apply(store.RunAdvanceRequestType, &store.RunAdvanceRequest{ID: r2, Status: st, Now: m.clock.Now()})
	}
	m.call(w.owner, "POST", "/runs/"+r2+"/actions/apply", `{"comment":"ship it"}`, 202)
	m.call(w.owner, "POST", "/runs/"+r2+"/actions/cancel", nil, 202)
	if r := m.call(w.owner, "GET", "/runs/"+r2, nil, 200).one(t); r.Attributes["status"] != "canceled" || r.attr("status-timestamps", "confirmed-at") == nil {
		t.Errorf("after apply and cancel: %v", r.Attributes)
	}

	// State versions need the workspace locked by their creator, and
	// write permission.
	sv := stateBody(stateFile(3, "l-1", ""), nil)
	m.fail(w.owner, "POST", "/workspaces/"+ws+"/state-versions", sv, 409, "", "must be locked")
	m.fail(w.manager, "POST", "/workspaces/"+ws+"/state-versions", sv, 403, "")
	m.fail(w.owner, "POST", "/workspaces/"+ws+"/state-versions", docBody("state-versions", map[string]any{"md5": "x"}), 422, "/data/attributes/serial")
	m.fail(w.owner, "POST", "/workspaces/"+ws+"/state-versions", docBody("state-versions", map[string]any{"serial": "3"}), 422, "/data/attributes/serial")
	m.call(w.owner, "POST", "/workspaces/"+ws+"/actions/lock", nil, 200)
	m.clock.Advance(time.Hour)
	created := m.call(w.owner, "POST", "/workspaces/"+ws+"/state-versions", sv, 201).one(t)
	if created.Attributes["serial"] != 3.0 || created.Attributes["lineage"] != "l-1" {
		t.Errorf("state version = %v", created.Attributes)
	}
	wsNow := m.call(w.owner, "GET", "/workspaces/"+ws, nil, 200).one(t)
	if wsNow.Attributes["latest-change-at"] != "2025-06-01T13:00:01.000Z" || wsNow.relID(t, "latest-state-version") != created.ID {
		t.Errorf("latest change = %v, %s", wsNow.Attributes["latest-change-at"], wsNow.relID(t, "latest-state-version"))
	}
	// Reading: read-outputs suffices; none does not.
	if got := m.call(w.manager, "GET", "/workspaces/"+ws+"/state-versions", nil, 200).ids(t); !slices.Equal(got, []string{created.ID}) {
		t.Errorf("state versions = %v", got)
	}
	m.call(w.manager, "GET", "/workspaces/"+ws+"/current-state-version", nil, 200)
	m.call(w.manager, "GET", "/state-versions/"+created.ID, nil, 200)
	m.call(w.owner, "GET", "/state-versions?filter[workspace][name]=site&filter[organization][name]=acme", nil, 200)
	m.fail(w.owner, "GET", "/state-versions?filter[workspace][name]=site", nil, 400, "filter[organization][name]")
	m.call(w.reader, "GET", "/workspaces/"+ws+"/state-versions", nil, 200) // read level: state-versions read
	def := m.workspace(w.owner, "acme", "fresh", "", nil).ID
	m.fail(w.owner, "GET", "/workspaces/"+def+"/current-state-version", nil, 404, "")
}

func TestMgmtPolicySets(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	sha := strings.Repeat("0", 64)
	m.call(m.root, "POST", "/admin/policy-versions", docBody("policy-versions", map[string]any{"version": "0.24.0", "url": "https://x.example/p.zip", "sha": sha}), 201)
	m.fail(w.reader, "POST", "/organizations/acme/policy-sets", docBody("policy-sets", map[string]any{"name": "x"}), 403, "")
	m.fail(w.owner, "POST", "/organizations/acme/policy-sets", docBody("policy-sets", map[string]any{"name": "x", "policy-tool-version": "9.9.9"}), 422,
		"/data/attributes/policy-tool-version", "does not exist")
	m.fail(w.owner, "POST", "/organizations/acme/policy-sets", docBody("policy-sets", map[string]any{"name": "x", "overridable": "yes"}), 422, "/data/attributes/overridable")
	ps := m.call(w.owner, "POST", "/organizations/acme/policy-sets", docBody("policy-sets", map[string]any{"name": "guard", "kind": "policy",
		"policy-tool-version": "0.24.0", "overridable": true}), 201).one(t)
	if ps.Attributes["policy-tool-version"] != "0.24.0" || ps.Attributes["overridable"] != true {
		t.Errorf("policy set = %v", ps.Attributes)
	}
	if got := m.call(w.reader, "GET", "/organizations/acme/policy-sets", nil, 200).ids(t); !slices.Equal(got, []string{ps.ID}) {
		t.Errorf("list = %v", got)
	}
	m.fail(w.outsider, "GET", "/policy-sets/"+ps.ID, nil, 404, "")
	m.fail(w.reader, "PATCH", "/policy-sets/"+ps.ID, docBody("policy-sets", map[string]any{"global": true}), 403, "")
	if u := m.call(w.owner, "PATCH", "/policy-sets/"+ps.ID, docBody("policy-sets", map[string]any{"global": true, "policy-tool-version": nil}), 200).one(t); u.Attributes["global"] != true || u.Attributes["policy-tool-version"] != nil {
		t.Errorf("updated = %v", u.Attributes)
	}
	m.call(w.owner, "DELETE", "/policy-sets/"+ps.ID, nil, 204)
	m.fail(w.owner, "GET", "/policy-sets/"+ps.ID, nil, 404, "")
}
