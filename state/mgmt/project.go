package mgmt

import (
	"fmt"
	"github.com/schedhq/sched/state"
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
	v := &state.ValidationError{}
	switch {
	case p.Name != nil:
		if msg := ValidProjectName(*p.Name); msg != "" {
			v.Add(AttrPointer("name"), "%s", msg)
		}
	case create:
		v.Add(AttrPointer("name"), "is required")
	}
	if p.Description != nil {
		CheckMax(v, AttrPointer("description"), *p.Description, ProjectDescriptionMax)
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
func checkOverwrite(v *state.ValidationError, flag, attr string, overwrite *bool, value *string) {
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

func checkTagBindings(v *state.ValidationError, tags []TagBinding) {
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
		CheckMax(v, field+"/attributes/key", tb.Key, TagKeyMaxLen)
		CheckMax(v, field+"/attributes/value", tb.Value, TagValueMaxLen)
	}
}

// Apply changes p (a copy) as the patch says.
func (pp *ProjectPatch) Apply(p *Project) {
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

// CheckProjectResult checks what only the merged project shows: the agent
// execution mode needs an agent pool.
func CheckProjectResult(p *Project) error {
	if p.DefaultExecutionMode == ExecutionModeAgent && p.DefaultAgentPoolID == "" {
		return state.Invalidf(AttrPointer("default-agent-pool-id"), "is required when default-execution-mode is agent")
	}
	return nil
}
