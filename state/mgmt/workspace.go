package mgmt

import "github.com/schedhq/sched/state"

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
	// ExecutionMode is remote, local or agent; "" (JSON null) returns to
	// the project's default. AgentPoolID goes with agent.
	ExecutionMode *string
	AgentPoolID   *string
}

// Validate checks the patch, naming attributes by JSON pointer; create
// requires a name.
func (p *WorkspacePatch) Validate(create bool) error {
	v := &state.ValidationError{}
	switch {
	case p.Name != nil:
		if msg := ValidSlug(*p.Name, WorkspaceNameMaxLen); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Description != nil {
		CheckMax(v, AttrPointer("description"), *p.Description, WorkspaceDescMax)
	}
	if p.ProjectID != nil && *p.ProjectID != "" {
		CheckID(v, RelPointer("project"), PrefixProject, *p.ProjectID)
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
		CheckMax(v, AttrPointer("vcs-repo/identifier"), p.VCSRepo.Identifier, 255)
	}
	if p.ExecutionMode != nil && *p.ExecutionMode != "" {
		if msg := ValidExecutionMode(*p.ExecutionMode); msg != "" {
			v.Add(AttrPointer("execution-mode"), "%s", msg)
		}
	}
	if p.AgentPoolID != nil {
		CheckMax(v, AttrPointer("agent-pool-id"), *p.AgentPoolID, 64)
	}
	return v.Err()
}

// Apply changes w (a copy) as the patch says, given w's project after the
// patch. Project moves and tool versions are checked by the caller.
func (p *WorkspacePatch) Apply(w *Workspace, project *Project) {
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
		w.VCSRepo = state.ClonePtr(p.VCSRepo)
	}
	if p.RemoveVCSRepo {
		w.VCSRepo = nil
	}
	if p.ExecutionMode != nil {
		w.ExecutionMode = *p.ExecutionMode
	}
	if p.AgentPoolID != nil {
		w.AgentPoolID = *p.AgentPoolID
	}
	if w.ExecutionMode != ExecutionModeAgent {
		w.AgentPoolID = ""
	}
}

// CheckAgentPool reports the 422 of a workspace left in agent mode without
// an agent pool, nil otherwise.
func (w *Workspace) CheckAgentPool() error {
	if w.ExecutionMode == ExecutionModeAgent && w.AgentPoolID == "" {
		return state.Invalidf(AttrPointer("agent-pool-id"), "is required when execution-mode is agent")
	}
	return nil
}
