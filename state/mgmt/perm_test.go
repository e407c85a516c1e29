package mgmt

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/schedhq/sched/state"
)

// The permission engine against the tables of the spec (§2): pure
// functions, no store.

// mgPermRows is the spec §2 table of implied permissions, transcribed cell
// by cell: levels read, write, maintain, admin, then the custom default.
// The variable-sets row is not in the spec (it comes from go-tfe): it is our
// documented choice (see ImpliedPermissions).
var mgPermRows = []struct {
	perm string
	get  func(TeamProjectPermissions) string
	want [5]string
}{
	{"project-access.settings", func(p TeamProjectPermissions) string { return p.Project.Settings },
		[5]string{"read", "read", "read", "delete", "read"}},
	{"project-access.teams", func(p TeamProjectPermissions) string { return p.Project.Teams },
		[5]string{"none", "none", "none", "manage", "none"}},
	{"workspace-access.runs", func(p TeamProjectPermissions) string { return p.Workspace.Runs },
		[5]string{"read", "apply", "apply", "apply", "read"}},
	{"workspace-access.gate-mocks", func(p TeamProjectPermissions) string { return p.Workspace.GateMocks },
		[5]string{"none", "read", "read", "read", "none"}},
	{"workspace-access.state-versions", func(p TeamProjectPermissions) string { return p.Workspace.StateVersions },
		[5]string{"read", "write", "write", "write", "none"}},
	{"workspace-access.variables", func(p TeamProjectPermissions) string { return p.Workspace.Variables },
		[5]string{"read", "write", "write", "write", "none"}},
	{"workspace-access.create", func(p TeamProjectPermissions) string { return strconv.FormatBool(p.Workspace.Create) },
		[5]string{"false", "false", "true", "true", "false"}},
	{"workspace-access.locking", func(p TeamProjectPermissions) string { return strconv.FormatBool(p.Workspace.Locking) },
		[5]string{"false", "true", "true", "true", "false"}},
	{"workspace-access.delete", func(p TeamProjectPermissions) string { return strconv.FormatBool(p.Workspace.Delete) },
		[5]string{"false", "false", "true", "true", "false"}},
	{"workspace-access.move", func(p TeamProjectPermissions) string { return strconv.FormatBool(p.Workspace.Move) },
		[5]string{"false", "false", "false", "true", "false"}},
	{"workspace-access.run-tasks", func(p TeamProjectPermissions) string { return strconv.FormatBool(p.Workspace.RunTasks) },
		[5]string{"false", "false", "true", "true", "false"}},
	{"project-access.variable-sets", func(p TeamProjectPermissions) string { return p.Project.VariableSets },
		[5]string{"none", "none", "none", "write", "none"}},
}

var mgLevels = [4]string{ProjectAccessRead, ProjectAccessWrite, ProjectAccessMaintain, ProjectAccessAdmin}

func TestPermImpliedTableEveryCell(t *testing.T) {
	for _, row := range mgPermRows {
		for i, level := range mgLevels {
			t.Run(row.perm+"/"+level, func(t *testing.T) {
				implied, ok := ImpliedPermissions(level)
				if !ok {
					t.Fatalf("ImpliedPermissions(%q) not ok", level)
				}
				if got := row.get(implied); got != row.want[i] {
					t.Errorf("%s under %s = %s, want %s", row.perm, level, got, row.want[i])
				}
				// The store keeps exactly the implied values for a named
				// level, as rule 1 says they are shown.
				stored, err := ResolveTeamProjectPermissions(level, nil, TeamProjectPermissionsPatch{})
				if err != nil || row.get(stored) != row.want[i] {
					t.Errorf("resolved %s under %s = %s (%v), want %s", row.perm, level, row.get(stored), err, row.want[i])
				}
			})
		}
		t.Run(row.perm+"/custom-default", func(t *testing.T) {
			if got := row.get(CustomDefaultPermissions()); got != row.want[4] {
				t.Errorf("custom default of %s = %s, want %s", row.perm, got, row.want[4])
			}
			resolved, err := ResolveTeamProjectPermissions(ProjectAccessCustom, nil, TeamProjectPermissionsPatch{})
			if err != nil || row.get(resolved) != row.want[4] {
				t.Errorf("custom record without %s resolves to %s (%v), want %s", row.perm, row.get(resolved), err, row.want[4])
			}
		})
	}
	for _, level := range []string{ProjectAccessCustom, "plan", "owner", ""} {
		if _, ok := ImpliedPermissions(level); ok {
			t.Errorf("ImpliedPermissions(%q) ok, want false", level)
		}
	}
}

