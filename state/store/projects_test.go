package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

func TestProjectNameRules(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"web", true},
		{"My Project_1-a", true},
		{strings.Repeat("a", 40), true},
		{"ab", false},
		{strings.Repeat("a", 41), false},
		{" web", false},
		{"web ", false},
		{"web!", false},
		{"wéb", false},
		{"", false},
		{"   ", false},
	}
	for _, tc := range tests {
		if got := mgmt.ValidProjectName(tc.name) == ""; got != tc.ok {
			t.Errorf("ValidProjectName(%q) ok = %v, want %v (%s)", tc.name, got, tc.ok, mgmt.ValidProjectName(tc.name))
		}
	}
}

func TestAutoDestroyDurationRules(t *testing.T) {
	for d, ok := range map[string]bool{
		"1d": true, "14d": true, "9999h": true, "12h": true, "1000d": true,
		"0d": false, "0h": false, "12345h": false, "5m": false, "01d": false, "d": false, "": false,
		"1.5d": false, "-1d": false, "1D": false, " 1d": false, "10000d": false, "1dd": false,
	} {
		if got := mgmt.ValidAutoDestroyDuration(d) == ""; got != ok {
			t.Errorf("ValidAutoDestroyDuration(%q) ok = %v, want %v", d, got, ok)
		}
	}
}

