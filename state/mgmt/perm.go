package mgmt

import (
	"slices"

	"github.com/schedhq/sched/state"
)

// This file is the management API's permission engine (spec §2 and §5):
// the implied permissions of each project access level, the custom
// defaults, how a team-project record combines with organization-level
// permissions, and who may do what. Everything here is pure: callers load
// the records (state/store, management_reads.go) and ask.

// Values of the team-project permission attributes, lowest first. Their
// order is what "more access" means when two grants combine.
const (
	PermNone        = "none"
	PermRead        = "read"
	PermUpdate      = "update"
	PermDelete      = "delete"
	PermManage      = "manage"
	PermWrite       = "write"
	PermPlan        = "plan"
	PermApply       = "apply"
	PermReadOutputs = "read-outputs"
)

// ProjectPermissions is the `project-access` part of a team-project.
type ProjectPermissions struct {
	// Settings is read, update or delete.
	Settings string
	// Teams is none, read or manage: manage lets the team change who has
	// access to the project.
	Teams string
	// VariableSets is none, read or write (go-tfe `variable-sets`).
	VariableSets string
}

// WorkspacePermissions is the `workspace-access` part of a team-project: what
// the team may do in every workspace of the project.
type WorkspacePermissions struct {
	// Runs is read, plan or apply.
	Runs string
	// Variables is none, read or write.
	Variables string
	// StateVersions is none, read-outputs, read or write.
	StateVersions string
	// GateMocks is none or read (the spec's neutral name for go-tfe's
	// sentinel-mocks).
	GateMocks string
	Create    bool
	Move      bool
	Locking   bool
	Delete    bool
	RunTasks  bool
}

// TeamProjectPermissions is every permission a team-project grants.
type TeamProjectPermissions struct {
	Project   ProjectPermissions
	Workspace WorkspacePermissions
}

// permScales orders the values of each string permission, lowest first.
var (
	scaleSettings      = []string{PermRead, PermUpdate, PermDelete}
	scaleTeams         = []string{PermNone, PermRead, PermManage}
	scaleVariableSets  = []string{PermNone, PermRead, PermWrite}
	scaleRuns          = []string{PermRead, PermPlan, PermApply}
	scaleVariables     = []string{PermNone, PermRead, PermWrite}
	scaleStateVersions = []string{PermNone, PermReadOutputs, PermRead, PermWrite}
	scaleGateMocks     = []string{PermNone, PermRead}
)

// higher returns whichever of a and b ranks higher on scale. "" (no grant)
// ranks below every value.
func higher(scale []string, a, b string) string {
	if slices.Index(scale, b) > slices.Index(scale, a) {
		return b
	}
	return a
}

// atLeast reports whether v ranks at or above min on scale.
func atLeast(scale []string, v, min string) bool {
	i := slices.Index(scale, v)
	return i >= 0 && i >= slices.Index(scale, min)
}

// Union returns the permissions granted by p or by o: the higher value of
// each attribute, and each flag granted by either. A team on several
// teams' records, or with organization-level permissions on top, gets
// the union.
func (p TeamProjectPermissions) Union(o TeamProjectPermissions) TeamProjectPermissions {
	return TeamProjectPermissions{
		Project: ProjectPermissions{
			Settings:     higher(scaleSettings, p.Project.Settings, o.Project.Settings),
			Teams:        higher(scaleTeams, p.Project.Teams, o.Project.Teams),
			VariableSets: higher(scaleVariableSets, p.Project.VariableSets, o.Project.VariableSets),
		},
		Workspace: WorkspacePermissions{
			Runs:          higher(scaleRuns, p.Workspace.Runs, o.Workspace.Runs),
			Variables:     higher(scaleVariables, p.Workspace.Variables, o.Workspace.Variables),
			StateVersions: higher(scaleStateVersions, p.Workspace.StateVersions, o.Workspace.StateVersions),
			GateMocks:     higher(scaleGateMocks, p.Workspace.GateMocks, o.Workspace.GateMocks),
			Create:        p.Workspace.Create || o.Workspace.Create,
			Move:          p.Workspace.Move || o.Workspace.Move,
			Locking:       p.Workspace.Locking || o.Workspace.Locking,
			Delete:        p.Workspace.Delete || o.Workspace.Delete,
			RunTasks:      p.Workspace.RunTasks || o.Workspace.RunTasks,
		},
	}
}

