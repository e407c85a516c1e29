package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

func mgProjectNames(l *ProjectList) []string {
	var out []string
	for _, e := range l.Items {
		out = append(out, e.Project.Name)
	}
	return out
}

func TestProjectListFiltersSortsAndCounts(t *testing.T) {
	e := mgOrgFixture(t) // Default Project, then "web"
	e.project("prj-api", "acme", "API Gateway", "")
	e.project("prj-data", "acme", "data", "")
	e.project("prj-zeta", "acme", "zeta web", "")
	e.workspace("ws-1", "acme", "prj-data", "one")
	e.workspace("ws-2", "acme", "prj-data", "two")
	e.teamProject("tprj-1", "team-dev", "prj-data", mgmt.ProjectAccessMaintain, mgmt.TeamProjectPermissionsPatch{})
	e.teamProject("tprj-2", "team-dev", "prj-api", mgmt.ProjectAccessCustom, mgmt.TeamProjectPermissionsPatch{Settings: mgPtr(mgmt.PermUpdate)})
	owner := e.authority(mgmt.CallerUser, "user-owner", "acme")
	dev := e.authority(mgmt.CallerUser, "user-dev", "acme")
	list := func(a *mgmt.OrgAuthority, o ProjectListOptions) *ProjectList {
		t.Helper()
		l, err := e.s.ListProjects(nil, a, o)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tests := []struct {
		name            string
		a               *mgmt.OrgAuthority
		opts            ProjectListOptions
		want            []string
		total, matching int
	}{
		{"default order is creation order", owner, ProjectListOptions{}, []string{"Default Project", "web", "API Gateway", "data", "zeta web"}, 5, 5},
		{"sort by name ignores case", owner, ProjectListOptions{Sort: "name"}, []string{"API Gateway", "data", "Default Project", "web", "zeta web"}, 5, 5},
		{"reverse name", owner, ProjectListOptions{Sort: "-name"}, []string{"zeta web", "web", "Default Project", "data", "API Gateway"}, 5, 5},
		{"q is a case-insensitive substring", owner, ProjectListOptions{Query: "WEB"}, []string{"web", "zeta web"}, 5, 2},
		{"filter[names] wins over q", owner, ProjectListOptions{Query: "web", Names: []string{"DATA", "api gateway", "nope"}},
			[]string{"API Gateway", "data"}, 5, 2},
		{"paging", owner, ProjectListOptions{Sort: "name", Page: Page{Number: 2, Size: 2}}, []string{"Default Project", "web"}, 5, 5},
		{"past the end", owner, ProjectListOptions{Page: Page{Number: 9, Size: 2}}, nil, 5, 5},
		{"member sees only its projects", dev, ProjectListOptions{}, []string{"API Gateway", "data"}, 2, 2},
		{"create-workspace filter", dev, ProjectListOptions{CanCreateWorkspace: true}, []string{"data"}, 2, 1},
		{"update filter", dev, ProjectListOptions{CanUpdate: true}, []string{"API Gateway"}, 2, 1},
		{"member names", dev, ProjectListOptions{Names: []string{"DATA", "web"}}, []string{"data"}, 2, 1},
		{"member q", dev, ProjectListOptions{Query: "a", Sort: "-name"}, []string{"data", "API Gateway"}, 2, 2},
		{"owner names by name", owner, ProjectListOptions{Names: []string{"zeta web", "data", "web"}, Sort: "-name"},
			[]string{"zeta web", "web", "data"}, 5, 3},
		{"owner names in creation order", owner, ProjectListOptions{Names: []string{"zeta web", "data", "web"}},
			[]string{"web", "data", "zeta web"}, 5, 3},
		{"both filters", dev, ProjectListOptions{CanUpdate: true, CanCreateWorkspace: true}, nil, 2, 0},
		{"manage workspaces sees all", e.authority(mgmt.CallerUser, "user-mw", "acme"), ProjectListOptions{CanUpdate: true}, nil, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := list(tc.a, tc.opts)
			if got := mgProjectNames(l); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("names = %q, want %q", got, tc.want)
			}
			if l.Total != tc.total || l.Matching != tc.matching {
				t.Errorf("total/matching = %d/%d, want %d/%d", l.Total, l.Matching, tc.total, tc.matching)
			}
		})
	}
	l := list(dev, ProjectListOptions{Names: []string{"data"}})
	if e0 := l.Items[0]; e0.WorkspaceCount != 2 || e0.TeamCount != 1 || !e0.Access.CanCreateWorkspace() || e0.Access.CanUpdate() {
		t.Errorf("data entry = counts %d/%d access %+v", e0.WorkspaceCount, e0.TeamCount, e0.Access)
	}
	if _, err := e.s.ListProjects(nil, owner, ProjectListOptions{Sort: "created"}); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("bad sort: %v", err)
	}
	if _, err := e.s.ListProjects(nil, e.authority(mgmt.CallerUser, "user-outsider", "acme"), ProjectListOptions{}); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("outsider listing: %v", err)
	}
	// A blocking list wakes when a project is added.
	ws := memdb.NewWatchSet()
	list2, err := e.s.ListProjects(ws, owner, ProjectListOptions{})
	if err != nil || stFired(ws) {
		t.Fatalf("list %v, fired early %v", err, stFired(ws))
	}
	e.project("prj-new", "acme", "newest", "")
	if !stFired(ws) || list2.Total != 5 {
		t.Error("the watch set did not fire on a new project")
	}
}