func TestProjectCreateUpdateDelete(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.org("beta", "")
	p := e.apply(ProjectCreateRequestType, &ProjectCreateRequest{ID: "prj-web", OrganizationName: "acme", CreatedAt: e.now(),
		Attributes: mgmt.ProjectPatch{Name: mgPtr("Web"), Description: mgPtr("the web tier"), AutoDestroyActivityDuration: mgPtr("14d"),
			TagBindings: &[]mgmt.TagBinding{{Key: "env", Value: "prod"}}, DefaultExecutionMode: mgPtr(mgmt.ExecutionModeLocal)}}).(*mgmt.Project)
	if p.Name != "Web" || p.Description != "the web tier" || p.AutoDestroyActivityDuration != "14d" || len(p.TagBindings) != 1 ||
		p.EffectiveExecutionMode() != mgmt.ExecutionModeLocal || !p.SettingOverwrites().ExecutionMode || p.SettingOverwrites().AgentPool {
		t.Errorf("created = %+v", p)
	}
	// Names are unique per organization, case-insensitively; other
	// organizations may reuse them.
	dup := &ProjectCreateRequest{ID: "prj-web2", OrganizationName: "acme", Attributes: mgmt.ProjectPatch{Name: mgPtr("WEB")}}
	e.failField(ProjectCreateRequestType, dup, "/data/attributes/name")
	e.project("prj-web3", "beta", "web", "")

	bad := []struct {
		patch mgmt.ProjectPatch
		field string
	}{
		{mgmt.ProjectPatch{}, "/data/attributes/name"},
		{mgmt.ProjectPatch{Name: mgPtr("ab")}, "/data/attributes/name"},
		{mgmt.ProjectPatch{Name: mgPtr(strings.Repeat("x", 41))}, "/data/attributes/name"},
		{mgmt.ProjectPatch{Name: mgPtr(" lead")}, "/data/attributes/name"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), Description: mgPtr(strings.Repeat("d", 257))}, "/data/attributes/description"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), AutoDestroyActivityDuration: mgPtr("0d")}, "/data/attributes/auto-destroy-activity-duration"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), AutoDestroyActivityDuration: mgPtr("12345h")}, "/data/attributes/auto-destroy-activity-duration"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), AutoDestroyActivityDuration: mgPtr("5m")}, "/data/attributes/auto-destroy-activity-duration"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), DefaultExecutionMode: mgPtr("cloud")}, "/data/attributes/default-execution-mode"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), DefaultExecutionMode: mgPtr(mgmt.ExecutionModeAgent)}, "/data/attributes/default-agent-pool-id"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), SettingOverwrites: &mgmt.ProjectSettingOverwritesPatch{ExecutionMode: mgPtr(true)}},
			"/data/attributes/setting-overwrites/execution-mode"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), DefaultExecutionMode: mgPtr("local"), SettingOverwrites: &mgmt.ProjectSettingOverwritesPatch{ExecutionMode: mgPtr(false)}},
			"/data/attributes/setting-overwrites/execution-mode"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), TagBindings: &[]mgmt.TagBinding{{Key: ""}}}, "/data/relationships/tag-bindings/data/0/attributes/key"},
		{mgmt.ProjectPatch{Name: mgPtr("okay"), TagBindings: &[]mgmt.TagBinding{{Key: "a"}, {Key: "a"}}}, "/data/relationships/tag-bindings/data/1/attributes/key"},
	}
	for _, b := range bad {
		e.failField(ProjectCreateRequestType, &ProjectCreateRequest{ID: "prj-new", OrganizationName: "acme", Attributes: b.patch}, b.field)
	}
	e.fail(ProjectCreateRequestType, &ProjectCreateRequest{ID: "prj-new", OrganizationName: "nope", Attributes: mgmt.ProjectPatch{Name: mgPtr("okay")}}, state.ErrNotFound)
	e.failField(ProjectCreateRequestType, &ProjectCreateRequest{ID: "new", OrganizationName: "acme", Attributes: mgmt.ProjectPatch{Name: mgPtr("okay")}}, "ID")
	e.fail(ProjectCreateRequestType, &ProjectCreateRequest{ID: "prj-web", OrganizationName: "acme", Attributes: mgmt.ProjectPatch{Name: mgPtr("okay")}}, state.ErrConflict)

	// Update: absent attributes keep their value; a new case of the same
	// name is no clash with itself.
	upd := e.apply(ProjectUpdateRequestType, &ProjectUpdateRequest{ID: "prj-web", Attributes: mgmt.ProjectPatch{Name: mgPtr("WEB")}}).(*mgmt.Project)
	if upd.Name != "WEB" || upd.Description != "the web tier" || upd.AutoDestroyActivityDuration != "14d" || upd.CreateIndex != p.CreateIndex {
		t.Errorf("update = %+v", upd)
	}
	upd = e.apply(ProjectUpdateRequestType, &ProjectUpdateRequest{ID: "prj-web", Attributes: mgmt.ProjectPatch{Description: mgPtr(""),
		SettingOverwrites: &mgmt.ProjectSettingOverwritesPatch{ExecutionMode: mgPtr(false)}, TagBindings: &[]mgmt.TagBinding{}}}).(*mgmt.Project)
	if upd.Description != "" || upd.DefaultExecutionMode != "" || upd.EffectiveExecutionMode() != mgmt.ExecutionModeRemote || len(upd.TagBindings) != 0 {
		t.Errorf("update clearing = %+v", upd)
	}
	e.project("prj-api", "acme", "api", "")
	e.failField(ProjectUpdateRequestType, &ProjectUpdateRequest{ID: "prj-web", Attributes: mgmt.ProjectPatch{Name: mgPtr("Api")}}, "/data/attributes/name")
	e.failField(ProjectUpdateRequestType, &ProjectUpdateRequest{ID: "prj-web", Attributes: mgmt.ProjectPatch{AutoDestroyActivityDuration: mgPtr("5m")}},
		"/data/attributes/auto-destroy-activity-duration")
	e.fail(ProjectUpdateRequestType, &ProjectUpdateRequest{ID: "prj-nope"}, state.ErrNotFound)

	// Delete: refused while workspaces remain, and for the default
	// project; it takes the project's team access with it.
	e.workspace("ws-a", "acme", "prj-web", "a")
	e.fail(ProjectDeleteRequestType, &ProjectDeleteRequest{ID: "prj-web"}, state.ErrConflict)
	e.fail(ProjectDeleteRequestType, &ProjectDeleteRequest{ID: mgDefault("acme")}, state.ErrConflict)
	e.apply(WorkspaceDeleteRequestType, &WorkspaceDeleteRequest{ID: "ws-a"})
	e.team("team-dev", "acme", mgmt.TeamVisibilitySecret, nil)
	e.teamProject("tprj-1", "team-dev", "prj-web", mgmt.ProjectAccessWrite, mgmt.TeamProjectPermissionsPatch{})
	e.apply(ProjectDeleteRequestType, &ProjectDeleteRequest{ID: "prj-web"})
	if stMust[*mgmt.Project](t)(e.s.ProjectByID(nil, "prj-web")) != nil || stMust[*mgmt.TeamProject](t)(e.s.TeamProjectByID(nil, "tprj-1")) != nil {
		t.Error("project or its team access survived the delete")
	}
	e.fail(ProjectDeleteRequestType, &ProjectDeleteRequest{ID: "prj-web"}, state.ErrNotFound)
}