// ProjectAccessLevels lists the levels create and update accept, lowest
// first (spec §2 rule 4: `plan` is not one of them).
func ProjectAccessLevels() []string {
	return []string{ProjectAccessRead, ProjectAccessWrite, ProjectAccessMaintain, ProjectAccessAdmin, ProjectAccessCustom}
}

// ImpliedPermissions returns the permissions an access level implies (the
// spec §2 table), and false for custom or an unknown level: a custom
// record's permissions are chosen, starting from CustomDefaultPermissions.
//
// project-access.variable-sets is not in the spec's table (it comes from
// go-tfe); we imply write for admin, as only project admins manage a
// project's variable sets in TFE, and none for the other levels.
func ImpliedPermissions(level string) (TeamProjectPermissions, bool) {
	switch level {
	case ProjectAccessRead:
		return TeamProjectPermissions{
			Project:   ProjectPermissions{Settings: PermRead, Teams: PermNone, VariableSets: PermNone},
			Workspace: WorkspacePermissions{Runs: PermRead, GateMocks: PermNone, StateVersions: PermRead, Variables: PermRead},
		}, true
	case ProjectAccessWrite:
		return TeamProjectPermissions{
			Project: ProjectPermissions{Settings: PermRead, Teams: PermNone, VariableSets: PermNone},
			Workspace: WorkspacePermissions{Runs: PermApply, GateMocks: PermRead, StateVersions: PermWrite, Variables: PermWrite,
				Locking: true},
		}, true
	case ProjectAccessMaintain:
		return TeamProjectPermissions{
			Project: ProjectPermissions{Settings: PermRead, Teams: PermNone, VariableSets: PermNone},
			Workspace: WorkspacePermissions{Runs: PermApply, GateMocks: PermRead, StateVersions: PermWrite, Variables: PermWrite,
				Create: true, Locking: true, Delete: true, RunTasks: true},
		}, true
	case ProjectAccessAdmin:
		return TeamProjectPermissions{
			Project: ProjectPermissions{Settings: PermDelete, Teams: PermManage, VariableSets: PermWrite},
			Workspace: WorkspacePermissions{Runs: PermApply, GateMocks: PermRead, StateVersions: PermWrite, Variables: PermWrite,
				Create: true, Locking: true, Delete: true, Move: true, RunTasks: true},
		}, true
	}
	return TeamProjectPermissions{}, false
}

// CustomDefaultPermissions returns the value of every permission a custom
// record leaves unspecified (the last column of the spec §2 table).
func CustomDefaultPermissions() TeamProjectPermissions {
	return TeamProjectPermissions{
		Project:   ProjectPermissions{Settings: PermRead, Teams: PermNone, VariableSets: PermNone},
		Workspace: WorkspacePermissions{Runs: PermRead, GateMocks: PermNone, StateVersions: PermNone, Variables: PermNone},
	}
}

// Caller kinds: whom a request's token speaks for.
const (
	CallerUser         = "user"
	CallerTeam         = "team"
	CallerOrganization = "organization"
	// CallerManagement is a management token: a site administrator that is
	// no user.
	CallerManagement = "management"
)

// Caller describes who makes a management-API request, as its token
// resolves (see reader.CallerForSubject). Permission functions take it
// together with the organization data they judge.
type Caller struct {
	// Kind is user, team, organization or management.
	Kind string
	// UserID is set for a user.
	UserID string
	// TeamID is set for a team token.
	TeamID string
	// OrganizationName is set for an organization token.
	OrganizationName string
	// IsSiteAdmin is true for management tokens and admin users.
	IsSiteAdmin bool
}

// CanUseAdminAPI reports whether c may use /api/v2/admin/...: site
// administrators only (everyone else gets 404, spec §5.4).
func CanUseAdminAPI(c Caller) bool { return c.IsSiteAdmin }

// CanCreateOrganization reports whether c may create organizations: any
// user, and site administrators. Team and organization tokens may not,
// as in TFE.
func CanCreateOrganization(c Caller) bool { return c.IsSiteAdmin || c.Kind == CallerUser }

// OrgAuthority is what a caller holds in one organization: computed once
// per request by NewOrgAuthority and asked by the Can* methods.
type OrgAuthority struct {
	Organization *Organization
	Caller       Caller
	// Owner: on the owners team, the owners team's token, the
	// organization's token, or a site administrator. Owners may do
	// everything in the organization.
	Owner bool
	// Member: on at least one team of the organization (owners included).
	Member bool
	// TeamIDs are the caller's teams in the organization, sorted.
	TeamIDs []string
	// Access is the union of the organization-level permissions of those
	// teams.
	Access TeamOrganizationAccess
}

