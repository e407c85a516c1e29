package mgmt

import (
	"slices"
	"strings"
	"testing"
)

// specImplied is spec §2's implied-permission table, column by column (the
// last column is the custom defaults), written out here from the spec so
// the HTTP answers are checked against the document, not the code.
var specImplied = map[string]map[string]any{
	"read": {
		"project-access/settings": "read", "project-access/teams": "none", "workspace-access/runs": "read",
		"workspace-access/gate-mocks": "none", "workspace-access/state-versions": "read", "workspace-access/variables": "read",
		"workspace-access/create": false, "workspace-access/locking": false, "workspace-access/delete": false,
		"workspace-access/move": false, "workspace-access/run-tasks": false,
	},
	"write": {
		"project-access/settings": "read", "project-access/teams": "none", "workspace-access/runs": "apply",
		"workspace-access/gate-mocks": "read", "workspace-access/state-versions": "write", "workspace-access/variables": "write",
		"workspace-access/create": false, "workspace-access/locking": true, "workspace-access/delete": false,
		"workspace-access/move": false, "workspace-access/run-tasks": false,
	},
	"maintain": {
		"project-access/settings": "read", "project-access/teams": "none", "workspace-access/runs": "apply",
		"workspace-access/gate-mocks": "read", "workspace-access/state-versions": "write", "workspace-access/variables": "write",
		"workspace-access/create": true, "workspace-access/locking": true, "workspace-access/delete": true,
		"workspace-access/move": false, "workspace-access/run-tasks": true,
	},
	"admin": {
		"project-access/settings": "delete", "project-access/teams": "manage", "workspace-access/runs": "apply",
		"workspace-access/gate-mocks": "read", "workspace-access/state-versions": "write", "workspace-access/variables": "write",
		"workspace-access/create": true, "workspace-access/locking": true, "workspace-access/delete": true,
		"workspace-access/move": true, "workspace-access/run-tasks": true,
	},
	"custom": {
		"project-access/settings": "read", "project-access/teams": "none", "workspace-access/runs": "read",
		"workspace-access/gate-mocks": "none", "workspace-access/state-versions": "none", "workspace-access/variables": "none",
		"workspace-access/create": false, "workspace-access/locking": false, "workspace-access/delete": false,
		"workspace-access/move": false, "workspace-access/run-tasks": false,
	},
}

func checkCells(t *testing.T, level string, r testRes, want map[string]any) {
	t.Helper()
	for cell, v := range want {
		group, perm, _ := cutCell(cell)
		if got := r.attr(group, perm); got != v {
			t.Errorf("%s: %s = %v, want %v", level, cell, got, v)
		}
	}
}

func cutCell(s string) (string, string, bool) { return strings.Cut(s, "/") }

// Every cell of spec §2's table, through the API: the record of each level
// shows its implied permissions, and a custom record without attributes
// shows the custom defaults.
func TestMgmtTeamProjectImpliedPermissions(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	for _, level := range []string{"read", "write", "maintain", "admin", "custom"} {
		team := m.team(w.owner, "acme", "t-"+level, "organization", nil)
		id := m.grant(w.owner, team, w.appProject, level, nil)
		r := m.call(w.owner, "GET", "/team-projects/"+id, nil, 200).one(t)
		if r.Attributes["access"] != level || r.relID(t, "team") != team || r.relID(t, "project") != w.appProject {
			t.Errorf("%s record = %+v", level, r)
		}
		checkCells(t, level, r, specImplied[level])
	}
	// Custom: what is sent is kept, the rest takes the defaults; an
	// update of a custom record keeps what it does not name.
	team := m.team(w.owner, "acme", "t-custom2", "organization", nil)
	id := m.grant(w.owner, team, w.appProject, "custom", map[string]any{
		"project-access":   map[string]any{"settings": "update", "teams": "read", "variable-sets": "write"},
		"workspace-access": map[string]any{"runs": "plan", "state-versions": "read-outputs", "move": true, "gate-mocks": "read"}})
	want := map[string]any{}
	for k, v := range specImplied["custom"] {
		want[k] = v
	}
	want["project-access/settings"], want["project-access/teams"], want["project-access/variable-sets"] = "update", "read", "write"
	want["workspace-access/runs"], want["workspace-access/state-versions"], want["workspace-access/move"] = "plan", "read-outputs", true
	want["workspace-access/gate-mocks"] = "read"
	checkCells(t, "custom", m.call(w.owner, "GET", "/team-projects/"+id, nil, 200).one(t), want)
	upd := m.call(w.owner, "PATCH", "/team-projects/"+id, docBody("team-projects", map[string]any{
		"workspace-access": map[string]any{"locking": true}}), 200).one(t)
	want["workspace-access/locking"] = true
	checkCells(t, "custom update", upd, want)
	// Moving to a named level shows its implied permissions again.
	upd = m.call(w.owner, "PATCH", "/team-projects/"+id, docBody("team-projects", map[string]any{"access": "write"}), 200).one(t)
	checkCells(t, "write after custom", upd, specImplied["write"])
}