// Spec §2: workspaces created later inherit the project's duration; on
// update every workspace receives it unless it has its own override.
func TestProjectAutoDestroyInheritance(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.project("prj-a", "acme", "alpha", "14d")
	e.project("prj-b", "acme", "beta", "2h")
	inherit := e.workspace("ws-inherit", "acme", "prj-a", "inherit")
	if inherit.AutoDestroyActivityDuration != "14d" || !inherit.InheritsProjectAutoDestroy {
		t.Fatalf("new workspace = %q inherits %v", inherit.AutoDestroyActivityDuration, inherit.InheritsProjectAutoDestroy)
	}
	own := e.apply(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-own", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("own"), ProjectID: mgPtr("prj-a"), AutoDestroyActivityDuration: mgPtr("3d")}}).(*mgmt.Workspace)
	if own.AutoDestroyActivityDuration != "3d" || own.InheritsProjectAutoDestroy {
		t.Fatalf("override workspace = %+v", own)
	}
	off := e.apply(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-off", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("off"), ProjectID: mgPtr("prj-a"), InheritsProjectAutoDestroy: mgPtr(false)}}).(*mgmt.Workspace)
	if off.AutoDestroyActivityDuration != "" || off.InheritsProjectAutoDestroy {
		t.Fatalf("opted-out workspace = %+v", off)
	}
	durations := func() map[string]string {
		out := map[string]string{}
		for _, w := range stMust[[]*mgmt.Workspace](t)(e.s.WorkspacesByOrganization(nil, "acme")) {
			out[w.ID] = w.AutoDestroyActivityDuration
		}
		return out
	}
	e.apply(ProjectUpdateRequestType, &ProjectUpdateRequest{ID: "prj-a", Now: e.now(), Attributes: mgmt.ProjectPatch{AutoDestroyActivityDuration: mgPtr("30d")}})
	if d := durations(); d["ws-inherit"] != "30d" || d["ws-own"] != "3d" || d["ws-off"] != "" {
		t.Errorf("after project update: %v", d)
	}
	e.apply(ProjectUpdateRequestType, &ProjectUpdateRequest{ID: "prj-a", Attributes: mgmt.ProjectPatch{AutoDestroyActivityDuration: mgPtr("")}})
	if d := durations(); d["ws-inherit"] != "" || d["ws-own"] != "3d" {
		t.Errorf("after clearing: %v", d)
	}
	// Moving takes the destination's duration when inheriting.
	e.apply(WorkspacesMoveRequestType, &WorkspacesMoveRequest{ProjectID: "prj-b", WorkspaceIDs: []string{"ws-inherit", "ws-own"}})
	if d := durations(); d["ws-inherit"] != "2h" || d["ws-own"] != "3d" {
		t.Errorf("after move: %v", d)
	}
	// Back to inheriting; then an override; then null removes it.
	w := e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-own", Attributes: mgmt.WorkspacePatch{InheritsProjectAutoDestroy: mgPtr(true)}}).(*mgmt.Workspace)
	if w.AutoDestroyActivityDuration != "2h" || !w.InheritsProjectAutoDestroy {
		t.Errorf("re-inherit = %+v", w)
	}
	w = e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-own", Attributes: mgmt.WorkspacePatch{
		ProjectID: mgPtr("prj-a"), AutoDestroyActivityDuration: mgPtr("7d")}}).(*mgmt.Workspace)
	if w.AutoDestroyActivityDuration != "7d" || w.InheritsProjectAutoDestroy || w.ProjectID != "prj-a" {
		t.Errorf("override with move = %+v", w)
	}
	w = e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-own", Attributes: mgmt.WorkspacePatch{AutoDestroyActivityDuration: mgPtr("")}}).(*mgmt.Workspace)
	if w.AutoDestroyActivityDuration != "" || w.InheritsProjectAutoDestroy {
		t.Errorf("null override = %+v", w)
	}
	e.failField(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-own", Attributes: mgmt.WorkspacePatch{
		AutoDestroyActivityDuration: mgPtr("1d"), InheritsProjectAutoDestroy: mgPtr(true)}}, "/data/attributes/inherits-project-auto-destroy")
}

