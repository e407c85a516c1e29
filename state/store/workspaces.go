package store

import (
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// checkWorkspaceToolVersion checks that version names an enabled tool
// version that org may use (beta versions need access-beta-tools).
func checkWorkspaceToolVersion(t *writeTxn, org *mgmt.Organization, version string) error {
	if version == "" {
		return nil
	}
	tv, err := toolVersionByVersion(nil, t.Txn, mgmt.VersionFamilyTool, version)
	if err != nil {
		return err
	}
	switch {
	case tv == nil:
		return state.Invalidf(mgmt.AttrPointer("tool-version"), "tool version %q does not exist", version)
	case !tv.Enabled:
		return state.Invalidf(mgmt.AttrPointer("tool-version"), "tool version %q is disabled", version)
	case tv.Beta && !org.AccessBetaTools:
		return state.Invalidf(mgmt.AttrPointer("tool-version"), "tool version %q is a beta and organization %q may not use beta versions", version, org.Name)
	}
	return nil
}

// workspaceProject returns the project a workspace of org goes to: id, or
// the organization's Default Project when id is "".
func workspaceProject(t *writeTxn, org *mgmt.Organization, id string) (*mgmt.Project, error) {
	if id == "" {
		id = org.DefaultProjectID
	}
	p, err := getRow[*mgmt.Project](t, TableProjects, id)
	if err != nil {
		return nil, err
	}
	if p == nil || p.OrganizationName != org.Name {
		return nil, state.NotFoundf("project %q not found in organization %q", id, org.Name)
	}
	return p, nil
}

func workspaceNameTaken(t *writeTxn, org, name, selfID string) error {
	taken, err := nameTaken(t, TableWorkspaces, org, name, func(x *mgmt.Workspace) string { return x.ID }, selfID)
	if err != nil {
		return err
	}
	if taken {
		return state.Invalidf(mgmt.AttrPointer("name"), "has already been taken in organization %q", org)
	}
	return nil
}

func applyWorkspaceCreate(t *writeTxn, req *WorkspaceCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &state.ValidationError{}
	mgmt.CheckID(v, "ID", mgmt.PrefixWorkspace, req.ID)
	if err := v.Err(); err != nil {
		return nil, err
	}
	a := &req.Attributes
	if err := a.Validate(true); err != nil {
		return nil, err
	}
	if err := requireNewID(t, TableWorkspaces, req.ID); err != nil {
		return nil, err
	}
	if err := workspaceNameTaken(t, org.Name, *a.Name, req.ID); err != nil {
		return nil, err
	}
	n, err := orgCount(nil, t.Txn, TableWorkspaces, org.Name)
	if err != nil {
		return nil, err
	}
	if org.WorkspaceLimitReached(n) {
		return nil, state.Conflictf("organization %q has reached its workspace limit of %d", org.Name, *org.WorkspaceLimit)
	}
	projectID := ""
	if a.ProjectID != nil {
		projectID = *a.ProjectID
	}
	project, err := workspaceProject(t, org, projectID)
	if err != nil {
		return nil, err
	}
	if a.ToolVersion != nil {
		if err := checkWorkspaceToolVersion(t, org, *a.ToolVersion); err != nil {
			return nil, err
		}
	}
	created := mgmt.Time(req.CreatedAt)
	w := &mgmt.Workspace{ID: req.ID, OrganizationName: org.Name, CreatedAt: created, UpdatedAt: created,
		LatestChangeAt: created, InheritsProjectAutoDestroy: true}
	a.Apply(w, project)
	if err := w.CheckAgentPool(); err != nil {
		return nil, err
	}
	stampNew(t, &w.CreateIndex, &w.ModifyIndex)
	return w, insertCounted(t, TableWorkspaces, w.OrganizationName, w)
}

func requireWorkspace(t *writeTxn, id string) (*mgmt.Workspace, error) {
	return mustGetRow[mgmt.Workspace](t, TableWorkspaces, "workspace", id)
}

func applyWorkspaceUpdate(t *writeTxn, req *WorkspaceUpdateRequest) (any, error) {
	old, err := requireWorkspace(t, req.ID)
	if err != nil {
		return nil, err
	}
	a := &req.Attributes
	if err := a.Validate(false); err != nil {
		return nil, err
	}
	org, err := requireOrganization(t, old.OrganizationName)
	if err != nil {
		return nil, err
	}
	if a.Name != nil {
		if err := workspaceNameTaken(t, org.Name, *a.Name, old.ID); err != nil {
			return nil, err
		}
	}
	projectID := old.ProjectID
	if a.ProjectID != nil && *a.ProjectID != "" {
		projectID = *a.ProjectID
	}
	project, err := workspaceProject(t, org, projectID)
	if err != nil {
		return nil, err
	}
	if a.ToolVersion != nil && *a.ToolVersion != old.ToolVersion {
		if err := checkWorkspaceToolVersion(t, org, *a.ToolVersion); err != nil {
			return nil, err
		}
	}
	w := old.Copy()
	a.Apply(w, project)
	if err := w.CheckAgentPool(); err != nil {
		return nil, err
	}
	w.UpdatedAt = mgmt.Time(req.Now)
	w.ModifyIndex = t.index
	return w, t.insert(TableWorkspaces, w)
}

func applyWorkspaceDelete(t *writeTxn, req *WorkspaceDeleteRequest) (any, error) {
	w, err := requireWorkspace(t, req.ID)
	if err != nil {
		return nil, err
	}
	return nil, deleteWorkspaceRows(t, w)
}

// deleteWorkspaceRows deletes a workspace with its runs and state versions.
func deleteWorkspaceRows(t *writeTxn, w *mgmt.Workspace) error {
	runs, err := list[*mgmt.Run](nil, t.Txn, nil, TableRuns, indexMgWorkspace, w.ID)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := t.delete(TableRuns, r); err != nil {
			return err
		}
	}
	versions, err := list[*mgmt.StateVersion](nil, t.Txn, nil, TableStateVersions, indexMgWorkspace, w.ID)
	if err != nil {
		return err
	}
	for _, sv := range versions {
		if err := deleteStateVersion(t, sv); err != nil {
			return err
		}
	}
	if err := deleteConfigurationVersions(t, w.ID); err != nil {
		return err
	}
	return deleteCounted(t, TableWorkspaces, w.OrganizationName, w)
}

