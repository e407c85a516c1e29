package store

import (
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"time"
)

func requireProject(t *writeTxn, id string) (*mgmt.Project, error) {
	return mustGetRow[mgmt.Project](t, TableProjects, "project", id)
}

func projectNameTaken(t *writeTxn, org, name, selfID string) error {
	taken, err := nameTaken(t, TableProjects, org, name, func(x *mgmt.Project) string { return x.ID }, selfID)
	if err != nil {
		return err
	}
	if taken {
		return state.Invalidf(mgmt.AttrPointer("name"), "has already been taken in organization %q", org)
	}
	return nil
}

func applyProjectCreate(t *writeTxn, req *ProjectCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixProject, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(true); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableProjects, req.ID); err != nil {
		return nil, err
	}
	if err := projectNameTaken(t, org.Name, *req.Attributes.Name, req.ID); err != nil {
		return nil, err
	}
	p := &mgmt.Project{ID: req.ID, OrganizationName: org.Name, CreatedAt: mgmt.Time(req.CreatedAt)}
	req.Attributes.Apply(p)
	if err := mgmt.CheckProjectResult(p); err != nil {
		return nil, err
	}
	stampNew(t, &p.CreateIndex, &p.ModifyIndex)
	return p, insertCounted(t, TableProjects, p.OrganizationName, p)
}

func applyProjectUpdate(t *writeTxn, req *ProjectUpdateRequest) (any, error) {
	old, err := requireProject(t, req.ID)
	if err != nil {
		return nil, err
	}
	if err := req.Attributes.Validate(false); err != nil {
		return nil, err
	}
	if req.Attributes.Name != nil {
		if err := projectNameTaken(t, old.OrganizationName, *req.Attributes.Name, old.ID); err != nil {
			return nil, err
		}
	}
	p := old.Copy()
	req.Attributes.Apply(p)
	if err := mgmt.CheckProjectResult(p); err != nil {
		return nil, err
	}
	p.ModifyIndex = t.index
	if err := t.insert(TableProjects, p); err != nil {
		return nil, err
	}
	if p.AutoDestroyActivityDuration != old.AutoDestroyActivityDuration {
		if err := propagateAutoDestroy(t, p, req.Now); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// propagateAutoDestroy gives every workspace of p that inherits its
// auto-destroy duration the project's current one.
func propagateAutoDestroy(t *writeTxn, p *mgmt.Project, now time.Time) error {
	workspaces, err := list[*mgmt.Workspace](nil, t.Txn, func(w *mgmt.Workspace) bool {
		return w.InheritsProjectAutoDestroy && w.AutoDestroyActivityDuration != p.AutoDestroyActivityDuration
	}, TableWorkspaces, indexMgProject, p.ID)
	if err != nil {
		return err
	}
	for _, w := range workspaces {
		c := w.Copy()
		c.AutoDestroyActivityDuration = p.AutoDestroyActivityDuration
		c.UpdatedAt = mgmt.Time(now)
		c.ModifyIndex = t.index
		if err := t.insert(TableWorkspaces, c); err != nil {
			return err
		}
	}
	return nil
}

func applyProjectDelete(t *writeTxn, req *ProjectDeleteRequest) (any, error) {
	p, err := requireProject(t, req.ID)
	if err != nil {
		return nil, err
	}
	if p.IsDefault {
		return nil, state.Conflictf("project %q is the organization's default project and cannot be deleted", p.ID)
	}
	n, err := countRows(t.Txn, TableWorkspaces, indexMgProject, p.ID)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, state.Conflictf("project %q still contains %d workspaces; move or delete them first", p.ID, n)
	}
	return nil, deleteProjectRows(t, p)
}

// deleteProjectRows deletes a project and its team access (not its
// workspaces: callers check there are none, or delete them first).
func deleteProjectRows(t *writeTxn, p *mgmt.Project) error {
	records, err := list[*mgmt.TeamProject](nil, t.Txn, nil, TableTeamProjects, indexMgProject, p.ID)
	if err != nil {
		return err
	}
	for _, r := range records {
		if err := t.delete(TableTeamProjects, r); err != nil {
			return err
		}
	}
	return deleteCounted(t, TableProjects, p.OrganizationName, p)
}

func applyWorkspacesMove(t *writeTxn, req *WorkspacesMoveRequest) (any, error) {
	dst, err := requireProject(t, req.ProjectID)
	if err != nil {
		return nil, err
	}
	moved := map[string]bool{}
	for _, id := range req.WorkspaceIDs {
		w, err := getRow[*mgmt.Workspace](t, TableWorkspaces, id)
		if err != nil {
			return nil, err
		}
		if w == nil || w.OrganizationName != dst.OrganizationName {
			return nil, state.NotFoundf("workspace %q not found in organization %q", id, dst.OrganizationName)
		}
		if moved[id] || w.ProjectID == dst.ID {
			continue
		}
		moved[id] = true
		if err := moveWorkspace(t, w, dst, req.Now); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// moveWorkspace writes w into project dst; an inheriting workspace takes
// dst's auto-destroy duration.
func moveWorkspace(t *writeTxn, w *mgmt.Workspace, dst *mgmt.Project, now time.Time) error {
	c := w.Copy()
	c.ProjectID = dst.ID
	if c.InheritsProjectAutoDestroy {
		c.AutoDestroyActivityDuration = dst.AutoDestroyActivityDuration
	}
	c.UpdatedAt = mgmt.Time(now)
	c.ModifyIndex = t.index
	return t.insert(TableWorkspaces, c)
}
