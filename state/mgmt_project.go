package state

import (
	"fmt"
	"time"
)

// ProjectPatch carries a project's writable attributes, for create and
// update; nil keeps the current value (or the default, on create).
//
// On update an absent auto-destroy-activity-duration keeps the current
// one, as for name and description: clearing it takes an explicit null
// (""), since a clear propagates to every inheriting workspace.
type ProjectPatch struct {
	Name *string
	// Description "" (or JSON null) means none.
	Description *string
	// AutoDestroyActivityDuration "" (or JSON null) means none.
	AutoDestroyActivityDuration *string
	// TagBindings replaces the project's tag bindings when not nil.
	TagBindings *[]TagBinding
	// DefaultExecutionMode "" returns to the organization's default.
	DefaultExecutionMode *string
	DefaultAgentPoolID   *string
	// SettingOverwrites false clears the project's own value of that
	// setting; true must come with a value (as go-tfe documents).
	SettingOverwrites *ProjectSettingOverwritesPatch
}

// ProjectSettingOverwritesPatch is the writable form of setting-overwrites.
type ProjectSettingOverwritesPatch struct {
	ExecutionMode *bool
	AgentPool     *bool
}

// Validate checks the patch, naming attributes by JSON pointer; create
// requires a name.
func (p *ProjectPatch) Validate(create bool) error {
	v := &ValidationError{}
	switch {
	case p.Name != nil:
		if msg := ValidProjectName(*p.Name); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Description != nil {
		checkMax(v, AttrPointer("description"), *p.Description, ProjectDescriptionMax)
	}
	if p.AutoDestroyActivityDuration != nil && *p.AutoDestroyActivityDuration != "" {
		if msg := ValidAutoDestroyDuration(*p.AutoDestroyActivityDuration); msg != "" {
			v.Add(AttrPointer("auto-destroy-activity-duration"), "%s", msg)
		}
	}
	if p.TagBindings != nil {
		checkTagBindings(v, *p.TagBindings)
	}
	if m := p.DefaultExecutionMode; m != nil && *m != "" && *m != ExecutionModeRemote && *m != ExecutionModeLocal && *m != ExecutionModeAgent {
		v.Add(AttrPointer("default-execution-mode"), "%q is not one of remote, local, agent", *m)
	}
	if o := p.SettingOverwrites; o != nil {
		checkOverwrite(v, "execution-mode", "default-execution-mode", o.ExecutionMode, p.DefaultExecutionMode)
		checkOverwrite(v, "agent-pool", "default-agent-pool-id", o.AgentPool, p.DefaultAgentPoolID)
	}
	return v.Err()
}

// checkOverwrite checks one setting-overwrites flag against the value sent
// with it: false with a value, or true without one, contradict.
func checkOverwrite(v *ValidationError, flag, attr string, overwrite *bool, value *string) {
	if overwrite == nil {
		return
	}
	hasValue := value != nil && *value != ""
	switch {
	case *overwrite && !hasValue:
		v.Add(AttrPointer("setting-overwrites/"+flag), "true needs a value of %s in the same request", attr)
	case !*overwrite && hasValue:
		v.Add(AttrPointer("setting-overwrites/"+flag), "false clears %s, which the request also sets", attr)
	}
}

func checkTagBindings(v *ValidationError, tags []TagBinding) {
	if len(tags) > maxTagBindings {
		v.Add(RelPointer("tag-bindings"), "at most %d tag bindings, got %d", maxTagBindings, len(tags))
	}
	seen := map[string]bool{}
	for i, tb := range tags {
		field := fmt.Sprintf("/data/relationships/tag-bindings/data/%d", i)
		switch {
		case tb.Key == "":
			v.Add(field+"/attributes/key", "is required")
		case seen[tb.Key]:
			v.Add(field+"/attributes/key", "key %q is bound twice", tb.Key)
		}
		seen[tb.Key] = true
		checkMax(v, field+"/attributes/key", tb.Key, TagKeyMaxLen)
		checkMax(v, field+"/attributes/value", tb.Value, TagValueMaxLen)
	}
}

// apply changes p (a copy) as the patch says.
func (pp *ProjectPatch) apply(p *Project) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&p.Name, pp.Name)
	set(&p.Description, pp.Description)
	set(&p.AutoDestroyActivityDuration, pp.AutoDestroyActivityDuration)
	set(&p.DefaultExecutionMode, pp.DefaultExecutionMode)
	set(&p.DefaultAgentPoolID, pp.DefaultAgentPoolID)
	if pp.TagBindings != nil {
		p.TagBindings = append([]TagBinding(nil), (*pp.TagBindings)...)
	}
	if o := pp.SettingOverwrites; o != nil {
		if o.ExecutionMode != nil && !*o.ExecutionMode {
			p.DefaultExecutionMode = ""
		}
		if o.AgentPool != nil && !*o.AgentPool {
			p.DefaultAgentPoolID = ""
		}
	}
}

