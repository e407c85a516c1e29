package store

import (
	"slices"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

func TestOrgCreateMakesOwnersTeamAndDefaultProject(t *testing.T) {
	e := newMgEnv(t)
	e.user("user-ann", "ann", false)
	created := e.now()
	org := e.org("acme", "user-ann")
	if org.ExternalID != "org-acme" || org.Email != "admin@acme.example" || org.CreateIndex != e.idx {
		t.Errorf("organization = %+v", org)
	}
	if org.ApplyTimeout != mgmt.DefaultApplyTimeout || org.PlanTimeout != mgmt.DefaultPlanTimeout || org.WorkspaceLimit != nil {
		t.Errorf("defaults = %q %q %v, want 24h 2h nil", org.ApplyTimeout, org.PlanTimeout, org.WorkspaceLimit)
	}
	if !org.CreatedAt.Equal(created.Truncate(time.Millisecond)) {
		t.Errorf("CreatedAt = %v, want %v truncated to ms", org.CreatedAt, created)
	}
	owners := stMust[*mgmt.Team](t)(e.s.TeamByID(nil, org.OwnersTeamID))
	if owners == nil || !owners.IsOwners || owners.Name != mgmt.OwnersTeamName || owners.OrganizationName != "acme" {
		t.Fatalf("owners team = %+v", owners)
	}
	def := stMust[*mgmt.Project](t)(e.s.ProjectByID(nil, org.DefaultProjectID))
	if def == nil || !def.IsDefault || def.Name != mgmt.DefaultProjectName {
		t.Fatalf("default project = %+v", def)
	}
	members := stMust[[]*mgmt.User](t)(e.s.OrganizationOwners(nil, "acme"))
	if len(members) != 1 || members[0].ID != "user-ann" {
		t.Errorf("owners = %v, want ann", members)
	}
	if got := stMust[*mgmt.Organization](t)(e.s.OrganizationByExternalID(nil, "org-acme")); got == nil || got.Name != "acme" {
		t.Errorf("by external ID = %v", got)
	}
	if got := stMust[[]*mgmt.Team](t)(e.s.UserTeams(nil, "user-ann")); len(got) != 1 || got[0].ID != owners.ID {
		t.Errorf("ann's teams = %v", got)
	}
}

func TestOrgCreateRejects(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	req := func(name, ext, email, owner string) *OrganizationCreateRequest {
		return &OrganizationCreateRequest{Organization: &mgmt.Organization{Name: name, ExternalID: ext, Email: email},
			OwnersTeamID: "team-o2", DefaultProjectID: "prj-d2", OwnerUserID: owner}
	}
	e.failField(OrganizationCreateRequestType, req("ACME", "org-2", "a@b.c", ""), "/data/attributes/name")
	e.failField(OrganizationCreateRequestType, req("bad name", "org-2", "a@b.c", ""), "/data/attributes/name")
	e.failField(OrganizationCreateRequestType, req("", "org-2", "a@b.c", ""), "/data/attributes/name")
	e.failField(OrganizationCreateRequestType, req("beta", "org-2", "not-mail", ""), "/data/attributes/email")
	e.failField(OrganizationCreateRequestType, req("beta", "acme", "a@b.c", ""), "ExternalID")
	e.fail(OrganizationCreateRequestType, req("beta", "org-2", "a@b.c", "user-ghost"), state.ErrNotFound)
	e.fail(OrganizationCreateRequestType, &OrganizationCreateRequest{
		Organization: &mgmt.Organization{Name: "beta", ExternalID: "org-2", Email: "a@b.c"},
		OwnersTeamID: mgOwners("acme"), DefaultProjectID: "prj-d2"}, state.ErrConflict)
	e.fail(OrganizationCreateRequestType, &OrganizationCreateRequest{}, state.ErrInvalid)
}

func TestOrgUpdateEmail(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	got := e.apply(OrganizationUpdateRequestType, &OrganizationUpdateRequest{Name: "acme", Email: mgPtr("ops@acme.example")}).(*mgmt.Organization)
	if got.Email != "ops@acme.example" || got.ModifyIndex != e.idx {
		t.Errorf("updated = %+v", got)
	}
	e.failField(OrganizationUpdateRequestType, &OrganizationUpdateRequest{Name: "acme", Email: mgPtr("x")}, "/data/attributes/email")
	e.fail(OrganizationUpdateRequestType, &OrganizationUpdateRequest{Name: "nope"}, state.ErrNotFound)
}

func TestOrgAdminUpdateEveryAttribute(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	got := e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme", Patch: mgmt.OrganizationAdminPatch{
		AccessBetaTools: mgPtr(true), GlobalModuleSharing: mgPtr(true), GlobalProviderSharing: mgPtr(true),
		IsDisabled: mgPtr(true), ToolWorkerSudoEnabled: mgPtr(true), ApplyTimeout: mgPtr("1h30m"), PlanTimeout: mgPtr("45m"),
		SetWorkspaceLimit: true, WorkspaceLimit: mgPtr(5),
	}}).(*mgmt.Organization)
	if !got.AccessBetaTools || !got.GlobalModuleSharing || !got.GlobalProviderSharing || !got.IsDisabled ||
		!got.ToolWorkerSudoEnabled || got.ApplyTimeout != "1h30m" || got.PlanTimeout != "45m" || *got.WorkspaceLimit != 5 {
		t.Errorf("after full update: %+v", got)
	}
	// An empty patch changes nothing but the index.
	same := e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme"}).(*mgmt.Organization)
	if same.ApplyTimeout != "1h30m" || !same.IsDisabled || *same.WorkspaceLimit != 5 {
		t.Errorf("empty patch changed %+v", same)
	}
	// Null timeouts restore the defaults; null limit removes it.
	reset := e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme", Patch: mgmt.OrganizationAdminPatch{
		ApplyTimeout: mgPtr(""), PlanTimeout: mgPtr(""), SetWorkspaceLimit: true}}).(*mgmt.Organization)
	if reset.ApplyTimeout != "24h" || reset.PlanTimeout != "2h" || reset.WorkspaceLimit != nil {
		t.Errorf("after nulls: %q %q %v", reset.ApplyTimeout, reset.PlanTimeout, reset.WorkspaceLimit)
	}
	// The deprecated aliases set the same values.
	alias := e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme", Patch: mgmt.OrganizationAdminPatch{
		BuildWorkerApplyTimeout: mgPtr("3h"), BuildWorkerPlanTimeout: mgPtr("30m")}}).(*mgmt.Organization)
	if alias.ApplyTimeout != "3h" || alias.PlanTimeout != "30m" {
		t.Errorf("aliases set %q %q", alias.ApplyTimeout, alias.PlanTimeout)
	}
	both := e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme", Patch: mgmt.OrganizationAdminPatch{
		ApplyTimeout: mgPtr("4h"), BuildWorkerApplyTimeout: mgPtr("4h")}}).(*mgmt.Organization)
	if both.ApplyTimeout != "4h" {
		t.Errorf("alias equal to its replacement: %q", both.ApplyTimeout)
	}
	bad := []struct {
		patch mgmt.OrganizationAdminPatch
		field string
	}{
		{mgmt.OrganizationAdminPatch{ApplyTimeout: mgPtr("24")}, "/data/attributes/apply-timeout"},
		{mgmt.OrganizationAdminPatch{PlanTimeout: mgPtr("-2h")}, "/data/attributes/plan-timeout"},
		{mgmt.OrganizationAdminPatch{BuildWorkerApplyTimeout: mgPtr("soon")}, "/data/attributes/tool-build-worker-apply-timeout"},
		{mgmt.OrganizationAdminPatch{BuildWorkerPlanTimeout: mgPtr("0s")}, "/data/attributes/tool-build-worker-plan-timeout"},
		{mgmt.OrganizationAdminPatch{ApplyTimeout: mgPtr("1h"), BuildWorkerApplyTimeout: mgPtr("2h")}, "/data/attributes/tool-build-worker-apply-timeout"},
		{mgmt.OrganizationAdminPatch{PlanTimeout: mgPtr("1h"), BuildWorkerPlanTimeout: mgPtr("2h")}, "/data/attributes/tool-build-worker-plan-timeout"},
		{mgmt.OrganizationAdminPatch{SetWorkspaceLimit: true, WorkspaceLimit: mgPtr(-1)}, "/data/attributes/workspace-limit"},
	}
	for _, b := range bad {
		e.failField(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme", Patch: b.patch}, b.field)
	}
	e.fail(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "nope"}, state.ErrNotFound)
}