// Spec §3/§7: move all listed workspaces or none.
func TestProjectMoveWorkspacesAllOrNone(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.org("beta", "")
	e.project("prj-a", "acme", "alpha", "")
	e.project("prj-b", "acme", "bravo", "")
	e.workspace("ws-1", "acme", "prj-a", "one")
	e.workspace("ws-2", "acme", "prj-a", "two")
	e.workspace("ws-x", "beta", "", "other")
	e.fail(WorkspacesMoveRequestType, &WorkspacesMoveRequest{ProjectID: "prj-b", WorkspaceIDs: []string{"ws-1", "ws-ghost"}}, state.ErrNotFound)
	e.fail(WorkspacesMoveRequestType, &WorkspacesMoveRequest{ProjectID: "prj-b", WorkspaceIDs: []string{"ws-1", "ws-x"}}, state.ErrNotFound)
	e.fail(WorkspacesMoveRequestType, &WorkspacesMoveRequest{ProjectID: "prj-nope", WorkspaceIDs: []string{"ws-1"}}, state.ErrNotFound)
	e.apply(WorkspacesMoveRequestType, &WorkspacesMoveRequest{ProjectID: "prj-b", WorkspaceIDs: []string{"ws-1", "ws-2", "ws-1"}})
	ws := stMust[[]*mgmt.Workspace](t)(e.s.WorkspacesByProject(nil, "prj-b"))
	if len(ws) != 2 {
		t.Errorf("prj-b holds %d workspaces, want 2", len(ws))
	}
	if n, _, err := e.s.ProjectCounts(nil, "prj-a"); err != nil || n != 0 {
		t.Errorf("prj-a still counts %d workspaces (%v)", n, err)
	}
}

