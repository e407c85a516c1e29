package store

import (
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

func applyTeamProjectCreate(t *writeTxn, req *TeamProjectCreateRequest) (any, error) {
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixTeamProject, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	perms, err := mgmt.ResolveTeamProjectPermissions(req.Access, nil, req.Permissions)
	if err != nil {
		return nil, err
	}
	p, err := getRow[*mgmt.Project](t, TableProjects, req.ProjectID)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, state.NotFoundf("project %q not found", req.ProjectID)
	}
	team, err := getRow[*mgmt.Team](t, TableTeams, req.TeamID)
	if err != nil {
		return nil, err
	}
	if team == nil || team.OrganizationName != p.OrganizationName {
		return nil, state.NotFoundf("team %q not found in organization %q", req.TeamID, p.OrganizationName)
	}
	if err := requireNewID(t, TableTeamProjects, req.ID); err != nil {
		return nil, err
	}
	existing, err := list[*mgmt.TeamProject](nil, t.Txn, nil, TableTeamProjects, indexMgTeam, team.ID, p.ID)
	if err != nil {
		return nil, err
	}
	if len(existing) > 0 {
		return nil, state.Conflictf("team %q already has access to project %q (%s); update that record instead", team.ID, p.ID, existing[0].ID)
	}
	r := &mgmt.TeamProject{ID: req.ID, OrganizationName: p.OrganizationName, TeamID: team.ID, ProjectID: p.ID,
		Access: req.Access, Permissions: perms, CreatedAt: mgmt.Time(req.CreatedAt)}
	stampNew(t, &r.CreateIndex, &r.ModifyIndex)
	return r, t.insert(TableTeamProjects, r)
}

func requireTeamProject(t *writeTxn, id string) (*mgmt.TeamProject, error) {
	return mustGetRow[mgmt.TeamProject](t, TableTeamProjects, "team access", id)
}

func applyTeamProjectUpdate(t *writeTxn, req *TeamProjectUpdateRequest) (any, error) {
	old, err := requireTeamProject(t, req.ID)
	if err != nil {
		return nil, err
	}
	access := old.Access
	if req.Access != nil {
		access = *req.Access
	}
	perms, err := mgmt.ResolveTeamProjectPermissions(access, old, req.Permissions)
	if err != nil {
		return nil, err
	}
	out := *old
	out.Access, out.Permissions, out.ModifyIndex = access, perms, t.index
	return &out, t.insert(TableTeamProjects, &out)
}

func applyTeamProjectDelete(t *writeTxn, req *TeamProjectDeleteRequest) (any, error) {
	r, err := requireTeamProject(t, req.ID)
	if err != nil {
		return nil, err
	}
	return nil, t.delete(TableTeamProjects, r)
}