func TestTeamProjectListVisibility(t *testing.T) {
	e := mgOrgFixture(t)
	e.teamProject("tprj-open", "team-dev", "prj-web", mgmt.ProjectAccessRead, mgmt.TeamProjectPermissionsPatch{})
	e.teamProject("tprj-secret", "team-secret", "prj-web", mgmt.ProjectAccessWrite, mgmt.TeamProjectPermissionsPatch{})
	e.teamProject("tprj-mp", "team-mp", "prj-web", mgmt.ProjectAccessRead, mgmt.TeamProjectPermissionsPatch{})
	ids := func(user string, page Page) ([]string, int) {
		l, err := e.s.ListTeamProjects(nil, e.authority(mgmt.CallerUser, user, "acme"), "prj-web", page)
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		var out []string
		for _, r := range l.Items {
			out = append(out, r.ID)
		}
		return out, l.Matching
	}
	for _, tc := range []struct {
		user string
		want []string
	}{
		{"user-owner", []string{"tprj-open", "tprj-secret", "tprj-mp"}},
		{"user-mp", []string{"tprj-open", "tprj-secret", "tprj-mp"}}, // manage projects: project admin
		{"user-dev", []string{"tprj-open"}},
		{"user-secret", []string{"tprj-open", "tprj-secret"}},
		{"user-rp", []string{"tprj-open"}},
	} {
		if got, n := ids(tc.user, Page{}); !reflect.DeepEqual(got, tc.want) || n != len(tc.want) {
			t.Errorf("%s sees %v (%d), want %v", tc.user, got, n, tc.want)
		}
	}
	if got, n := ids("user-owner", Page{Number: 2, Size: 2}); !reflect.DeepEqual(got, []string{"tprj-mp"}) || n != 3 {
		t.Errorf("page 2 = %v of %d", got, n)
	}
	if _, err := e.s.ListTeamProjects(nil, e.authority(mgmt.CallerUser, "user-outsider", "acme"), "prj-web", Page{}); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("outsider: %v", err)
	}
	if _, err := e.s.ListTeamProjects(nil, e.authority(mgmt.CallerUser, "user-owner", "acme"), "prj-ghost", Page{}); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("unknown project: %v", err)
	}
}

