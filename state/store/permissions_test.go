package store

import (
	"errors"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// mgOrgFixture is one organization with the callers the authority tests
// need: an owner, a member of a plain team, members of teams with each
// organization-level permission, a site admin, and an outsider.
func mgOrgFixture(t *testing.T) *mgEnv {
	e := newMgEnv(t)
	for _, u := range []string{"owner", "dev", "mp", "mw", "rp", "rw", "secret", "outsider", "two"} {
		e.user("user-"+u, u, false)
	}
	e.user("user-admin", "admin", true)
	e.org("acme", "user-owner")
	e.project("prj-web", "acme", "web", "")
	e.team("team-dev", "acme", mgmt.TeamVisibilityOrganization, nil, "user-dev", "user-two")
	e.team("team-mp", "acme", mgmt.TeamVisibilitySecret, &mgmt.TeamOrganizationAccessPatch{ManageProjects: mgPtr(true)}, "user-mp")
	e.team("team-mw", "acme", mgmt.TeamVisibilitySecret, &mgmt.TeamOrganizationAccessPatch{ManageWorkspaces: mgPtr(true)}, "user-mw")
	e.team("team-rp", "acme", mgmt.TeamVisibilitySecret, &mgmt.TeamOrganizationAccessPatch{ReadProjects: mgPtr(true)}, "user-rp")
	e.team("team-rw", "acme", mgmt.TeamVisibilitySecret, &mgmt.TeamOrganizationAccessPatch{ReadWorkspaces: mgPtr(true)}, "user-rw")
	e.team("team-secret", "acme", mgmt.TeamVisibilitySecret, nil, "user-secret", "user-two")
	return e
}

func TestPermEffectiveProjectAccess(t *testing.T) {
	type want struct{ visible, update, destroy, createWS, move, manageTeams, wsAdmin bool }
	all := want{true, true, true, true, true, true, true}
	none := want{}
	tests := []struct {
		name   string
		kind   string
		id     string
		record string // access level of a record of team-dev or team-mp on prj-web
		team   string
		want   want
	}{
		{"owner", mgmt.CallerUser, "user-owner", "", "", all},
		{"owners team token", mgmt.CallerTeam, mgOwners("acme"), "", "", all},
		{"organization token", mgmt.CallerOrganization, "acme", "", "", all},
		{"organization token by external id", mgmt.CallerOrganization, "org-acme", "", "", all},
		{"site admin without membership", mgmt.CallerUser, "user-admin", "", "", all},
		{"management token", mgmt.CallerManagement, "", "", "", all},
		{"member without record", mgmt.CallerUser, "user-dev", "", "", none},
		{"member with read", mgmt.CallerUser, "user-dev", "read", "team-dev", want{visible: true}},
		{"member with write", mgmt.CallerUser, "user-dev", "write", "team-dev", want{visible: true}},
		{"member with maintain", mgmt.CallerUser, "user-dev", "maintain", "team-dev", want{visible: true, createWS: true, wsAdmin: true}},
		{"member with admin", mgmt.CallerUser, "user-dev", "admin", "team-dev", all},
		{"team token with admin", mgmt.CallerTeam, "team-dev", "admin", "team-dev", all},
		{"team token of another team", mgmt.CallerTeam, "team-secret", "admin", "team-dev", none},
		{"manage projects beats a read record", mgmt.CallerUser, "user-mp", "read", "team-mp", all},
		{"manage projects without record", mgmt.CallerUser, "user-mp", "", "", all},
		{"manage workspaces", mgmt.CallerUser, "user-mw", "", "", want{visible: true, createWS: true, wsAdmin: true}},
		{"read projects", mgmt.CallerUser, "user-rp", "", "", want{visible: true}},
		{"read workspaces", mgmt.CallerUser, "user-rw", "", "", want{visible: true}},
		{"outsider", mgmt.CallerUser, "user-outsider", "", "", none},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mgOrgFixture(t)
			if tc.record != "" {
				e.teamProject("tprj-x", tc.team, "prj-web", tc.record, mgmt.TeamProjectPermissionsPatch{})
			}
			a := e.authority(tc.kind, tc.id, "acme")
			pa := e.projectAccess(a, "prj-web")
			got := want{pa.Visible, pa.CanUpdate(), pa.CanDestroy(), pa.CanCreateWorkspace(), pa.CanMoveWorkspaces(),
				pa.CanManageTeamAccess(), pa.CanUpdateWorkspaces()}
			if got != tc.want {
				t.Errorf("access = %+v, want %+v", got, tc.want)
			}
			if got.visible != a.CanAccess() && tc.want.visible {
				t.Errorf("project visible but organization not accessible")
			}
		})
	}
}