// mgPatchAttrs lists every permission attribute of a team-project request,
// with a patch setting it to a valid non-default value and the pointer an
// error must name.
var mgPatchAttrs = []struct {
	pointer string
	patch   TeamProjectPermissionsPatch
	check   func(TeamProjectPermissions) bool
}{
	{"/data/attributes/project-access/settings", TeamProjectPermissionsPatch{Settings: mgPtr("update")},
		func(p TeamProjectPermissions) bool { return p.Project.Settings == "update" }},
	{"/data/attributes/project-access/teams", TeamProjectPermissionsPatch{Teams: mgPtr("read")},
		func(p TeamProjectPermissions) bool { return p.Project.Teams == "read" }},
	{"/data/attributes/project-access/variable-sets", TeamProjectPermissionsPatch{VariableSets: mgPtr("write")},
		func(p TeamProjectPermissions) bool { return p.Project.VariableSets == "write" }},
	{"/data/attributes/workspace-access/runs", TeamProjectPermissionsPatch{Runs: mgPtr("plan")},
		func(p TeamProjectPermissions) bool { return p.Workspace.Runs == "plan" }},
	{"/data/attributes/workspace-access/variables", TeamProjectPermissionsPatch{Variables: mgPtr("read")},
		func(p TeamProjectPermissions) bool { return p.Workspace.Variables == "read" }},
	{"/data/attributes/workspace-access/state-versions", TeamProjectPermissionsPatch{StateVersions: mgPtr("read-outputs")},
		func(p TeamProjectPermissions) bool { return p.Workspace.StateVersions == "read-outputs" }},
	{"/data/attributes/workspace-access/gate-mocks", TeamProjectPermissionsPatch{GateMocks: mgPtr("read")},
		func(p TeamProjectPermissions) bool { return p.Workspace.GateMocks == "read" }},
	{"/data/attributes/workspace-access/create", TeamProjectPermissionsPatch{Create: mgPtr(true)},
		func(p TeamProjectPermissions) bool { return p.Workspace.Create }},
	{"/data/attributes/workspace-access/move", TeamProjectPermissionsPatch{Move: mgPtr(true)},
		func(p TeamProjectPermissions) bool { return p.Workspace.Move }},
	{"/data/attributes/workspace-access/locking", TeamProjectPermissionsPatch{Locking: mgPtr(true)},
		func(p TeamProjectPermissions) bool { return p.Workspace.Locking }},
	{"/data/attributes/workspace-access/delete", TeamProjectPermissionsPatch{Delete: mgPtr(true)},
		func(p TeamProjectPermissions) bool { return p.Workspace.Delete }},
	{"/data/attributes/workspace-access/run-tasks", TeamProjectPermissionsPatch{RunTasks: mgPtr(true)},
		func(p TeamProjectPermissions) bool { return p.Workspace.RunTasks }},
}

// Rule 1: permission attributes are writable only for custom.
func TestPermAttributesWritableOnlyForCustom(t *testing.T) {
	for _, attr := range mgPatchAttrs {
		for _, level := range mgLevels {
			t.Run(level+attr.pointer, func(t *testing.T) {
				_, err := ResolveTeamProjectPermissions(level, nil, attr.patch)
				if !errors.Is(err, state.ErrInvalid) {
					t.Fatalf("error %v, want ErrInvalid", err)
				}
				if f := mgFields(err); len(f) != 1 || f[0] != attr.pointer {
					t.Errorf("error names %v, want [%s]", f, attr.pointer)
				}
			})
		}
		t.Run("custom"+attr.pointer, func(t *testing.T) {
			got, err := ResolveTeamProjectPermissions(ProjectAccessCustom, nil, attr.patch)
			if err != nil || !attr.check(got) {
				t.Errorf("custom with %s = %+v, %v", attr.pointer, got, err)
			}
			// Every other permission keeps its custom default.
			want := CustomDefaultPermissions()
			for _, other := range mgPatchAttrs {
				if other.pointer != attr.pointer && other.check(got) != other.check(want) {
					t.Errorf("setting %s changed %s", attr.pointer, other.pointer)
				}
			}
		})
	}
}