func TestAdminWorkspaceList(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.org("bolt", "")
	e.workspace("ws-1", "acme", "", "zeta")
	e.workspace("ws-2", "acme", "", "alpha")
	e.workspace("ws-3", "bolt", "", "Mid")
	e.workspace("ws-4", "bolt", "", "acme-mirror")
	runAt := func(id, ws string, at time.Time, steps ...string) {
		e.apply(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: id, WorkspaceID: ws, CreatedAt: at}})
		for _, s := range steps {
			e.apply(RunAdvanceRequestType, &RunAdvanceRequest{ID: id, Status: s})
		}
	}
	runAt("run-1", "ws-1", mgT0.Add(3*time.Hour), mgmt.RunPlanning, mgmt.RunPlanned)
	runAt("run-2", "ws-2", mgT0.Add(1*time.Hour))
	runAt("run-3", "ws-3", mgT0.Add(2*time.Hour), mgmt.RunPlanning, mgmt.RunErrored)
	e.apply(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-4", LockedBy: "user-x"})
	e.apply(StateVersionCreateRequestType, &StateVersionCreateRequest{StateVersion: &mgmt.StateVersion{ID: "sv-1", WorkspaceID: "ws-4", CreatedAt: mgT0.Add(10 * time.Hour)}})
	list := func(o AdminWorkspaceListOptions) ([]string, *AdminWorkspaceList) {
		t.Helper()
		l, err := e.s.ListAdminWorkspaces(nil, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range l.Items {
			out = append(out, it.Workspace.ID)
		}
		return out, l
	}
	tests := []struct {
		name string
		opts AdminWorkspaceListOptions
		want []string
	}{
		{"default creation order", AdminWorkspaceListOptions{}, []string{"ws-1", "ws-2", "ws-3", "ws-4"}},
		{"name", AdminWorkspaceListOptions{Sort: "name"}, []string{"ws-4", "ws-2", "ws-3", "ws-1"}},
		{"-name", AdminWorkspaceListOptions{Sort: "-name"}, []string{"ws-1", "ws-3", "ws-2", "ws-4"}},
		{"current run created", AdminWorkspaceListOptions{Sort: "current-run.created-at"}, []string{"ws-4", "ws-2", "ws-3", "ws-1"}},
		{"-current run created", AdminWorkspaceListOptions{Sort: "-current-run.created-at"}, []string{"ws-1", "ws-3", "ws-2", "ws-4"}},
		{"latest change", AdminWorkspaceListOptions{Sort: "latest-change-at"}, []string{"ws-1", "ws-2", "ws-3", "ws-4"}},
		{"-latest change", AdminWorkspaceListOptions{Sort: "-latest-change-at"}, []string{"ws-4", "ws-3", "ws-2", "ws-1"}},
		{"q matches workspace or organization name", AdminWorkspaceListOptions{Query: "ACME"}, []string{"ws-1", "ws-2", "ws-4"}},
		{"status filter", AdminWorkspaceListOptions{Statuses: []string{mgmt.RunPlanned, mgmt.RunErrored}}, []string{"ws-1", "ws-3"}},
		{"status and q", AdminWorkspaceListOptions{Statuses: []string{mgmt.RunPlanned, mgmt.RunErrored}, Query: "bolt"}, []string{"ws-3"}},
		{"page", AdminWorkspaceListOptions{Sort: "name", Page: Page{Number: 2, Size: 3}}, []string{"ws-1"}},
	}
	for _, tc := range tests {
		if got, _ := list(tc.opts); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	_, l := list(AdminWorkspaceListOptions{Query: "acme", Statuses: []string{mgmt.RunPending}})
	if l.Matching != 1 || l.Items[0].CurrentRun == nil || l.Items[0].CurrentRun.ID != "run-2" {
		t.Errorf("pending in acme = %+v", l.Items)
	}
	want := map[string]int{"total": 3, "none": 1, mgmt.RunPlanned: 1, mgmt.RunPending: 1}
	for k, v := range l.StatusCounts {
		if v != want[k] {
			t.Errorf("status-counts[%s] = %d, want %d", k, v, want[k])
		}
	}
	if len(l.StatusCounts) != len(mgmt.RunStatuses())+2 {
		t.Errorf("status-counts has %d keys, want every status plus none and total", len(l.StatusCounts))
	}
	if _, err := e.s.ListAdminWorkspaces(nil, AdminWorkspaceListOptions{Statuses: []string{"done"}}); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("bad status: %v", err)
	}
	if _, err := e.s.ListAdminWorkspaces(nil, AdminWorkspaceListOptions{Sort: "-size"}); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("bad sort: %v", err)
	}
}