// checkProjectResult checks what only the merged project shows: the agent
// execution mode needs an agent pool.
func checkProjectResult(p *Project) error {
	if p.DefaultExecutionMode == ExecutionModeAgent && p.DefaultAgentPoolID == "" {
		return Invalidf(AttrPointer("default-agent-pool-id"), "is required when default-execution-mode is agent")
	}
	return nil
}

func requireProject(t *writeTxn, id string) (*Project, error) {
	return mustGetRow[Project](t, TableProjects, "project", id)
}

func projectNameTaken(t *writeTxn, org, name, selfID string) error {
	taken, err := nameTaken(t, TableProjects, org, name, func(x *Project) string { return x.ID }, selfID)
	if err != nil {
		return err
	}
	if taken {
		return Invalidf(AttrPointer("name"), "has already been taken in organization %q", org)
	}
	return nil
}

func applyProjectCreate(t *writeTxn, req *ProjectCreateRequest) (any, error) {
	org, err := requireOrganization(t, req.OrganizationName)
	if err != nil {
		return nil, err
	}
	v := &ValidationError{}
	checkID(v, "ID", PrefixProject, req.ID)
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
	p := &Project{ID: req.ID, OrganizationName: org.Name, CreatedAt: MgmtTime(req.CreatedAt)}
	req.Attributes.apply(p)
	if err := checkProjectResult(p); err != nil {
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
	req.Attributes.apply(p)
	if err := checkProjectResult(p); err != nil {
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
func propagateAutoDestroy(t *writeTxn, p *Project, now time.Time) error {
	workspaces, err := list[*Workspace](nil, t.Txn, func(w *Workspace) bool {
		return w.InheritsProjectAutoDestroy && w.AutoDestroyActivityDuration != p.AutoDestroyActivityDuration
	}, TableWorkspaces, indexMgProject, p.ID)
	if err != nil {
		return err
	}
	for _, w := range workspaces {
		c := w.Copy()
		c.AutoDestroyActivityDuration = p.AutoDestroyActivityDuration
		c.UpdatedAt = MgmtTime(now)
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
		return nil, Conflictf("project %q is the organization's default project and cannot be deleted", p.ID)
	}
	n, err := countRows(t.Txn, TableWorkspaces, indexMgProject, p.ID)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, Conflictf("project %q still contains %d workspaces; move or delete them first", p.ID, n)
	}
	return nil, deleteProjectRows(t, p)
}

// deleteProjectRows deletes a project and its team access (not its
// workspaces: callers check there are none, or delete them first).
func deleteProjectRows(t *writeTxn, p *Project) error {
	records, err := list[*TeamProject](nil, t.Txn, nil, TableTeamProjects, indexMgProject, p.ID)
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
		w, err := getRow[*Workspace](t, TableWorkspaces, id)
		if err != nil {
			return nil, err
		}
		if w == nil || w.OrganizationName != dst.OrganizationName {
			return nil, NotFoundf("workspace %q not found in organization %q", id, dst.OrganizationName)
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
func moveWorkspace(t *writeTxn, w *Workspace, dst *Project, now time.Time) error {
	c := w.Copy()
	c.ProjectID = dst.ID
	if c.InheritsProjectAutoDestroy {
		c.AutoDestroyActivityDuration = dst.AutoDestroyActivityDuration
	}
	c.UpdatedAt = MgmtTime(now)
	c.ModifyIndex = t.index
	return t.insert(TableWorkspaces, c)
}