func TestPermCustomRecordDrivesCapabilities(t *testing.T) {
	e := mgOrgFixture(t)
	e.teamProject("tprj-x", "team-dev", "prj-web", mgmt.ProjectAccessCustom, mgmt.TeamProjectPermissionsPatch{
		Settings: mgPtr(mgmt.PermUpdate), Runs: mgPtr(mgmt.PermPlan), StateVersions: mgPtr(mgmt.PermReadOutputs), Move: mgPtr(true)})
	pa := e.projectAccess(e.authority(mgmt.CallerUser, "user-dev", "acme"), "prj-web")
	checks := map[string][2]bool{
		"can-update":           {pa.CanUpdate(), true},
		"can-destroy":          {pa.CanDestroy(), false},
		"can-create-workspace": {pa.CanCreateWorkspace(), false},
		"move":                 {pa.CanMoveWorkspaces(), true},
		"queue runs":           {pa.CanQueueRuns(), true},
		"apply runs":           {pa.CanApplyRuns(), false},
		"read outputs":         {pa.CanReadStateOutputs(), true},
		"read state":           {pa.CanReadStateVersions(), false},
		"write state":          {pa.CanWriteStateVersions(), false},
		"lock":                 {pa.CanLockWorkspaces(), false},
		"delete workspaces":    {pa.CanDeleteWorkspaces(), false},
		"workspace admin":      {pa.CanUpdateWorkspaces(), false},
		"manage team access":   {pa.CanManageTeamAccess(), false},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
}

// A user on two teams gets the union of both teams' records.
func TestPermRecordsOfSeveralTeamsCombine(t *testing.T) {
	e := mgOrgFixture(t)
	e.teamProject("tprj-a", "team-dev", "prj-web", mgmt.ProjectAccessRead, mgmt.TeamProjectPermissionsPatch{})
	e.teamProject("tprj-b", "team-secret", "prj-web", mgmt.ProjectAccessCustom, mgmt.TeamProjectPermissionsPatch{Create: mgPtr(true)})
	pa := e.projectAccess(e.authority(mgmt.CallerUser, "user-two", "acme"), "prj-web")
	if !pa.CanCreateWorkspace() || pa.Permissions.Workspace.Variables != mgmt.PermRead || pa.CanUpdate() {
		t.Errorf("union of read and custom{create} = %+v", pa.Permissions)
	}
	// user-dev is only on team-dev: read alone.
	if pa := e.projectAccess(e.authority(mgmt.CallerUser, "user-dev", "acme"), "prj-web"); pa.CanCreateWorkspace() {
		t.Error("a record of a team the caller is not on counted")
	}
}

func TestPermDisabledOrganization(t *testing.T) {
	e := mgOrgFixture(t)
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme",
		Patch: mgmt.OrganizationAdminPatch{IsDisabled: mgPtr(true)}})
	for _, c := range []struct{ kind, id string }{
		{mgmt.CallerUser, "user-owner"}, {mgmt.CallerUser, "user-mp"}, {mgmt.CallerOrganization, "acme"}, {mgmt.CallerTeam, mgOwners("acme")},
	} {
		a := e.authority(c.kind, c.id, "acme")
		if a.CanAccess() || a.Owner || a.CanCreateProject() || e.projectAccess(a, "prj-web").Visible {
			t.Errorf("%s %s keeps access to a disabled organization", c.kind, c.id)
		}
	}
	if a := e.authority(mgmt.CallerUser, "user-admin", "acme"); !a.CanAccess() || !e.projectAccess(a, "prj-web").CanDestroy() {
		t.Error("a site administrator lost access to a disabled organization")
	}
}

func TestPermOrganizationLevelDecisions(t *testing.T) {
	e := mgOrgFixture(t)
	tests := []struct {
		kind, id                          string
		access, createProject, manageTeam bool
		updateOrg                         bool
	}{
		{mgmt.CallerUser, "user-owner", true, true, true, true},
		{mgmt.CallerOrganization, "acme", true, true, true, true},
		{mgmt.CallerUser, "user-mp", true, true, false, false},
		{mgmt.CallerUser, "user-mw", true, false, false, false},
		{mgmt.CallerUser, "user-dev", true, false, false, false},
		{mgmt.CallerTeam, "team-dev", true, false, false, false},
		{mgmt.CallerUser, "user-outsider", false, false, false, false},
		{mgmt.CallerUser, "user-admin", true, true, true, true},
	}
	for _, tc := range tests {
		a := e.authority(tc.kind, tc.id, "acme")
		got := [4]bool{a.CanAccess(), a.CanCreateProject(), a.CanManageTeams(), a.CanUpdateOrganization()}
		if want := [4]bool{tc.access, tc.createProject, tc.manageTeam, tc.updateOrg}; got != want {
			t.Errorf("%s %s: access/create-project/manage-teams/update-org = %v, want %v", tc.kind, tc.id, got, want)
		}
	}
	if a := e.authority(mgmt.CallerUser, "user-owner", "nope"); a.CanAccess() {
		t.Error("an unknown organization is accessible")
	}
	if a := e.authority(mgmt.CallerOrganization, "acme", "other"); a.CanAccess() {
		t.Error("an organization token reaches another organization")
	}
	for _, c := range []struct {
		caller      mgmt.Caller
		admin, orgs bool
	}{
		{mgmt.Caller{Kind: mgmt.CallerUser, UserID: "user-dev"}, false, true},
		{mgmt.Caller{Kind: mgmt.CallerUser, UserID: "user-admin", IsSiteAdmin: true}, true, true},
		{mgmt.Caller{Kind: mgmt.CallerManagement, IsSiteAdmin: true}, true, true},
		{mgmt.Caller{Kind: mgmt.CallerTeam, TeamID: "team-dev"}, false, false},
		{mgmt.Caller{Kind: mgmt.CallerOrganization, OrganizationName: "acme"}, false, false},
	} {
		if mgmt.CanUseAdminAPI(c.caller) != c.admin || mgmt.CanCreateOrganization(c.caller) != c.orgs {
			t.Errorf("%+v: admin API %v, create org %v", c.caller, mgmt.CanUseAdminAPI(c.caller), mgmt.CanCreateOrganization(c.caller))
		}
	}
	if _, err := e.s.CallerForSubject(nil, mgmt.CallerUser, "user-ghost"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("unknown user subject: %v, want ErrNotFound", err)
	}
	if _, err := e.s.CallerForSubject(nil, "robot", "x"); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("unknown subject kind: %v, want ErrInvalid", err)
	}
}

