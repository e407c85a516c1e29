package state

// WorkspacePatch carries a workspace's writable attributes, for create and
// update; nil keeps the current value (or the default, on create).
//
// Auto-destroy: a non-empty AutoDestroyActivityDuration is the workspace's
// own override; "" (JSON null) removes it and leaves the workspace without
// auto-destroy; InheritsProjectAutoDestroy true returns to the project's
// duration. A new workspace without either inherits its project's.
type WorkspacePatch struct {
	Name        *string
	Description *string
	// ProjectID moves the workspace (relationships.project); on create ""
	// or nil means the organization's Default Project.
	ProjectID *string
	// ToolVersion is the version string of an enabled tool version; ""
	// means none.
	ToolVersion                 *string
	AutoDestroyActivityDuration *string
	InheritsProjectAutoDestroy  *bool
	// VCSRepo links a repository; RemoveVCSRepo (JSON null) unlinks it.
	VCSRepo       *WorkspaceVCSRepo
	RemoveVCSRepo bool
}

// Validate checks the patch, naming attributes by JSON pointer; create
// requires a name.
func (p *WorkspacePatch) Validate(create bool) error {
	v := &ValidationError{}
	switch {
	case p.Name != nil:
		if msg := validSlug(*p.Name, WorkspaceNameMaxLen); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Description != nil {
		checkMax(v, AttrPointer("description"), *p.Description, WorkspaceDescMax)
	}
	if p.ProjectID != nil && *p.ProjectID != "" {
		checkID(v, RelPointer("project"), PrefixProject, *p.ProjectID)
	}
	if p.ToolVersion != nil && *p.ToolVersion != "" {
		if msg := ValidVersion(*p.ToolVersion); msg != "" {
			v.Add(AttrPointer("tool-version"), "%s", msg)
		}
	}
	d := p.AutoDestroyActivityDuration
	if d != nil && *d != "" {
		if msg := ValidAutoDestroyDuration(*d); msg != "" {
			v.Add(AttrPointer("auto-destroy-activity-duration"), "%s", msg)
		}
	}
	if p.InheritsProjectAutoDestroy != nil && *p.InheritsProjectAutoDestroy && d != nil && *d != "" {
		v.Add(AttrPointer("inherits-project-auto-destroy"), "true conflicts with the auto-destroy-activity-duration the request also sets")
	}
	if p.VCSRepo != nil {
		if p.RemoveVCSRepo {
			v.Add(AttrPointer("vcs-repo"), "cannot both set and remove the repository")
		}
		if p.VCSRepo.Identifier == "" {
			v.Add(AttrPointer("vcs-repo/identifier"), "is required")
		}
		checkMax(v, AttrPointer("vcs-repo/identifier"), p.VCSRepo.Identifier, 255)
	}
	return v.Err()
}

// apply changes w (a copy) as the patch says, given w's project after the
// patch. Project moves and tool versions are checked by the caller.
func (p *WorkspacePatch) apply(w *Workspace, project *Project) {
	if p.Name != nil {
		w.Name = *p.Name
	}
	if p.Description != nil {
		w.Description = *p.Description
	}
	w.ProjectID = project.ID
	if p.ToolVersion != nil {
		w.ToolVersion = *p.ToolVersion
	}
	switch {
	case p.AutoDestroyActivityDuration != nil:
		w.AutoDestroyActivityDuration = *p.AutoDestroyActivityDuration
		w.InheritsProjectAutoDestroy = false
	case p.InheritsProjectAutoDestroy != nil:
		w.InheritsProjectAutoDestroy = *p.InheritsProjectAutoDestroy
	}
	if w.InheritsProjectAutoDestroy {
		w.AutoDestroyActivityDuration = project.AutoDestroyActivityDuration
	}
	if p.VCSRepo != nil {
		w.VCSRepo = clonePtr(p.VCSRepo)
	}
	if p.RemoveVCSRepo {
		w.VCSRepo = nil
	}
}

// checkWorkspaceToolVersion checks that version names an enabled tool
// version that org may use (beta versions need access-beta-tools).
func checkWorkspaceToolVersion(t *writeTxn, org *Organization, version string) error {
	if version == "" {
		return nil
	}
	tv, err := toolVersionByVersion(nil, t.Txn, VersionFamilyTool, version)
	if err != nil {
		return err
	}
	switch {
	case tv == nil:
		return Invalidf(AttrPointer("tool-version"), "tool version %q does not exist", version)
	case !tv.Enabled:
		return Invalidf(AttrPointer("tool-version"), "tool version %q is disabled", version)
	case tv.Beta && !org.AccessBetaTools:
		return Invalidf(AttrPointer("tool-version"), "tool version %q is a beta and organization %q may not use beta versions", version, org.Name)
	}
	return nil
}

// workspaceProject returns the project a workspace of org goes to: id, or
// the organization's Default Project when id is "".
func workspaceProject(t *writeTxn, org *Organization, id string) (*Project, error) {
	if id == "" {
		id = org.DefaultProjectID
	}
	p, err := getRow[*Project](t, TableProjects, id)
	if err != nil {
		return nil, err
	}
	if p == nil || p.OrganizationName != org.Name {
		return nil, NotFoundf("project %q not found in organization %q", id, org.Name)
	}
	return p, nil
}

func workspaceNameTaken(t *writeTxn, org, name, selfID string) error {
	taken, err := nameTaken(t, TableWorkspaces, org, name, func(x *Workspace) string { return x.ID }, selfID)
	if err != nil {
		return err
	}
	if taken {
		return Invalidf(AttrPointer("name"), "has already been taken in organization %q", org)
	}
	return nil
}

func applyWorkspaceCreate(t *writeTxn, req *WorkspaceCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &ValidationError{}
	checkID(v, "ID", PrefixWorkspace, req.ID)
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
		return nil, Conflictf("organization %q has reached its workspace limit of %d", org.Name, *org.WorkspaceLimit)
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
	created := MgmtTime(req.CreatedAt)
	w := &Workspace{ID: req.ID, OrganizationName: org.Name, CreatedAt: created, UpdatedAt: created,
		LatestChangeAt: created, InheritsProjectAutoDestroy: true}
	a.apply(w, project)
	stampNew(t, &w.CreateIndex, &w.ModifyIndex)
	return w, insertCounted(t, TableWorkspaces, w.OrganizationName, w)
}

func requireWorkspace(t *writeTxn, id string) (*Workspace, error) {
	return mustGetRow[Workspace](t, TableWorkspaces, "workspace", id)
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
	a.apply(w, project)
	w.UpdatedAt = MgmtTime(req.Now)
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
func deleteWorkspaceRows(t *writeTxn, w *Workspace) error {
	runs, err := list[*Run](nil, t.Txn, nil, TableRuns, indexMgWorkspace, w.ID)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := t.delete(TableRuns, r); err != nil {
			return err
		}
	}
	versions, err := list[*StateVersion](nil, t.Txn, nil, TableStateVersions, indexMgWorkspace, w.ID)
	if err != nil {
		return err
	}
	for _, sv := range versions {
		if err := t.delete(TableStateVersions, sv); err != nil {
			return err
		}
	}
	return deleteCounted(t, TableWorkspaces, w.OrganizationName, w)
}

func applyWorkspaceLock(t *writeTxn, req *WorkspaceLockRequest) (any, error) {
	w, err := requireWorkspace(t, req.ID)
	if err != nil {
		return nil, err
	}
	if req.LockedBy == "" {
		return nil, Invalidf("LockedBy", "who locks the workspace is required")
	}
	if len(req.Reason) > LockReasonMaxLen {
		return nil, Invalidf(AttrPointer("reason"), "must be at most %d characters long", LockReasonMaxLen)
	}
	if w.Locked {
		return nil, Conflictf("workspace %q is already locked by %s", w.ID, w.LockedBy)
	}
	c := w.Copy()
	c.Locked, c.LockedBy, c.LockReason = true, req.LockedBy, req.Reason
	c.UpdatedAt = MgmtTime(req.Now)
	c.ModifyIndex = t.index
	return c, t.insert(TableWorkspaces, c)
}

func applyWorkspaceUnlock(t *writeTxn, req *WorkspaceUnlockRequest) (any, error) {
	w, err := requireWorkspace(t, req.ID)
	if err != nil {
		return nil, err
	}
	if !w.Locked {
		return nil, Conflictf("workspace %q is not locked", w.ID)
	}
	if !req.Force && w.LockedBy != req.By {
		return nil, Conflictf("workspace %q is locked by %s; only they, or a force unlock, may unlock it", w.ID, w.LockedBy)
	}
	c := w.Copy()
	c.Locked, c.LockedBy, c.LockReason = false, "", ""
	c.UpdatedAt = MgmtTime(req.Now)
	c.ModifyIndex = t.index
	return c, t.insert(TableWorkspaces, c)
}