func TestMgmtTeamProjectRules(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	devs := m.team(w.owner, "acme", "devs", "organization", nil)
	ops := m.team(w.owner, "acme", "ops", "secret", nil, w.managerID)
	devsRec := m.grant(w.owner, devs, w.appProject, "write", nil)
	opsRec := m.grant(w.owner, ops, w.appProject, "maintain", nil)
	listPath := "/team-projects?filter%5Bproject%5D%5Bid%5D=" + w.appProject
	teamsOf := func(d *testDoc) []string {
		var out []string
		for _, r := range d.many(t) {
			out = append(out, r.relID(t, "team"))
		}
		slices.Sort(out)
		return out
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }

	// List: the filter is required; a member sees its own and
	// organization-visible teams' records, owners see every one.
	m.fail(w.owner, "GET", "/team-projects", nil, 400, "filter[project][id]")
	m.fail(w.owner, "GET", "/team-projects?filter[project][id]=prj-none", nil, 404, "")
	m.fail(w.outsider, "GET", listPath, nil, 404, "")
	if got := teamsOf(m.call(w.reader, "GET", listPath, nil, 200)); !slices.Equal(got, sorted(w.readersTeam, devs)) {
		t.Errorf("reader sees %v", got)
	}
	all := sorted(w.readersTeam, devs, ops)
	if got := teamsOf(m.call(w.owner, "GET", listPath, nil, 200)); !slices.Equal(got, all) {
		t.Errorf("owner sees %v", got)
	}
	d := m.call(w.owner, "GET", listPath+"&page[size]=2", nil, 200)
	if len(d.many(t)) != 2 || d.Links["next"] == nil {
		t.Errorf("paginated list = %s %v", d.Data, d.Links)
	}
	// The manager (Manage projects: admin on every project) sees the
	// secret team's record too.
	if got := teamsOf(m.call(w.manager, "GET", listPath, nil, 200)); !slices.Equal(got, all) {
		t.Errorf("manager sees %v", got)
	}
	// Show follows the same visibility.
	m.fail(w.reader, "GET", "/team-projects/"+opsRec, nil, 404, "")
	m.call(w.reader, "GET", "/team-projects/"+devsRec, nil, 200)
	m.fail(w.owner, "GET", "/team-projects/tprj-none", nil, 404, "")

	// Add: 404 for a caller who may not, an unknown project or team, or a
	// team of another organization.
	qa := m.team(w.owner, "acme", "qa", "organization", nil)
	add := func(access string, attrs map[string]any, project, team string) map[string]any {
		a := map[string]any{"access": access}
		for k, v := range attrs {
			a[k] = v
		}
		return docBody("team-projects", a, "project", relTo("projects", project), "team", relTo("teams", team))
	}
	m.fail(w.reader, "POST", "/team-projects", add("read", nil, w.appProject, qa), 404, "")
	m.fail(w.outsider, "POST", "/team-projects", add("read", nil, w.appProject, qa), 404, "")
	m.fail(w.owner, "POST", "/team-projects", add("read", nil, "prj-none", qa), 404, "")
	m.fail(w.owner, "POST", "/team-projects", add("read", nil, w.appProject, "team-none"), 404, "")
	other := m.org(w.owner, "other")
	otherTeam := m.team(w.owner, other.ID, "foreign", "organization", nil)
	m.fail(w.owner, "POST", "/team-projects", add("read", nil, w.appProject, otherTeam), 404, "")
	// Malformed bodies: 422, a wrong type included (spec §7).
	m.fail(w.owner, "POST", "/team-projects", add("read", map[string]any{"project-access": map[string]any{"settings": "delete"}}, w.appProject, qa),
		422, "/data/attributes/project-access/settings", "only when access is custom")
	m.fail(w.owner, "POST", "/team-projects", add("plan", nil, w.appProject, qa), 422, "/data/attributes/access")
	m.fail(w.owner, "POST", "/team-projects", add("custom", map[string]any{"workspace-access": map[string]any{"runs": "destroy"}}, w.appProject, qa),
		422, "/data/attributes/workspace-access/runs")
	m.fail(w.owner, "POST", "/team-projects", add("custom", map[string]any{"workspace-access": map[string]any{"create": "yes"}}, w.appProject, qa),
		422, "/data/attributes/workspace-access/create", "must be a boolean")
	m.fail(w.owner, "POST", "/team-projects", docBody("team-projects", map[string]any{"access": "read"}, "team", relTo("teams", qa)), 422, "/data/relationships/project")
	m.fail(w.owner, "POST", "/team-projects", docBody("team-projects", map[string]any{"access": "read"}, "project", relTo("projects", w.appProject), "team", relTo("users", qa)),
		422, "/data/relationships/team/data/type")
	m.fail(w.owner, "POST", "/team-projects", docBody("team-projects", nil, "project", relTo("projects", w.appProject), "team", relTo("teams", qa)), 422, "/data/attributes/access")
	m.fail(w.owner, "POST", "/team-projects", docBody("teams", map[string]any{"access": "read"}), 422, "/data/type")
	// One record per team and project.
	m.fail(w.owner, "POST", "/team-projects", add("admin", nil, w.appProject, devs), 409, "", "already has access")
	// A project admin who is no owner manages team access.
	admins := m.team(w.owner, "acme", "project-admins", "organization", nil, w.readerID)
	m.grant(w.owner, admins, w.appProject, "admin", nil)
	qaRec := m.grant(w.reader, qa, w.appProject, "read", nil)
	if got := teamsOf(m.call(w.reader, "GET", listPath, nil, 200)); len(got) != 5 {
		t.Errorf("project admin sees %v", got)
	}

	// Update and remove: 404 for callers who may not.
	rita := w.reader
	m.fail(w.outsider, "PATCH", "/team-projects/"+qaRec, docBody("team-projects", map[string]any{"access": "write"}), 404, "")
	m.fail(w.owner, "PATCH", "/team-projects/"+qaRec, docBody("team-projects", map[string]any{"access": "bogus"}), 422, "/data/attributes/access")
	m.fail(w.owner, "PATCH", "/team-projects/"+qaRec, docBody("projects", map[string]any{"access": "write"}), 422, "/data/type")
	m.fail(w.owner, "PATCH", "/team-projects/"+qaRec, map[string]any{"data": map[string]any{"type": "team-projects", "id": devsRec}}, 422, "/data/id")
	m.fail(w.owner, "PATCH", "/team-projects/"+qaRec, docBody("team-projects", map[string]any{"workspace-access": map[string]any{"move": true}}), 422,
		"/data/attributes/workspace-access/move", "only when access is custom")
	m.call(rita, "PATCH", "/team-projects/"+qaRec, docBody("team-projects", map[string]any{"access": "maintain"}), 200)
	m.call(w.owner, "DELETE", "/team-projects/"+admins+"x", nil, 404)
	adminsRec := ""
	for _, r := range m.call(w.owner, "GET", listPath, nil, 200).many(t) {
		if r.relID(t, "team") == admins {
			adminsRec = r.ID
		}
	}
	m.call(w.owner, "DELETE", "/team-projects/"+adminsRec, nil, 204)
	// No longer a project admin: the reader may no longer remove records.
	m.fail(rita, "DELETE", "/team-projects/"+qaRec, nil, 404, "")
	m.call(w.manager, "DELETE", "/team-projects/"+qaRec, nil, 204)
	m.fail(w.owner, "GET", "/team-projects/"+qaRec, nil, 404, "")
	if p := m.call(w.owner, "GET", "/projects/"+w.appProject, nil, 200).one(t); p.Attributes["team-count"] != 3.0 {
		t.Errorf("team-count = %v", p.Attributes["team-count"])
	}
}