// Spec §3: global sharing disables configured consumers; replacing module
// consumers turns global module sharing off.
func TestOrgConsumersAndGlobalSharing(t *testing.T) {
	e := newMgEnv(t)
	for _, n := range []string{"acme", "beta", "gamma"} {
		e.org(n, "")
	}
	got := e.apply(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{
		Name: "acme", Kind: ConsumerKindModule, Consumers: []string{"gamma", "beta", "gamma"}}).(*mgmt.Organization)
	if !slices.Equal(got.ModuleConsumers, []string{"beta", "gamma"}) || !got.ModuleProducer() || got.ProviderProducer() {
		t.Errorf("consumers = %v", got.ModuleConsumers)
	}
	page := stMust[*OrganizationList](t)(e.s.OrganizationConsumers(nil, "acme", ConsumerKindModule, Page{}))
	if page.Matching != 2 || len(page.Items) != 2 || page.Items[0].Name != "beta" {
		t.Errorf("consumer list = %+v", page)
	}
	got = e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme",
		Patch: mgmt.OrganizationAdminPatch{GlobalModuleSharing: mgPtr(true)}}).(*mgmt.Organization)
	if got.ModuleConsumers != nil || !got.ModuleProducer() {
		t.Errorf("global sharing kept consumers %v", got.ModuleConsumers)
	}
	if page := stMust[*OrganizationList](t)(e.s.OrganizationConsumers(nil, "acme", ConsumerKindModule, Page{})); page.Matching != 0 {
		t.Errorf("consumer list under global sharing = %+v", page.Items)
	}
	got = e.apply(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{
		Name: "acme", Kind: ConsumerKindModule, Consumers: []string{"beta"}}).(*mgmt.Organization)
	if got.GlobalModuleSharing || !slices.Equal(got.ModuleConsumers, []string{"beta"}) {
		t.Errorf("replace did not turn global sharing off: %+v", got)
	}
	// Providers are independent of modules.
	got = e.apply(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{
		Name: "acme", Kind: ConsumerKindProvider, Consumers: []string{"gamma"}}).(*mgmt.Organization)
	got = e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme",
		Patch: mgmt.OrganizationAdminPatch{GlobalProviderSharing: mgPtr(true)}}).(*mgmt.Organization)
	if got.ProviderConsumers != nil || !slices.Equal(got.ModuleConsumers, []string{"beta"}) {
		t.Errorf("provider sharing: providers %v modules %v", got.ProviderConsumers, got.ModuleConsumers)
	}
	e.failField(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{
		Name: "acme", Kind: ConsumerKindModule, Consumers: []string{"beta", "ghost"}}, "/data/1/id")
	e.failField(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{
		Name: "acme", Kind: ConsumerKindModule, Consumers: []string{"acme"}}, "/data/0/id")
	e.failField(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{Name: "acme", Kind: "widgets"}, "Kind")
	e.fail(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{Name: "nope", Kind: ConsumerKindModule}, state.ErrNotFound)
	if _, err := e.s.OrganizationConsumers(nil, "nope", ConsumerKindModule, Page{}); err == nil {
		t.Error("consumers of an unknown organization listed")
	}
}