func applyWorkspaceLock(t *writeTxn, req *WorkspaceLockRequest) (any, error) {
	w, err := requireWorkspace(t, req.ID)
	if err != nil {
		return nil, err
	}
	if req.LockedBy == "" {
		return nil, state.Invalidf("LockedBy", "who locks the workspace is required")
	}
	if len(req.Reason) > mgmt.LockReasonMaxLen {
		return nil, state.Invalidf(mgmt.AttrPointer("reason"), "must be at most %d characters long", mgmt.LockReasonMaxLen)
	}
	if w.Locked {
		return nil, state.Conflictf("workspace %q is already locked by %s", w.ID, w.LockedBy)
	}
	c := w.Copy()
	c.Locked, c.LockedBy, c.LockReason = true, req.LockedBy, req.Reason
	c.UpdatedAt = mgmt.Time(req.Now)
	c.ModifyIndex = t.index
	return c, t.insert(TableWorkspaces, c)
}

func applyWorkspaceUnlock(t *writeTxn, req *WorkspaceUnlockRequest) (any, error) {
	w, err := requireWorkspace(t, req.ID)
	if err != nil {
		return nil, err
	}
	if !w.Locked {
		return nil, state.Conflictf("workspace %q is not locked", w.ID)
	}
	if !req.Force && w.LockedBy != req.By {
		return nil, state.Conflictf("workspace %q is locked by %s; only they, or a force unlock, may unlock it", w.ID, w.LockedBy)
	}
	c := w.Copy()
	c.Locked, c.LockedBy, c.LockReason = false, "", ""
	c.UpdatedAt = mgmt.Time(req.Now)
	c.ModifyIndex = t.index
	return c, t.insert(TableWorkspaces, c)
}