// Spec §2 rule 2: organization-level permissions combine with the record;
// Manage projects means admin on every project whatever the record says.
func TestMgmtEffectiveProjectAccess(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	perms := func(secret, project string) map[string]any {
		return m.call(secret, "GET", "/projects/"+project, nil, 200).one(t).Attributes["permissions"].(map[string]any)
	}
	if p := perms(w.reader, w.appProject); p["can-update"] != false || p["can-destroy"] != false || p["can-create-workspace"] != false {
		t.Errorf("read record = %v", p)
	}
	// The reader's team also gets Manage projects: admin on app.
	m.call(w.owner, "PATCH", "/teams/"+w.readersTeam, docBody("teams", map[string]any{"organization-access": map[string]any{"manage-projects": true}}), 200)
	if p := perms(w.reader, w.appProject); p["can-update"] != true || p["can-destroy"] != true || p["can-create-workspace"] != true || p["can-manage-teams"] != true {
		t.Errorf("read record + Manage projects = %v", p)
	}
	// Manage workspaces: the maintain level everywhere (create, not move).
	m.team(w.owner, "acme", "ws-managers", "organization", map[string]any{"manage-workspaces": true}, w.managerID)
	m.call(w.owner, "PATCH", "/teams/"+w.managersTeam, docBody("teams", map[string]any{"organization-access": map[string]any{"manage-projects": false}}), 200)
	if p := perms(w.manager, w.defaultProject); p["can-create-workspace"] != true || p["can-update"] != false || p["can-move-workspace"] != false {
		t.Errorf("Manage workspaces = %v", p)
	}
	// Owners are admins of every project.
	if p := perms(w.owner, w.defaultProject); p["can-destroy"] != true || p["can-move-workspace"] != true {
		t.Errorf("owner = %v", p)
	}
}