func TestAdminOrganizationList(t *testing.T) {
	e := newMgEnv(t)
	for _, n := range []string{"acme", "bolt", "crane", "dune"} {
		e.org(n, "")
	}
	e.apply(OrganizationUpdateRequestType, &OrganizationUpdateRequest{Name: "bolt", Email: mgPtr("ops@acme.example")})
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "crane", Patch: mgmt.OrganizationAdminPatch{
		IsDisabled: mgPtr(true), GlobalProviderSharing: mgPtr(true)}})
	e.apply(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{Name: "dune", Kind: ConsumerKindModule, Consumers: []string{"acme"}})
	yes, no := mgPtr(true), mgPtr(false)
	tests := []struct {
		name             string
		opts             AdminOrganizationListOptions
		want             []string
		active, disabled int
	}{
		{"all", AdminOrganizationListOptions{}, []string{"acme", "bolt", "crane", "dune"}, 3, 1},
		{"q over name and email", AdminOrganizationListOptions{Query: "ACME"}, []string{"acme", "bolt"}, 2, 0},
		{"q wins over q[name]", AdminOrganizationListOptions{Query: "acme", Name: "zzz"}, []string{"acme", "bolt"}, 2, 0},
		{"q[email]", AdminOrganizationListOptions{Email: "ops@"}, []string{"bolt"}, 1, 0},
		{"q[name] and q[email] both", AdminOrganizationListOptions{Email: "acme.example", Name: "ac"}, []string{"acme"}, 1, 0},
		{"module producers", AdminOrganizationListOptions{ModuleProducer: yes}, []string{"dune"}, 1, 0},
		{"not module producers", AdminOrganizationListOptions{ModuleProducer: no}, []string{"acme", "bolt", "crane"}, 2, 1},
		{"provider producers", AdminOrganizationListOptions{ProviderProducer: yes}, []string{"crane"}, 0, 1},
		{"paged", AdminOrganizationListOptions{Page: Page{Number: 2, Size: 3}}, []string{"dune"}, 3, 1},
	}
	for _, tc := range tests {
		l, err := e.s.ListAdminOrganizations(nil, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range l.Items {
			got = append(got, o.Name)
		}
		if !reflect.DeepEqual(got, tc.want) || l.Active != tc.active || l.Disabled != tc.disabled || l.Matching != tc.active+tc.disabled {
			t.Errorf("%s: %v active %d disabled %d matching %d, want %v %d %d", tc.name, got, l.Active, l.Disabled, l.Matching, tc.want, tc.active, tc.disabled)
		}
	}
}