// Spec §5.5/§7 through the store: 404 for the destination, 403 for the
// sources, with nothing decided by the order of the checks.
func TestProjectAuthorizeWorkspaceMove(t *testing.T) {
	e := mgOrgFixture(t)
	e.project("prj-dst", "acme", "dest", "")
	e.project("prj-src", "acme", "source", "")
	e.workspace("ws-1", "acme", "prj-src", "one")
	e.workspace("ws-2", "acme", "prj-web", "two")
	e.org("other", "")
	e.workspace("ws-o", "other", "", "theirs")
	e.teamProject("tprj-dst", "team-dev", "prj-dst", mgmt.ProjectAccessAdmin, mgmt.TeamProjectPermissionsPatch{})
	e.teamProject("tprj-src", "team-dev", "prj-src", mgmt.ProjectAccessCustom, mgmt.TeamProjectPermissionsPatch{Move: mgPtr(true)})
	e.teamProject("tprj-web", "team-dev", "prj-web", mgmt.ProjectAccessMaintain, mgmt.TeamProjectPermissionsPatch{})
	dev := e.authority(mgmt.CallerUser, "user-dev", "acme")
	owner := e.authority(mgmt.CallerUser, "user-owner", "acme")
	tests := []struct {
		name string
		a    *mgmt.OrgAuthority
		dst  string
		ids  []string
		want error
	}{
		{"allowed", dev, "prj-dst", []string{"ws-1"}, nil},
		{"owner moves anything", owner, "prj-dst", []string{"ws-1", "ws-2"}, nil},
		{"unknown destination", dev, "prj-nope", []string{"ws-1"}, state.ErrNotFound},
		{"no move into destination", dev, "prj-web", []string{"ws-1"}, state.ErrNotFound},
		{"invisible destination", e.authority(mgmt.CallerUser, "user-secret", "acme"), "prj-dst", []string{"ws-1"}, state.ErrNotFound},
		{"unknown workspace", dev, "prj-dst", []string{"ws-1", "ws-ghost"}, mgmt.ErrForbidden},
		{"workspace of another organization", dev, "prj-dst", []string{"ws-o"}, mgmt.ErrForbidden},
		{"source without move", dev, "prj-dst", []string{"ws-1", "ws-2"}, mgmt.ErrForbidden},
	}
	for _, tc := range tests {
		err := e.s.AuthorizeWorkspaceMove(nil, tc.a, tc.dst, tc.ids)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestTeamProjectRecords(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.org("beta", "")
	e.project("prj-web", "acme", "web", "")
	e.team("team-dev", "acme", mgmt.TeamVisibilitySecret, nil)
	e.team("team-b", "beta", mgmt.TeamVisibilitySecret, nil)
	r := e.teamProject("tprj-1", "team-dev", "prj-web", mgmt.ProjectAccessAdmin, mgmt.TeamProjectPermissionsPatch{})
	if implied, _ := mgmt.ImpliedPermissions(mgmt.ProjectAccessAdmin); r.Permissions != implied || r.OrganizationName != "acme" {
		t.Errorf("admin record = %+v", r)
	}
	if got := stMust[*mgmt.TeamProject](t)(e.s.TeamProjectFor(nil, "team-dev", "prj-web")); got == nil || got.ID != "tprj-1" {
		t.Errorf("by team and project = %v", got)
	}
	// One record per team and project.
	e.fail(TeamProjectCreateRequestType, &TeamProjectCreateRequest{ID: "tprj-2", TeamID: "team-dev", ProjectID: "prj-web", Access: "read"}, state.ErrConflict)
	e.fail(TeamProjectCreateRequestType, &TeamProjectCreateRequest{ID: "tprj-2", TeamID: "team-b", ProjectID: "prj-web", Access: "read"}, state.ErrNotFound)
	e.fail(TeamProjectCreateRequestType, &TeamProjectCreateRequest{ID: "tprj-2", TeamID: "team-ghost", ProjectID: "prj-web", Access: "read"}, state.ErrNotFound)
	e.fail(TeamProjectCreateRequestType, &TeamProjectCreateRequest{ID: "tprj-2", TeamID: "team-dev", ProjectID: "prj-ghost", Access: "read"}, state.ErrNotFound)
	e.failField(TeamProjectCreateRequestType, &TeamProjectCreateRequest{ID: "tprj-2", TeamID: "team-dev", ProjectID: "prj-web", Access: "plan"},
		"/data/attributes/access")
	e.failField(TeamProjectCreateRequestType, &TeamProjectCreateRequest{ID: "tprj-2", TeamID: "team-dev", ProjectID: "prj-web", Access: "write",
		Permissions: mgmt.TeamProjectPermissionsPatch{Move: mgPtr(true)}}, "/data/attributes/workspace-access/move")

	upd := e.apply(TeamProjectUpdateRequestType, &TeamProjectUpdateRequest{ID: "tprj-1", Access: mgPtr(mgmt.ProjectAccessCustom),
		Permissions: mgmt.TeamProjectPermissionsPatch{Runs: mgPtr(mgmt.PermApply), Create: mgPtr(true)}}).(*mgmt.TeamProject)
	if upd.Access != mgmt.ProjectAccessCustom || upd.Permissions.Workspace.Runs != mgmt.PermApply || !upd.Permissions.Workspace.Create ||
		upd.Permissions.Project.Settings != mgmt.PermRead || upd.CreateIndex != r.CreateIndex {
		t.Errorf("update to custom = %+v", upd)
	}
	// Access omitted keeps custom; the earlier choices stay.
	upd = e.apply(TeamProjectUpdateRequestType, &TeamProjectUpdateRequest{ID: "tprj-1",
		Permissions: mgmt.TeamProjectPermissionsPatch{Delete: mgPtr(true)}}).(*mgmt.TeamProject)
	if !upd.Permissions.Workspace.Create || !upd.Permissions.Workspace.Delete {
		t.Errorf("custom update lost earlier permissions: %+v", upd.Permissions.Workspace)
	}
	e.failField(TeamProjectUpdateRequestType, &TeamProjectUpdateRequest{ID: "tprj-1", Access: mgPtr(mgmt.ProjectAccessRead),
		Permissions: mgmt.TeamProjectPermissionsPatch{Delete: mgPtr(true)}}, "/data/attributes/workspace-access/delete")
	e.fail(TeamProjectUpdateRequestType, &TeamProjectUpdateRequest{ID: "tprj-ghost", Access: mgPtr("read")}, state.ErrNotFound)
	e.apply(TeamProjectDeleteRequestType, &TeamProjectDeleteRequest{ID: "tprj-1"})
	e.fail(TeamProjectDeleteRequestType, &TeamProjectDeleteRequest{ID: "tprj-1"}, state.ErrNotFound)
	// After removal the team may be added again.
	e.teamProject("tprj-3", "team-dev", "prj-web", mgmt.ProjectAccessRead, mgmt.TeamProjectPermissionsPatch{})
}

func TestProjectAndWorkspaceAuthority(t *testing.T) {
	e := mgOrgFixture(t)
	e.workspace("ws-1", "acme", "prj-web", "one")
	e.teamProject("tprj-1", "team-dev", "prj-web", mgmt.ProjectAccessWrite, mgmt.TeamProjectPermissionsPatch{})
	dev := mgmt.Caller{Kind: mgmt.CallerUser, UserID: "user-dev"}
	p, a, pa, err := e.s.ProjectAuthority(nil, dev, "prj-web")
	if err != nil || p == nil || !a.CanAccess() || !pa.Visible || pa.CanUpdate() || !pa.CanLockWorkspaces() {
		t.Errorf("dev on prj-web: %v %v %+v %v", p, a, pa, err)
	}
	w, _, wa, err := e.s.WorkspaceAuthority(nil, dev, "ws-1")
	if err != nil || w == nil || wa != pa {
		t.Errorf("dev on ws-1: %v %+v %v", w, wa, err)
	}
	if _, _, pa, _ := e.s.ProjectAuthority(nil, mgmt.Caller{Kind: mgmt.CallerUser, UserID: "user-outsider"}, "prj-web"); pa.Visible {
		t.Error("an outsider sees the project")
	}
	if p, _, _, err := e.s.ProjectAuthority(nil, dev, "prj-ghost"); p != nil || err != nil {
		t.Errorf("unknown project: %v %v", p, err)
	}
	if w, _, _, err := e.s.WorkspaceAuthority(nil, dev, "ws-ghost"); w != nil || err != nil {
		t.Errorf("unknown workspace: %v %v", w, err)
	}
}