// Spec §3: workspace-limit lower than the count blocks new workspaces only;
// 0 means no effect.
func TestOrgWorkspaceLimit(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.workspace("ws-a", "acme", "", "a")
	e.workspace("ws-b", "acme", "", "b")
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme",
		Patch: mgmt.OrganizationAdminPatch{SetWorkspaceLimit: true, WorkspaceLimit: mgPtr(1)}})
	e.fail(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-c", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("c")}}, state.ErrConflict)
	// Existing workspaces are unaffected: they can still change.
	e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-a", Attributes: mgmt.WorkspacePatch{Description: mgPtr("still here")}})
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme",
		Patch: mgmt.OrganizationAdminPatch{SetWorkspaceLimit: true, WorkspaceLimit: mgPtr(0)}})
	e.workspace("ws-c", "acme", "", "c")
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme",
		Patch: mgmt.OrganizationAdminPatch{SetWorkspaceLimit: true, WorkspaceLimit: mgPtr(4)}})
	e.workspace("ws-d", "acme", "", "d")
	e.fail(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-e", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("e")}}, state.ErrConflict)
}

func TestOrgDeleteRemovesEverythingInIt(t *testing.T) {
	e := newMgEnv(t)
	e.user("user-ann", "ann", false)
	e.org("acme", "user-ann")
	e.org("beta", "user-ann")
	e.team("team-dev", "acme", mgmt.TeamVisibilityOrganization, nil, "user-ann")
	e.project("prj-web", "acme", "web", "")
	e.teamProject("tprj-1", "team-dev", "prj-web", mgmt.ProjectAccessAdmin, mgmt.TeamProjectPermissionsPatch{})
	e.workspace("ws-a", "acme", "prj-web", "a")
	e.apply(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: "run-1", WorkspaceID: "ws-a", CreatedAt: e.now()}})
	e.apply(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-a", LockedBy: "user-ann"})
	e.apply(StateVersionCreateRequestType, &StateVersionCreateRequest{StateVersion: &mgmt.StateVersion{ID: "sv-1", WorkspaceID: "ws-a", CreatedAt: e.now()}})
	e.apply(PolicySetCreateRequestType, &PolicySetCreateRequest{ID: "polset-1", OrganizationName: "acme", Attributes: mgmt.PolicySetPatch{Name: mgPtr("base")}})
	e.apply(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{Name: "beta", Kind: ConsumerKindModule, Consumers: []string{"acme"}})
	e.workspace("ws-keep", "beta", "", "keep")

	e.apply(OrganizationDeleteRequestType, &OrganizationDeleteRequest{Name: "acme"})
	dump := stDump(t, e.s)
	for _, table := range []string{TableRuns, TableStateVersions, TablePolicySets, TableTeamProjects} {
		if len(dump[table]) != 0 {
			t.Errorf("table %s keeps %d rows of the deleted organization", table, len(dump[table]))
		}
	}
	for _, row := range append(append(dump[TableTeams], dump[TableProjects]...), dump[TableWorkspaces]...) {
		var org string
		switch r := row.(type) {
		case *mgmt.Team:
			org = r.OrganizationName
		case *mgmt.Project:
			org = r.OrganizationName
		case *mgmt.Workspace:
			org = r.OrganizationName
		}
		if org == "acme" {
			t.Errorf("row %+v of the deleted organization kept", row)
		}
	}
	if ms := stMust[[]*mgmt.Team](t)(e.s.UserTeams(nil, "user-ann")); len(ms) != 1 || ms[0].OrganizationName != "beta" {
		t.Errorf("ann's teams after delete = %v", ms)
	}
	beta := stMust[*mgmt.Organization](t)(e.s.OrganizationByName(nil, "beta"))
	if len(beta.ModuleConsumers) != 0 {
		t.Errorf("beta still lists the deleted consumer: %v", beta.ModuleConsumers)
	}
	if u := stMust[*mgmt.User](t)(e.s.UserByID(nil, "user-ann")); u == nil {
		t.Error("the organization's users were deleted")
	}
	e.fail(OrganizationDeleteRequestType, &OrganizationDeleteRequest{Name: "acme"}, state.ErrNotFound)
}