func TestOrganizationsForCaller(t *testing.T) {
	e := newMgEnv(t)
	e.user("user-ann", "ann", false)
	e.org("acme", "user-ann")
	e.org("bolt", "")
	e.org("crane", "user-ann")
	e.org("dune", "user-ann")
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "dune", Patch: mgmt.OrganizationAdminPatch{IsDisabled: mgPtr(true)}})
	for _, tc := range []struct {
		c    mgmt.Caller
		want int
	}{
		{mgmt.Caller{Kind: mgmt.CallerUser, UserID: "user-ann"}, 2},
		{mgmt.Caller{Kind: mgmt.CallerTeam, TeamID: mgOwners("bolt"), OrganizationName: "bolt"}, 1},
		{mgmt.Caller{Kind: mgmt.CallerOrganization, OrganizationName: "crane"}, 1},
		{mgmt.Caller{Kind: mgmt.CallerManagement, IsSiteAdmin: true}, 4},
		{mgmt.Caller{Kind: mgmt.CallerUser, UserID: "user-ann", IsSiteAdmin: true}, 3},
		{mgmt.Caller{Kind: mgmt.CallerUser, UserID: "user-nobody"}, 0},
	} {
		l, err := e.s.OrganizationsForCaller(nil, tc.c, Page{})
		if err != nil || l.Matching != tc.want || len(l.Items) != tc.want {
			t.Errorf("%+v: %d organizations (%v), want %d", tc.c, l.Matching, err, tc.want)
		}
	}
}

func TestToolVersionList(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	for i, v := range []string{"1.5.0", "1.5.1", "1.6.0", "0.15.0"} {
		e.toolVersion(fmt.Sprintf("tool-%d", i), mgmt.VersionFamilyTool, v, mgmt.ToolVersionPatch{})
	}
	e.toolVersion("tool-p", mgmt.VersionFamilyPolicy, "1.5.0", mgmt.ToolVersionPatch{})
	e.workspace("ws-a", "acme", "", "a")
	e.workspace("ws-b", "acme", "", "b")
	for _, id := range []string{"ws-a", "ws-b"} {
		e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: id, Attributes: mgmt.WorkspacePatch{ToolVersion: mgPtr("1.5.0")}})
	}
	versions := func(o ToolVersionListOptions) ([]string, *ToolVersionList) {
		l, err := e.s.ListToolVersions(nil, mgmt.VersionFamilyTool, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range l.Items {
			out = append(out, it.Version.Version)
		}
		return out, l
	}
	if got, l := versions(ToolVersionListOptions{}); !reflect.DeepEqual(got, []string{"1.5.0", "1.5.1", "1.6.0", "0.15.0"}) || l.Items[0].Usage != 2 || l.Items[1].Usage != 0 {
		t.Errorf("all = %v usage %d", got, l.Items[0].Usage)
	}
	if got, _ := versions(ToolVersionListOptions{Search: "1.5"}); !reflect.DeepEqual(got, []string{"1.5.0", "1.5.1"}) {
		t.Errorf("search = %v", got)
	}
	if got, _ := versions(ToolVersionListOptions{Version: "1.5.0", Search: "1.6"}); !reflect.DeepEqual(got, []string{"1.5.0"}) {
		t.Errorf("filter wins over search: %v", got)
	}
	if got, l := versions(ToolVersionListOptions{Page: Page{Number: 2, Size: 3}}); !reflect.DeepEqual(got, []string{"0.15.0"}) || l.Matching != 4 {
		t.Errorf("page 2 = %v of %d", got, l.Matching)
	}
	if p := stMust[*ToolVersionList](t)(e.s.ListToolVersions(nil, mgmt.VersionFamilyPolicy, ToolVersionListOptions{})); p.Matching != 1 || p.Items[0].Usage != 0 {
		t.Errorf("policy versions = %+v", p)
	}
}

func TestPageNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want Page }{
		{Page{}, Page{1, 20}},
		{Page{Number: -3, Size: 500}, Page{1, 100}},
		{Page{Number: 7, Size: 5}, Page{7, 5}},
	} {
		if got := tc.in.Normalize(); got != tc.want {
			t.Errorf("%+v.Normalize() = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if n := (Page{Size: 20}).TotalPages(0); n != 1 {
		t.Errorf("TotalPages(0) = %d", n)
	}
	if n := (Page{Size: 20}).TotalPages(41); n != 3 {
		t.Errorf("TotalPages(41) = %d", n)
	}
	if got := pageOf([]int{1, 2, 3}, Page{Number: 1 << 62, Size: 100}); got != nil {
		t.Errorf("a huge page number gave %v", got)
	}
}
