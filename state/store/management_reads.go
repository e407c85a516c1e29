package store

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// Reads of the management tables. Like every read of the store they take a
// memdb.WatchSet (which may be nil), return objects shared with the store
// (never mutate them), and answer nil, not an error, for a missing object.

// countRows counts the rows of an index lookup.
func countRows(txn *memdb.Txn, table, index string, args ...any) (int, error) {
	return countRowsWatch(nil, txn, table, index, args...)
}

// countRowsWatch counts the rows of an index lookup and watches it.
func countRowsWatch(ws memdb.WatchSet, txn *memdb.Txn, table, index string, args ...any) (int, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", table, err)
	}
	watch(ws, iter.WatchCh())
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n++
	}
	return n, nil
}

// newestFirst returns the rows of an index lookup in reverse key order.
func newestFirst[T any](ws memdb.WatchSet, txn *memdb.Txn, table, index string, args ...any) ([]T, error) {
	iter, err := txn.GetReverse(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	watch(ws, iter.WatchCh())
	var out []T
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(T))
	}
	return out, nil
}

// OrganizationByName returns an organization by its name (exact), or nil.
func (r reader) OrganizationByName(ws memdb.WatchSet, name string) (*mgmt.Organization, error) {
	return first[*mgmt.Organization](ws, r.txn(), TableOrganizations, indexID, name)
}

// OrganizationByExternalID returns an organization by its "org-…" ID, or nil.
func (r reader) OrganizationByExternalID(ws memdb.WatchSet, id string) (*mgmt.Organization, error) {
	return first[*mgmt.Organization](ws, r.txn(), TableOrganizations, indexMgExternal, id)
}

// Organizations lists every organization, by name.
func (r reader) Organizations(ws memdb.WatchSet) ([]*mgmt.Organization, error) {
	return list[*mgmt.Organization](ws, r.txn(), nil, TableOrganizations, indexID)
}

// OrganizationOwners lists the users on an organization's owners team (the
// admin view's `owners` relationship), by user ID.
func (r reader) OrganizationOwners(ws memdb.WatchSet, name string) ([]*mgmt.User, error) {
	txn := r.txn()
	org, err := first[*mgmt.Organization](ws, txn, TableOrganizations, indexID, name)
	if err != nil || org == nil {
		return nil, err
	}
	return teamMembers(ws, txn, org.OwnersTeamID)
}

// UserByID returns a user, or nil.
func (r reader) UserByID(ws memdb.WatchSet, id string) (*mgmt.User, error) {
	return first[*mgmt.User](ws, r.txn(), TableUsers, indexID, id)
}

// UserByUsername returns a user by username, compared case-insensitively,
// or nil.
func (r reader) UserByUsername(ws memdb.WatchSet, username string) (*mgmt.User, error) {
	return first[*mgmt.User](ws, r.txn(), TableUsers, indexMgNameLower, strings.ToLower(username))
}

// Users lists every user, by ID.
func (r reader) Users(ws memdb.WatchSet) ([]*mgmt.User, error) {
	return list[*mgmt.User](ws, r.txn(), nil, TableUsers, indexID)
}

// TeamByID returns a team, or nil.
func (r reader) TeamByID(ws memdb.WatchSet, id string) (*mgmt.Team, error) {
	return first[*mgmt.Team](ws, r.txn(), TableTeams, indexID, id)
}

// TeamByName returns a team of org by name, compared case-insensitively,
// or nil.
func (r reader) TeamByName(ws memdb.WatchSet, org, name string) (*mgmt.Team, error) {
	return first[*mgmt.Team](ws, r.txn(), TableTeams, indexMgOrgName, org, strings.ToLower(name))
}

// TeamsByOrganization lists an organization's teams in creation order (the
// owners team first).
func (r reader) TeamsByOrganization(ws memdb.WatchSet, org string) ([]*mgmt.Team, error) {
	return list[*mgmt.Team](ws, r.txn(), nil, TableTeams, indexMgOrg, org)
}

// TeamMemberIDs lists the IDs of a team's members, sorted.
func (r reader) TeamMemberIDs(ws memdb.WatchSet, teamID string) ([]string, error) {
	return teamMemberIDs(ws, r.txn(), teamID)
}