func TestUsersAndTeams(t *testing.T) {
	e := newMgEnv(t)
	ann := e.user("user-ann", "ann", false)
	e.user("user-bob", "bob", false)
	e.failField(UserUpsertRequestType, &UserUpsertRequest{User: &mgmt.User{ID: "user-x", Username: "ANN", Email: "x@y.z"}}, "/data/attributes/username")
	e.failField(UserUpsertRequestType, &UserUpsertRequest{User: &mgmt.User{ID: "user-x", Username: "a b", Email: "x@y.z"}}, "/data/attributes/username")
	e.failField(UserUpsertRequestType, &UserUpsertRequest{User: &mgmt.User{ID: "bad", Username: "x", Email: "x@y.z"}}, "ID")
	upd := e.apply(UserUpsertRequestType, &UserUpsertRequest{User: &mgmt.User{ID: "user-ann", Username: "Ann", Email: "ann@x.io", IsAdmin: true}}).(*mgmt.User)
	if upd.CreateIndex != ann.CreateIndex || !upd.CreatedAt.Equal(ann.CreatedAt) || !upd.IsAdmin || upd.Username != "Ann" {
		t.Errorf("user update = %+v (was %+v)", upd, ann)
	}
	if u := stMust[*mgmt.User](t)(e.s.UserByUsername(nil, "ANN")); u == nil || u.ID != "user-ann" {
		t.Errorf("by username = %v", u)
	}

	e.org("acme", "user-ann")
	owners := mgOwners("acme")
	// The owners team keeps its name, its access, its existence and a member.
	e.failField(TeamUpdateRequestType, &TeamUpdateRequest{ID: owners, Attributes: mgmt.TeamPatch{Name: mgPtr("bosses")}}, "/data/attributes/name")
	e.failField(TeamUpdateRequestType, &TeamUpdateRequest{ID: owners, Attributes: mgmt.TeamPatch{
		Access: &mgmt.TeamOrganizationAccessPatch{ManageProjects: mgPtr(true)}}}, "/data/attributes/organization-access")
	e.fail(TeamDeleteRequestType, &TeamDeleteRequest{ID: owners}, state.ErrConflict)
	e.fail(TeamMembersRemoveRequestType, &TeamMembersRemoveRequest{TeamID: owners, UserIDs: []string{"user-ann"}}, state.ErrConflict)
	e.fail(UserDeleteRequestType, &UserDeleteRequest{ID: "user-ann"}, state.ErrConflict)
	e.apply(TeamUpdateRequestType, &TeamUpdateRequest{ID: owners, Attributes: mgmt.TeamPatch{Visibility: mgPtr(mgmt.TeamVisibilityOrganization)}})

	team := e.team("team-dev", "acme", mgmt.TeamVisibilitySecret, &mgmt.TeamOrganizationAccessPatch{ManageWorkspaces: mgPtr(true)}, "user-bob")
	if team.Visibility != mgmt.TeamVisibilitySecret || !team.Access.ManageWorkspaces || team.Access.ManageProjects {
		t.Errorf("team = %+v", team)
	}
	e.failField(TeamCreateRequestType, &TeamCreateRequest{ID: "team-x", OrganizationName: "acme",
		Attributes: mgmt.TeamPatch{Name: mgPtr("DEV")}}, "/data/attributes/name")
	e.failField(TeamCreateRequestType, &TeamCreateRequest{ID: "team-x", OrganizationName: "acme",
		Attributes: mgmt.TeamPatch{Name: mgPtr("Owners")}}, "/data/attributes/name")
	e.failField(TeamCreateRequestType, &TeamCreateRequest{ID: "team-x", OrganizationName: "acme",
		Attributes: mgmt.TeamPatch{Name: mgPtr("x"), Visibility: mgPtr("public")}}, "/data/attributes/visibility")
	e.failField(TeamCreateRequestType, &TeamCreateRequest{ID: "team-x", OrganizationName: "acme"}, "/data/attributes/name")
	e.fail(TeamCreateRequestType, &TeamCreateRequest{ID: "team-x", OrganizationName: "nope", Attributes: mgmt.TeamPatch{Name: mgPtr("x")}}, state.ErrNotFound)
	upd2 := e.apply(TeamUpdateRequestType, &TeamUpdateRequest{ID: "team-dev", Attributes: mgmt.TeamPatch{Name: mgPtr("developers"),
		Access: &mgmt.TeamOrganizationAccessPatch{ManageProjects: mgPtr(true)}}}).(*mgmt.Team)
	if upd2.Name != "developers" || !upd2.Access.ManageProjects || !upd2.Access.ManageWorkspaces {
		t.Errorf("team update = %+v", upd2)
	}
	if got := stMust[*mgmt.Team](t)(e.s.TeamByName(nil, "acme", "DEVELOPERS")); got == nil || got.ID != "team-dev" {
		t.Errorf("team by name = %v", got)
	}
	e.fail(TeamMembersAddRequestType, &TeamMembersAddRequest{TeamID: "team-dev", UserIDs: []string{"user-ann", "user-ghost"}}, state.ErrNotFound)
	e.apply(TeamMembersAddRequestType, &TeamMembersAddRequest{TeamID: "team-dev", UserIDs: []string{"user-ann", "user-bob"}})
	if ids := stMust[[]string](t)(e.s.TeamMemberIDs(nil, "team-dev")); !slices.Equal(ids, []string{"user-ann", "user-bob"}) {
		t.Errorf("members = %v", ids)
	}
	e.apply(TeamMembersRemoveRequestType, &TeamMembersRemoveRequest{TeamID: "team-dev", UserIDs: []string{"user-bob", "user-ghost"}})
	if ids := stMust[[]string](t)(e.s.TeamMemberIDs(nil, "team-dev")); !slices.Equal(ids, []string{"user-ann"}) {
		t.Errorf("members after remove = %v", ids)
	}
	// A second owner lets the first go.
	e.apply(TeamMembersAddRequestType, &TeamMembersAddRequest{TeamID: owners, UserIDs: []string{"user-bob"}})
	e.apply(UserDeleteRequestType, &UserDeleteRequest{ID: "user-ann"})
	if ids := stMust[[]string](t)(e.s.TeamMemberIDs(nil, "team-dev")); len(ids) != 0 {
		t.Errorf("deleted user still a member: %v", ids)
	}
	e.project("prj-web", "acme", "web", "")
	e.teamProject("tprj-1", "team-dev", "prj-web", mgmt.ProjectAccessRead, mgmt.TeamProjectPermissionsPatch{})
	e.apply(TeamDeleteRequestType, &TeamDeleteRequest{ID: "team-dev"})
	if r := stMust[*mgmt.TeamProject](t)(e.s.TeamProjectByID(nil, "tprj-1")); r != nil {
		t.Error("a deleted team keeps its project access")
	}
	e.fail(TeamDeleteRequestType, &TeamDeleteRequest{ID: "team-dev"}, state.ErrNotFound)
	e.fail(UserDeleteRequestType, &UserDeleteRequest{ID: "user-ann"}, state.ErrNotFound)
}