// Spec §5.3: who sees which team and team-project.
func TestPermTeamVisibility(t *testing.T) {
	e := mgOrgFixture(t)
	e.team("team-peek", "acme", mgmt.TeamVisibilitySecret, &mgmt.TeamOrganizationAccessPatch{AccessSecretTeams: mgPtr(true)})
	e.user("user-peek", "peek", false)
	e.apply(TeamMembersAddRequestType, &TeamMembersAddRequest{TeamID: "team-peek", UserIDs: []string{"user-peek"}})
	e.teamProject("tprj-admin", "team-rw", "prj-web", mgmt.ProjectAccessAdmin, mgmt.TeamProjectPermissionsPatch{})
	secret := stMust[*mgmt.Team](t)(e.s.TeamByID(nil, "team-secret"))
	open := stMust[*mgmt.Team](t)(e.s.TeamByID(nil, "team-dev"))
	tests := []struct {
		user                 string
		seesSecret, seesOpen bool
		seesSecretRecord     bool
	}{
		{"user-owner", true, true, true},
		{"user-secret", true, true, true}, // member of the secret team
		{"user-dev", false, true, false},  // plain member
		{"user-peek", true, true, true},   // may see secret teams
		{"user-rw", false, true, true},    // project admin through its record
		{"user-outsider", false, false, false},
	}
	for _, tc := range tests {
		a := e.authority(mgmt.CallerUser, tc.user, "acme")
		pa := e.projectAccess(a, "prj-web")
		if got := a.CanSeeTeam(secret); got != tc.seesSecret {
			t.Errorf("%s sees the secret team: %v, want %v", tc.user, got, tc.seesSecret)
		}
		if got := a.CanSeeTeam(open); got != tc.seesOpen {
			t.Errorf("%s sees the organization-visible team: %v, want %v", tc.user, got, tc.seesOpen)
		}
		if got := a.CanViewTeamProject(secret, pa); got != tc.seesSecretRecord {
			t.Errorf("%s sees the secret team's project access: %v, want %v", tc.user, got, tc.seesSecretRecord)
		}
	}
	if a := e.authority(mgmt.CallerUser, "user-rw", "acme"); !a.CanModifyTeamAccess(e.projectAccess(a, "prj-web")) {
		t.Error("a project admin may not modify team access")
	}
	if a := e.authority(mgmt.CallerUser, "user-dev", "acme"); a.CanModifyTeamAccess(e.projectAccess(a, "prj-web")) {
		t.Error("a plain member may modify team access")
	}
}

func TestPermCheckWorkspaceMove(t *testing.T) {
	admin, _ := mgmt.ImpliedPermissions(mgmt.ProjectAccessAdmin)
	maintain, _ := mgmt.ImpliedPermissions(mgmt.ProjectAccessMaintain)
	mover := mgmt.ProjectAccess{Visible: true, Permissions: admin}
	stuck := mgmt.ProjectAccess{Visible: true, Permissions: maintain}
	tests := []struct {
		name     string
		dst      mgmt.ProjectAccess
		sources  []mgmt.ProjectAccess
		allFound bool
		want     error
	}{
		{"allowed", mover, []mgmt.ProjectAccess{mover, mover}, true, nil},
		{"destination invisible", mgmt.ProjectAccess{}, []mgmt.ProjectAccess{mover}, true, state.ErrNotFound},
		{"destination without move", stuck, []mgmt.ProjectAccess{mover}, true, state.ErrNotFound},
		{"a workspace missing", mover, []mgmt.ProjectAccess{mover}, false, mgmt.ErrForbidden},
		{"a source without move", mover, []mgmt.ProjectAccess{mover, stuck}, true, mgmt.ErrForbidden},
		{"destination checked first", stuck, []mgmt.ProjectAccess{stuck}, false, state.ErrNotFound},
	}
	for _, tc := range tests {
		err := mgmt.CheckWorkspaceMove(tc.dst, tc.sources, tc.allFound)
		if (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