// NewOrgAuthority computes c's standing in org from teams, the caller's
// teams (for a user, the teams they are on; for a team token, that team).
// Teams of other organizations are ignored. In a disabled organization
// only site administrators hold anything (spec §3: "all permissions
// removed"). A site administrator acts as an owner everywhere.
func NewOrgAuthority(c Caller, org *Organization, teams []*Team) *OrgAuthority {
	a := &OrgAuthority{Organization: org, Caller: c}
	if org == nil {
		return a
	}
	if c.IsSiteAdmin {
		a.Owner, a.Member = true, true
	}
	if org.IsDisabled && !c.IsSiteAdmin {
		return a
	}
	if c.Kind == CallerOrganization && c.OrganizationName == org.Name {
		a.Owner, a.Member = true, true
	}
	for _, t := range teams {
		if t == nil || t.OrganizationName != org.Name {
			continue
		}
		if c.Kind == CallerTeam && t.ID != c.TeamID {
			continue
		}
		a.Member = true
		a.Owner = a.Owner || t.IsOwners
		a.TeamIDs = append(a.TeamIDs, t.ID)
		a.Access = unionOrgAccess(a.Access, t.Access)
	}
	slices.Sort(a.TeamIDs)
	a.TeamIDs = slices.Compact(a.TeamIDs)
	return a
}

func unionOrgAccess(a, b TeamOrganizationAccess) TeamOrganizationAccess {
	return TeamOrganizationAccess{
		ManagePolicies:           a.ManagePolicies || b.ManagePolicies,
		ManagePolicyOverrides:    a.ManagePolicyOverrides || b.ManagePolicyOverrides,
		ManageWorkspaces:         a.ManageWorkspaces || b.ManageWorkspaces,
		ManageVCSSettings:        a.ManageVCSSettings || b.ManageVCSSettings,
		ManageProviders:          a.ManageProviders || b.ManageProviders,
		ManageModules:            a.ManageModules || b.ManageModules,
		ManageRunTasks:           a.ManageRunTasks || b.ManageRunTasks,
		ManageProjects:           a.ManageProjects || b.ManageProjects,
		ReadWorkspaces:           a.ReadWorkspaces || b.ReadWorkspaces,
		ReadProjects:             a.ReadProjects || b.ReadProjects,
		ManageMembership:         a.ManageMembership || b.ManageMembership,
		ManageTeams:              a.ManageTeams || b.ManageTeams,
		ManageOrganizationAccess: a.ManageOrganizationAccess || b.ManageOrganizationAccess,
		AccessSecretTeams:        a.AccessSecretTeams || b.AccessSecretTeams,
		ManageAgentPools:         a.ManageAgentPools || b.ManageAgentPools,
	}
}

// CanAccess reports whether the organization exists for the caller at
// all; when false every organization path answers 404.
func (a *OrgAuthority) CanAccess() bool { return a.Organization != nil && a.Member }

// InTeam reports whether the caller is on team teamID.
func (a *OrgAuthority) InTeam(teamID string) bool {
	_, found := slices.BinarySearch(a.TeamIDs, teamID)
	return found
}

// CanUpdateOrganization: owners only.
func (a *OrgAuthority) CanUpdateOrganization() bool { return a.Owner }

// CanDestroyOrganization: owners only.
func (a *OrgAuthority) CanDestroyOrganization() bool { return a.Owner }

// CanCreateProject: owners, teams with Manage projects, and the
// organization token (spec §5.2).
func (a *OrgAuthority) CanCreateProject() bool { return a.Owner || a.Access.ManageProjects }

// CanManageTeams: owners and teams with Manage teams create, update and
// delete teams.
func (a *OrgAuthority) CanManageTeams() bool { return a.Owner || a.Access.ManageTeams }

// CanManageMembership: owners and teams with Manage membership (or Manage
// teams) add and remove team members.
func (a *OrgAuthority) CanManageMembership() bool {
	return a.Owner || a.Access.ManageMembership || a.Access.ManageTeams
}

// CanManagePolicies: owners and teams with Manage policies manage policy
// sets.
func (a *OrgAuthority) CanManagePolicies() bool { return a.Owner || a.Access.ManagePolicies }