// TeamMembers lists a team's members, by user ID.
func (r reader) TeamMembers(ws memdb.WatchSet, teamID string) ([]*mgmt.User, error) {
	return teamMembers(ws, r.txn(), teamID)
}

// UserTeams lists the teams a user is on, in every organization, by team ID.
func (r reader) UserTeams(ws memdb.WatchSet, userID string) ([]*mgmt.Team, error) {
	txn := r.txn()
	ms, err := list[*mgmt.TeamMembership](ws, txn, nil, TableTeamMemberships, indexMgUser, userID)
	if err != nil {
		return nil, err
	}
	return teamsOf(ws, txn, ms)
}

func teamMemberIDs(ws memdb.WatchSet, txn *memdb.Txn, teamID string) ([]string, error) {
	ms, err := list[*mgmt.TeamMembership](ws, txn, nil, TableTeamMemberships, indexID+"_prefix", teamID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.UserID
	}
	return ids, nil
}

func teamMembers(ws memdb.WatchSet, txn *memdb.Txn, teamID string) ([]*mgmt.User, error) {
	ids, err := teamMemberIDs(ws, txn, teamID)
	if err != nil {
		return nil, err
	}
	var out []*mgmt.User
	for _, id := range ids {
		u, err := first[*mgmt.User](ws, txn, TableUsers, indexID, id)
		if err != nil {
			return nil, err
		}
		if u != nil {
			out = append(out, u)
		}
	}
	return out, nil
}