func TestPermResolveRejectsBadValues(t *testing.T) {
	tests := []struct {
		access  string
		patch   TeamProjectPermissionsPatch
		pointer string
	}{
		{"", TeamProjectPermissionsPatch{}, "/data/attributes/access"},
		{"plan", TeamProjectPermissionsPatch{}, "/data/attributes/access"},
		{"Admin", TeamProjectPermissionsPatch{}, "/data/attributes/access"},
		{"custom", TeamProjectPermissionsPatch{Settings: mgPtr("none")}, "/data/attributes/project-access/settings"},
		{"custom", TeamProjectPermissionsPatch{Teams: mgPtr("write")}, "/data/attributes/project-access/teams"},
		{"custom", TeamProjectPermissionsPatch{VariableSets: mgPtr("manage")}, "/data/attributes/project-access/variable-sets"},
		{"custom", TeamProjectPermissionsPatch{Runs: mgPtr("none")}, "/data/attributes/workspace-access/runs"},
		{"custom", TeamProjectPermissionsPatch{Variables: mgPtr("apply")}, "/data/attributes/workspace-access/variables"},
		{"custom", TeamProjectPermissionsPatch{StateVersions: mgPtr("outputs")}, "/data/attributes/workspace-access/state-versions"},
		{"custom", TeamProjectPermissionsPatch{GateMocks: mgPtr("write")}, "/data/attributes/workspace-access/gate-mocks"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s%s", tc.access, tc.pointer), func(t *testing.T) {
			_, err := ResolveTeamProjectPermissions(tc.access, nil, tc.patch)
			if f := mgFields(err); len(f) != 1 || f[0] != tc.pointer {
				t.Errorf("error %v names %v, want [%s]", err, f, tc.pointer)
			}
		})
	}
}

// An update to custom starts from the current custom permissions, or from
// the custom defaults when the record was not custom.
func TestPermCustomUpdateBase(t *testing.T) {
	current := &TeamProject{Access: ProjectAccessCustom, Permissions: CustomDefaultPermissions()}
	current.Permissions.Workspace.Create = true
	got, err := ResolveTeamProjectPermissions(ProjectAccessCustom, current, TeamProjectPermissionsPatch{Locking: mgPtr(true)})
	if err != nil || !got.Workspace.Create || !got.Workspace.Locking {
		t.Errorf("custom→custom = %+v, %v; want create kept and locking set", got.Workspace, err)
	}
	admin := &TeamProject{Access: ProjectAccessAdmin}
	admin.Permissions, _ = ImpliedPermissions(ProjectAccessAdmin)
	got, err = ResolveTeamProjectPermissions(ProjectAccessCustom, admin, TeamProjectPermissionsPatch{Locking: mgPtr(true)})
	if err != nil || got.Workspace.Create || !got.Workspace.Locking || got.Project.Settings != PermRead {
		t.Errorf("admin→custom = %+v, %v; want the custom defaults plus locking", got, err)
	}
	got, err = ResolveTeamProjectPermissions(ProjectAccessRead, current, TeamProjectPermissionsPatch{})
	if implied, _ := ImpliedPermissions(ProjectAccessRead); err != nil || got != implied {
		t.Errorf("custom→read = %+v, %v; want the implied read permissions", got, err)
	}
}

func TestPermUnionTakesTheHigherValue(t *testing.T) {
	read, _ := ImpliedPermissions(ProjectAccessRead)
	custom := CustomDefaultPermissions()
	custom.Workspace.Create = true
	custom.Workspace.StateVersions = PermReadOutputs
	got := read.Union(custom)
	if got.Workspace.StateVersions != PermRead || !got.Workspace.Create || got.Workspace.Variables != PermRead {
		t.Errorf("read ∪ custom = %+v", got.Workspace)
	}
	if got != custom.Union(read) {
		t.Error("Union is not symmetric")
	}
	var zero TeamProjectPermissions
	if zero.Union(read) != read {
		t.Error("the zero permissions are not the identity of Union")
	}
}