// CanSeeTeam reports whether the caller sees team (spec §5.3): every member
// sees teams of visibility organization and the teams they are on; secret
// teams of others are seen only by owners and by teams allowed to see
// secret teams or to manage teams or membership.
func (a *OrgAuthority) CanSeeTeam(team *Team) bool {
	if !a.CanAccess() || team == nil || team.OrganizationName != a.Organization.Name {
		return false
	}
	return a.Owner || team.Visibility == TeamVisibilityOrganization || a.InTeam(team.ID) ||
		a.Access.AccessSecretTeams || a.Access.ManageTeams || a.Access.ManageMembership
}

// ProjectAccess is a caller's effective access to one project: the union of
// the records of the caller's teams and of what organization-level
// permissions grant on every project.
type ProjectAccess struct {
	// Visible: the caller may see the project. When false every other
	// field is zero and the project answers 404.
	Visible bool
	// WorkspaceAdmin: the admin workspace role on the project's workspaces
	// (maintain and admin levels, Manage workspaces, owners): update their
	// settings.
	WorkspaceAdmin bool
	Permissions    TeamProjectPermissions
}

// EffectiveProjectAccess combines the records of the caller's teams on one
// project with organization-level permissions (spec §2 rule 2):
//
//   - owners (and site administrators, organization tokens) and teams with
//     Manage projects have admin on every project, whatever their record;
//   - Manage workspaces grants the maintain level on every project: the
//     admin workspace role, creating and deleting workspaces, but not
//     moving them between projects (spec §5.5 wants move permission) nor
//     managing the project;
//   - Read workspaces grants the read level; Read projects only shows the
//     project.
//
// records may hold records of other teams and projects' records: only the
// caller's teams' records count. A disabled organization grants nothing.
func (a *OrgAuthority) EffectiveProjectAccess(p *Project, records []*TeamProject) ProjectAccess {
	if p == nil || !a.CanAccess() || p.OrganizationName != a.Organization.Name {
		return ProjectAccess{}
	}
	return a.ProjectAccessWith(a.OrgWideAccess(), p.ID, records)
}

// OrgWideAccess is what organization-level permissions alone grant on every
// project of the organization. Lists compute it once, not per project.
func (a *OrgAuthority) OrgWideAccess() ProjectAccess {
	var out ProjectAccess
	if !a.CanAccess() {
		return out
	}
	level := ""
	switch {
	case a.Owner || a.Access.ManageProjects:
		level = ProjectAccessAdmin
	case a.Access.ManageWorkspaces:
		level = ProjectAccessMaintain
	case a.Access.ReadWorkspaces:
		level = ProjectAccessRead
	case a.Access.ReadProjects:
		out.Visible = true
	}
	if level != "" {
		out.Visible = true
		out.Permissions, _ = ImpliedPermissions(level)
		out.WorkspaceAdmin = level == ProjectAccessMaintain || level == ProjectAccessAdmin
	}
	if out.Visible {
		out.Permissions = out.Permissions.Union(bottomPermissions)
	}
	return out
}

// bottomPermissions is the lowest value of every permission: what a
// visible project grants for an attribute no grant named.
var bottomPermissions = TeamProjectPermissions{
	Project:   ProjectPermissions{Settings: PermRead, Teams: PermNone, VariableSets: PermNone},
	Workspace: WorkspacePermissions{Runs: PermRead, Variables: PermNone, StateVersions: PermNone, GateMocks: PermNone},
}

// ProjectAccessWith adds the records of the caller's teams on project
// projectID to base, the organization-wide access.
func (a *OrgAuthority) ProjectAccessWith(base ProjectAccess, projectID string, records []*TeamProject) ProjectAccess {
	out := base
	for _, r := range records {
		if r == nil || r.ProjectID != projectID || !a.InTeam(r.TeamID) {
			continue
		}
		out.Visible = true
		out.Permissions = out.Permissions.Union(r.Permissions)
		out.WorkspaceAdmin = out.WorkspaceAdmin || r.Access == ProjectAccessMaintain || r.Access == ProjectAccessAdmin
	}
	if out.Visible && out != base {
		out.Permissions = out.Permissions.Union(bottomPermissions)
	}
	return out
}

// CanUpdate is the project's `can-update`: change its settings.
func (p ProjectAccess) CanUpdate() bool {
	return p.Visible && atLeast(scaleSettings, p.Permissions.Project.Settings, PermUpdate)
}

