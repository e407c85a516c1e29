package mgmt

import (
	"github.com/schedhq/sched/state"
	"slices"
	"strings"
)

// TeamProjectPermissionsPatch carries the `project-access` and
// `workspace-access` attributes of a team-project request; nil means not
// sent. They may be sent only with access custom (spec §2 rule 1).
type TeamProjectPermissionsPatch struct {
	Settings      *string
	Teams         *string
	VariableSets  *string
	Runs          *string
	Variables     *string
	StateVersions *string
	GateMocks     *string
	Create        *bool
	Move          *bool
	Locking       *bool
	Delete        *bool
	RunTasks      *bool
}

// permField ties one attribute of the patch to its place in
// TeamProjectPermissions. Exactly one of (str, dstStr) and (flag,
// dstFlag) is set.
type permField struct {
	attr    string
	scale   []string
	str     *string
	dstStr  *string
	flag    *bool
	dstFlag *bool
}

func (p *TeamProjectPermissionsPatch) fields(d *TeamProjectPermissions) []permField {
	return []permField{
		{attr: "project-access/settings", scale: scaleSettings, str: p.Settings, dstStr: &d.Project.Settings},
		{attr: "project-access/teams", scale: scaleTeams, str: p.Teams, dstStr: &d.Project.Teams},
		{attr: "project-access/variable-sets", scale: scaleVariableSets, str: p.VariableSets, dstStr: &d.Project.VariableSets},
		{attr: "workspace-access/runs", scale: scaleRuns, str: p.Runs, dstStr: &d.Workspace.Runs},
		{attr: "workspace-access/variables", scale: scaleVariables, str: p.Variables, dstStr: &d.Workspace.Variables},
		{attr: "workspace-access/state-versions", scale: scaleStateVersions, str: p.StateVersions, dstStr: &d.Workspace.StateVersions},
		{attr: "workspace-access/gate-mocks", scale: scaleGateMocks, str: p.GateMocks, dstStr: &d.Workspace.GateMocks},
		{attr: "workspace-access/create", flag: p.Create, dstFlag: &d.Workspace.Create},
		{attr: "workspace-access/move", flag: p.Move, dstFlag: &d.Workspace.Move},
		{attr: "workspace-access/locking", flag: p.Locking, dstFlag: &d.Workspace.Locking},
		{attr: "workspace-access/delete", flag: p.Delete, dstFlag: &d.Workspace.Delete},
		{attr: "workspace-access/run-tasks", flag: p.RunTasks, dstFlag: &d.Workspace.RunTasks},
	}
}

// ResolveTeamProjectPermissions validates a team-project's access level and
// permission attributes and returns the permissions the record will hold:
// the implied ones for read, write, maintain and admin; for custom, the
// attributes sent over a base that is the record's current permissions when
// it is already custom (current may be nil), and the custom defaults
// otherwise. Permission attributes with any level but custom are a 422
// naming each one (spec §2 rule 1).
func ResolveTeamProjectPermissions(access string, current *TeamProject, patch TeamProjectPermissionsPatch) (TeamProjectPermissions, error) {
	v := &state.ValidationError{}
	implied, named := ImpliedPermissions(access)
	switch {
	case access == "":
		v.Add(AttrPointer("access"), "is required")
	case access != ProjectAccessCustom && !named:
		v.Add(AttrPointer("access"), "%q is not one of %s", access, strings.Join(ProjectAccessLevels(), ", "))
	}
	var out TeamProjectPermissions
	if access == ProjectAccessCustom {
		out = CustomDefaultPermissions()
		if current != nil && current.Access == ProjectAccessCustom {
			out = current.Permissions
		}
	}
	for _, f := range patch.fields(&out) {
		if f.str == nil && f.flag == nil {
			continue
		}
		if access != ProjectAccessCustom {
			v.Add(AttrPointer(f.attr), "can be set only when access is custom")
			continue
		}
		if f.str != nil {
			if !slices.Contains(f.scale, *f.str) {
				v.Add(AttrPointer(f.attr), "%q is not one of %s", *f.str, strings.Join(f.scale, ", "))
				continue
			}
			*f.dstStr = *f.str
		} else {
			*f.dstFlag = *f.flag
		}
	}
	if err := v.Err(); err != nil {
		return TeamProjectPermissions{}, err
	}
	if access != ProjectAccessCustom {
		return implied, nil
	}
	return out, nil
}