func teamsOf(ws memdb.WatchSet, txn *memdb.Txn, ms []*mgmt.TeamMembership) ([]*mgmt.Team, error) {
	var out []*mgmt.Team
	for _, m := range ms {
		t, err := first[*mgmt.Team](ws, txn, TableTeams, indexID, m.TeamID)
		if err != nil {
			return nil, err
		}
		if t != nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// ProjectByID returns a project, or nil.
func (r reader) ProjectByID(ws memdb.WatchSet, id string) (*mgmt.Project, error) {
	return first[*mgmt.Project](ws, r.txn(), TableProjects, indexID, id)
}

// ProjectByName returns a project of org by name, compared
// case-insensitively, or nil.
func (r reader) ProjectByName(ws memdb.WatchSet, org, name string) (*mgmt.Project, error) {
	return first[*mgmt.Project](ws, r.txn(), TableProjects, indexMgOrgName, org, strings.ToLower(name))
}

// ProjectsByOrganization lists an organization's projects in creation order.
func (r reader) ProjectsByOrganization(ws memdb.WatchSet, org string) ([]*mgmt.Project, error) {
	return list[*mgmt.Project](ws, r.txn(), nil, TableProjects, indexMgOrg, org)
}

// ProjectCounts returns a project's workspace-count and team-count.
func (r reader) ProjectCounts(ws memdb.WatchSet, projectID string) (workspaces, teams int, err error) {
	return projectCounts(ws, r.txn(), projectID)
}

func projectCounts(ws memdb.WatchSet, txn *memdb.Txn, projectID string) (int, int, error) {
	w, err := countRowsWatch(ws, txn, TableWorkspaces, indexMgProject, projectID)
	if err != nil {
		return 0, 0, err
	}
	t, err := countRowsWatch(ws, txn, TableTeamProjects, indexMgProject, projectID)
	return w, t, err
}

// TeamProjectByID returns a team-project, or nil.
func (r reader) TeamProjectByID(ws memdb.WatchSet, id string) (*mgmt.TeamProject, error) {
	return first[*mgmt.TeamProject](ws, r.txn(), TableTeamProjects, indexID, id)
}

// TeamProjectFor returns the record of team on project, or nil.
func (r reader) TeamProjectFor(ws memdb.WatchSet, teamID, projectID string) (*mgmt.TeamProject, error) {
	return first[*mgmt.TeamProject](ws, r.txn(), TableTeamProjects, indexMgTeam, teamID, projectID)
}

// TeamProjectsByProject lists a project's team-projects in creation order,
// unfiltered (see ListTeamProjects for what a caller may see).
func (r reader) TeamProjectsByProject(ws memdb.WatchSet, projectID string) ([]*mgmt.TeamProject, error) {
	return list[*mgmt.TeamProject](ws, r.txn(), nil, TableTeamProjects, indexMgProject, projectID)
}

// WorkspaceByID returns a workspace, or nil.
func (r reader) WorkspaceByID(ws memdb.WatchSet, id string) (*mgmt.Workspace, error) {
	return first[*mgmt.Workspace](ws, r.txn(), TableWorkspaces, indexID, id)
}

// WorkspaceByName returns a workspace of org by name, compared
// case-insensitively, or nil.
func (r reader) WorkspaceByName(ws memdb.WatchSet, org, name string) (*mgmt.Workspace, error) {
	return first[*mgmt.Workspace](ws, r.txn(), TableWorkspaces, indexMgOrgName, org, strings.ToLower(name))
}

// WorkspacesByOrganization lists an organization's workspaces in creation
// order.
func (r reader) WorkspacesByOrganization(ws memdb.WatchSet, org string) ([]*mgmt.Workspace, error) {
	return list[*mgmt.Workspace](ws, r.txn(), nil, TableWorkspaces, indexMgOrg, org)
}

// WorkspacesByProject lists a project's workspaces in creation order.
func (r reader) WorkspacesByProject(ws memdb.WatchSet, projectID string) ([]*mgmt.Workspace, error) {
	return list[*mgmt.Workspace](ws, r.txn(), nil, TableWorkspaces, indexMgProject, projectID)
}

// RunByID returns a run, or nil.
func (r reader) RunByID(ws memdb.WatchSet, id string) (*mgmt.Run, error) {
	return first[*mgmt.Run](ws, r.txn(), TableRuns, indexID, id)
}

// RunsByWorkspace lists a workspace's runs, newest first.
func (r reader) RunsByWorkspace(ws memdb.WatchSet, workspaceID string) ([]*mgmt.Run, error) {
	return newestFirst[*mgmt.Run](ws, r.txn(), TableRuns, indexMgWorkspace, workspaceID)
}

// StateVersionByID returns a state version, or nil.
func (r reader) StateVersionByID(ws memdb.WatchSet, id string) (*mgmt.StateVersion, error) {
	return first[*mgmt.StateVersion](ws, r.txn(), TableStateVersions, indexID, id)
}

// StateVersionsByWorkspace lists a workspace's state versions, newest first.
func (r reader) StateVersionsByWorkspace(ws memdb.WatchSet, workspaceID string) ([]*mgmt.StateVersion, error) {
	return newestFirst[*mgmt.StateVersion](ws, r.txn(), TableStateVersions, indexMgWorkspace, workspaceID)
}

// PolicySetByID returns a policy set, or nil.
func (r reader) PolicySetByID(ws memdb.WatchSet, id string) (*mgmt.PolicySet, error) {
	return first[*mgmt.PolicySet](ws, r.txn(), TablePolicySets, indexID, id)
}

// PolicySetsByOrganization lists an organization's policy sets in creation
// order.
func (r reader) PolicySetsByOrganization(ws memdb.WatchSet, org string) ([]*mgmt.PolicySet, error) {
	return list[*mgmt.PolicySet](ws, r.txn(), nil, TablePolicySets, indexMgOrg, org)
}

// ToolVersionByID returns a version of family, or nil (also when id is a
// version of the other family).
func (r reader) ToolVersionByID(ws memdb.WatchSet, family, id string) (*mgmt.ToolVersion, error) {
	tv, err := first[*mgmt.ToolVersion](ws, r.txn(), TableToolVersions, indexID, id)
	if err != nil || tv == nil || tv.Family != family {
		return nil, err
	}
	return tv, nil
}

// ToolVersionByVersion returns the version of family whose version string
// is version, or nil.
func (r reader) ToolVersionByVersion(ws memdb.WatchSet, family, version string) (*mgmt.ToolVersion, error) {
	return toolVersionByVersion(ws, r.txn(), family, version)
}

// ToolVersionUsage returns a version's `usage`: the workspaces (tool
// versions) or policy sets (policy versions) that use it.
func (r reader) ToolVersionUsage(ws memdb.WatchSet, tv *mgmt.ToolVersion) (int, error) {
	return toolVersionUsage(ws, r.txn(), tv)
}

// CallerForSubject resolves a token's subject to a Caller: kind is
// CallerUser, CallerTeam, CallerOrganization (id is the organization's name
// or its "org-…" external ID) or CallerManagement (id ignored). A user's
// IsAdmin makes the caller a site administrator. A subject that no longer
// exists is ErrNotFound: the token no longer speaks for anyone (401).
func (r reader) CallerForSubject(ws memdb.WatchSet, kind, id string) (mgmt.Caller, error) {
	txn := r.txn()
	switch kind {
	case mgmt.CallerManagement:
		return mgmt.Caller{Kind: mgmt.CallerManagement, IsSiteAdmin: true}, nil
	case mgmt.CallerUser:
		u, err := first[*mgmt.User](ws, txn, TableUsers, indexID, id)
		if err != nil {
			return mgmt.Caller{}, err
		}
		if u == nil {
			return mgmt.Caller{}, state.NotFoundf("user %q not found", id)
		}
		return mgmt.Caller{Kind: mgmt.CallerUser, UserID: u.ID, IsSiteAdmin: u.IsAdmin}, nil
	case mgmt.CallerTeam:
		t, err := first[*mgmt.Team](ws, txn, TableTeams, indexID, id)
		if err != nil {
			return mgmt.Caller{}, err
		}
		if t == nil {
			return mgmt.Caller{}, state.NotFoundf("team %q not found", id)
		}
		return mgmt.Caller{Kind: mgmt.CallerTeam, TeamID: t.ID, OrganizationName: t.OrganizationName}, nil
	case mgmt.CallerOrganization:
		org, err := first[*mgmt.Organization](ws, txn, TableOrganizations, indexID, id)
		if err == nil && org == nil {
			org, err = first[*mgmt.Organization](ws, txn, TableOrganizations, indexMgExternal, id)
		}
		if err != nil {
			return mgmt.Caller{}, err
		}
		if org == nil {
			return mgmt.Caller{}, state.NotFoundf("organization %q not found", id)
		}
		return mgmt.Caller{Kind: mgmt.CallerOrganization, OrganizationName: org.Name}, nil
	}
	return mgmt.Caller{}, state.Invalidf("Subject.Kind", "%q is not one of user, team, organization, management", kind)
}

// OrgAuthorityFor computes c's standing in organization orgName (see
// NewOrgAuthority). An unknown organization gives an authority whose
// CanAccess is false, so callers answer 404 either way.
func (r reader) OrgAuthorityFor(ws memdb.WatchSet, c mgmt.Caller, orgName string) (*mgmt.OrgAuthority, error) {
	txn := r.txn()
	org, err := first[*mgmt.Organization](ws, txn, TableOrganizations, indexID, orgName)
	if err != nil || org == nil {
		return mgmt.NewOrgAuthority(c, nil, nil), err
	}
	var teams []*mgmt.Team
	switch c.Kind {
	case mgmt.CallerUser:
		ms, err := list[*mgmt.TeamMembership](ws, txn, nil, TableTeamMemberships, indexMgOrgUser, org.Name, c.UserID)
		if err != nil {
			return nil, err
		}
		if teams, err = teamsOf(ws, txn, ms); err != nil {
			return nil, err
		}
	case mgmt.CallerTeam:
		t, err := first[*mgmt.Team](ws, txn, TableTeams, indexID, c.TeamID)
		if err != nil {
			return nil, err
		}
		if t != nil {
			teams = []*mgmt.Team{t}
		}
	}
	return mgmt.NewOrgAuthority(c, org, teams), nil
}

// ProjectAccessFor returns a's effective access to project p (see
// OrgAuthority.EffectiveProjectAccess), loading the records of a's teams.
func (r reader) ProjectAccessFor(ws memdb.WatchSet, a *mgmt.OrgAuthority, p *mgmt.Project) (mgmt.ProjectAccess, error) {
	records, err := recordsForProject(ws, r.txn(), a, p.ID)
	if err != nil {
		return mgmt.ProjectAccess{}, err
	}
	return a.EffectiveProjectAccess(p, records), nil
}

func recordsForProject(ws memdb.WatchSet, txn *memdb.Txn, a *mgmt.OrgAuthority, projectID string) ([]*mgmt.TeamProject, error) {
	var out []*mgmt.TeamProject
	for _, teamID := range a.TeamIDs {
		rec, err := first[*mgmt.TeamProject](ws, txn, TableTeamProjects, indexMgTeam, teamID, projectID)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// AuthorizeWorkspaceMove decides whether a may move workspaceIDs into
// project dstID (spec §5.5, §7): ErrNotFound (404) when the destination is
// unknown, in another organization, or may not be moved into; ErrForbidden
// (403) when a listed workspace is missing or may not be moved out of its
// project; nil when the move may be proposed. Nothing is moved unless it
// returns nil.
func (r reader) AuthorizeWorkspaceMove(ws memdb.WatchSet, a *mgmt.OrgAuthority, dstID string, workspaceIDs []string) error {
	txn := r.txn()
	dst, err := first[*mgmt.Project](ws, txn, TableProjects, indexID, dstID)
	if err != nil {
		return err
	}
	var dstAccess mgmt.ProjectAccess
	if dst != nil {
		recs, err := recordsForProject(ws, txn, a, dst.ID)
		if err != nil {
			return err
		}
		dstAccess = a.EffectiveProjectAccess(dst, recs)
	}
	allFound := true
	var sources []mgmt.ProjectAccess
	seen := map[string]bool{}
	for _, id := range workspaceIDs {
		w, err := first[*mgmt.Workspace](ws, txn, TableWorkspaces, indexID, id)
		if err != nil {
			return err
		}
		if w == nil || dst == nil || w.OrganizationName != dst.OrganizationName {
			allFound = false
			continue
		}
		if seen[w.ProjectID] {
			continue
		}
		seen[w.ProjectID] = true
		src, err := first[*mgmt.Project](ws, txn, TableProjects, indexID, w.ProjectID)
		if err != nil {
			return err
		}
		recs, err := recordsForProject(ws, txn, a, w.ProjectID)
		if err != nil {
			return err
		}
		sources = append(sources, a.EffectiveProjectAccess(src, recs))
	}
	return mgmt.CheckWorkspaceMove(dstAccess, sources, allFound)
}

// ProjectAuthority loads project id with what c may do with it: c's
// authority in the project's organization and its effective access. A
// missing project is nil with no error; so is one of an organization c
// cannot access (Access.Visible false): both answer 404.
func (r reader) ProjectAuthority(ws memdb.WatchSet, c mgmt.Caller, id string) (*mgmt.Project, *mgmt.OrgAuthority, mgmt.ProjectAccess, error) {
	p, err := first[*mgmt.Project](ws, r.txn(), TableProjects, indexID, id)
	if err != nil || p == nil {
		return nil, nil, mgmt.ProjectAccess{}, err
	}
	a, err := r.OrgAuthorityFor(ws, c, p.OrganizationName)
	if err != nil {
		return nil, nil, mgmt.ProjectAccess{}, err
	}
	pa, err := r.ProjectAccessFor(ws, a, p)
	return p, a, pa, err
}

// WorkspaceAuthority loads workspace id with c's authority in its
// organization and c's effective access to its project, which is what
// decides every workspace permission. A missing workspace is nil with no
// error.
func (r reader) WorkspaceAuthority(ws memdb.WatchSet, c mgmt.Caller, id string) (*mgmt.Workspace, *mgmt.OrgAuthority, mgmt.ProjectAccess, error) {
	txn := r.txn()
	w, err := first[*mgmt.Workspace](ws, txn, TableWorkspaces, indexID, id)
	if err != nil || w == nil {
		return nil, nil, mgmt.ProjectAccess{}, err
	}
	a, err := r.OrgAuthorityFor(ws, c, w.OrganizationName)
	if err != nil {
		return nil, nil, mgmt.ProjectAccess{}, err
	}
	p, err := first[*mgmt.Project](ws, txn, TableProjects, indexID, w.ProjectID)
	if err != nil || p == nil {
		return w, a, mgmt.ProjectAccess{}, err
	}
	pa, err := r.ProjectAccessFor(ws, a, p)
	return w, a, pa, err
}