// CanDestroy is the project's `can-destroy`: delete it.
func (p ProjectAccess) CanDestroy() bool {
	return p.Visible && p.Permissions.Project.Settings == PermDelete
}

// CanCreateWorkspace is the project's `can-create-workspace`.
func (p ProjectAccess) CanCreateWorkspace() bool { return p.Visible && p.Permissions.Workspace.Create }

// CanMoveWorkspaces: move workspaces into and out of the project.
func (p ProjectAccess) CanMoveWorkspaces() bool { return p.Visible && p.Permissions.Workspace.Move }

// CanManageTeamAccess: add, change and remove the project's team-projects
// and see every one of them, secret teams included (project admins).
func (p ProjectAccess) CanManageTeamAccess() bool {
	return p.Visible && p.Permissions.Project.Teams == PermManage
}

// CanReadWorkspaces: see the project's workspaces.
func (p ProjectAccess) CanReadWorkspaces() bool { return p.Visible }

// CanUpdateWorkspaces: change the settings of the project's workspaces.
func (p ProjectAccess) CanUpdateWorkspaces() bool { return p.Visible && p.WorkspaceAdmin }

// CanDeleteWorkspaces: delete the project's workspaces.
func (p ProjectAccess) CanDeleteWorkspaces() bool { return p.Visible && p.Permissions.Workspace.Delete }

// CanLockWorkspaces: lock and unlock the project's workspaces.
func (p ProjectAccess) CanLockWorkspaces() bool { return p.Visible && p.Permissions.Workspace.Locking }

// CanQueueRuns: create runs (plan) in the project's workspaces.
func (p ProjectAccess) CanQueueRuns() bool {
	return p.Visible && atLeast(scaleRuns, p.Permissions.Workspace.Runs, PermPlan)
}

// CanApplyRuns: apply, discard and cancel runs.
func (p ProjectAccess) CanApplyRuns() bool {
	return p.Visible && p.Permissions.Workspace.Runs == PermApply
}

// CanReadStateVersions: read full state versions (not just outputs).
func (p ProjectAccess) CanReadStateVersions() bool {
	return p.Visible && atLeast(scaleStateVersions, p.Permissions.Workspace.StateVersions, PermRead)
}

// CanReadStateOutputs: read the outputs of state versions.
func (p ProjectAccess) CanReadStateOutputs() bool {
	return p.Visible && atLeast(scaleStateVersions, p.Permissions.Workspace.StateVersions, PermReadOutputs)
}

// CanWriteStateVersions: create state versions.
func (p ProjectAccess) CanWriteStateVersions() bool {
	return p.Visible && p.Permissions.Workspace.StateVersions == PermWrite
}

// CanViewTeamProject reports whether the caller sees record, a team-project
// of team on a project where the caller's access is pa (spec §5.3): owners
// and project admins see every record; other members see the records of
// the teams they can see (organization-visible teams and their own secret
// teams).
func (a *OrgAuthority) CanViewTeamProject(team *Team, pa ProjectAccess) bool {
	if !a.CanAccess() {
		return false
	}
	return a.Owner || pa.CanManageTeamAccess() || a.CanSeeTeam(team)
}

// CanModifyTeamAccess reports whether the caller may add, update or remove
// team access on a project where its access is pa: owners (organization
// and owners team tokens included) and project admins.
func (a *OrgAuthority) CanModifyTeamAccess(pa ProjectAccess) bool {
	return a.CanAccess() && (a.Owner || pa.CanManageTeamAccess())
}

// CheckWorkspaceMove decides a move of workspaces (spec §5.5, §7): dst is
// the caller's access to the destination, sources its access to each
// listed workspace's current project, and allFound whether every listed
// workspace exists in the organization. It returns nil when the move may
// go ahead, an ErrNotFound error (404) when the destination is unknown or
// the caller may not move into it, and an ErrForbidden error (403) when a
// workspace is missing or may not be moved out of its project.
func CheckWorkspaceMove(dst ProjectAccess, sources []ProjectAccess, allFound bool) error {
	if !dst.CanMoveWorkspaces() {
		return state.NotFoundf("project not found, or not allowed to move workspaces into it")
	}
	if !allFound {
		return Forbiddenf("a listed workspace was not found; nothing was moved")
	}
	for _, src := range sources {
		if !src.CanMoveWorkspaces() {
			return Forbiddenf("not allowed to move every listed workspace out of its project; nothing was moved")
		}
	}
	return nil
}
