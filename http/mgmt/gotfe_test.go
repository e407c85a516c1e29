package mgmt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	tfe "github.com/hashicorp/go-tfe"
	hjsonapi "github.com/hashicorp/jsonapi"
)

// Client compatibility: the projects, team-projects and admin endpoints
// driven by go-tfe v1.111.2, the client terraform-provider-tfe is built on,
// over real HTTP. The spec names product-specific identifiers with neutral
// words (tool, policy, gate); go-tfe uses the real ones. neutralNames
// translates them at the boundary, in both directions, and nothing else:
// every other byte go-tfe sends and reads is the server's own.

// clientToNeutral maps go-tfe's names (attribute keys, type values, path
// segments) to the spec's.
var clientToNeutral = map[string]string{
	"terraform-versions":                   "tool-versions",
	"sentinel-versions":                    "policy-versions",
	"terraform-version":                    "tool-version",
	"terraform-build-worker-apply-timeout": "tool-build-worker-apply-timeout",
	"terraform-build-worker-plan-timeout":  "tool-build-worker-plan-timeout",
	"terraform-worker-sudo-enabled":        "tool-worker-sudo-enabled",
	"sentinel-mocks":                       "gate-mocks",
}

func renameJSON(v any, names map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if n, ok := names[k]; ok {
				k = n
			}
			if s, isStr := val.(string); isStr && k == "type" {
				if n, ok := names[s]; ok {
					val = n
				}
			} else if isStr && strings.HasPrefix(s, "/api/v2/") {
				val = renamePath(s, names)
			} else {
				val = renameJSON(val, names)
			}
			out[k] = val
		}
		return out
	case []any:
		for i := range x {
			x[i] = renameJSON(x[i], names)
		}
	}
	return v
}

func renamePath(p string, names map[string]string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if n, ok := names[s]; ok {
			segs[i] = n
		}
	}
	return strings.Join(segs, "/")
}

func renameBody(body []byte, names map[string]string) []byte {
	if len(bytes.TrimSpace(body)) == 0 {
		return body
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return body
	}
	out, _ := json.Marshal(renameJSON(v, names))
	return out
}

// neutralNames wraps the server's handler with the translation.
func neutralNames(h http.Handler) http.Handler {
	back := map[string]string{}
	for k, v := range clientToNeutral {
		back[v] = k
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = renamePath(r.URL.Path, clientToNeutral)
		r.URL.RawPath = ""
		if r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			body = renameBody(body, clientToNeutral)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		out := renameBody(rec.Body.Bytes(), back)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(rec.Code)
		w.Write(out)
	})
}

// tfeClient returns a go-tfe client with secret against ts.
func tfeClient(t *testing.T, ts *httptest.Server, secret string) *tfe.Client {
	t.Helper()
	c, err := tfe.NewClient(&tfe.Config{Address: ts.URL, Token: secret, HTTPClient: ts.Client()})
	if err != nil {
		t.Fatalf("go-tfe client: %v", err)
	}
	if v := c.RemoteAPIVersion(); v != APIVersion {
		t.Errorf("RemoteAPIVersion = %q", v)
	}
	return c
}

func tfePtr[T any](v T) *T { return &v }

func TestMgmtGoTFEProjects(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, w.owner)

	p, err := c.Projects.Create(ctx, w.org, tfe.ProjectCreateOptions{
		Name:                        "platform",
		Description:                 tfePtr("the platform team's"),
		AutoDestroyActivityDuration: hjsonapi.NewNullableAttrWithValue("14d"),
		TagBindings:                 []*tfe.TagBinding{{Key: "env", Value: "prod"}, {Key: "team", Value: "core"}},
		DefaultExecutionMode:        tfePtr("local"),
		SettingOverwrites:           &tfe.ProjectSettingOverwrites{ExecutionMode: tfePtr(true), AgentPool: tfePtr(false)},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if p.Name != "platform" || p.Description != "the platform team's" || p.DefaultExecutionMode != "local" ||
		p.Organization == nil || p.Organization.Name != w.org {
		t.Errorf("created project = %+v", p)
	}
	if d, _ := p.AutoDestroyActivityDuration.Get(); d != "14d" {
		t.Errorf("auto-destroy-activity-duration = %q", d)
	}
	if p.SettingOverwrites == nil || p.SettingOverwrites.ExecutionMode == nil || !*p.SettingOverwrites.ExecutionMode ||
		p.SettingOverwrites.AgentPool == nil || *p.SettingOverwrites.AgentPool {
		t.Errorf("setting-overwrites = %+v", p.SettingOverwrites)
	}

	got, err := c.Projects.ReadWithOptions(ctx, p.ID, tfe.ProjectReadOptions{Include: []tfe.ProjectIncludeOpt{tfe.ProjectEffectiveTagBindings}})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var keys []string
	for _, tb := range got.EffectiveTagBindings {
		keys = append(keys, tb.Key+"="+tb.Value)
	}
	if !slices.Equal(keys, []string{"env=prod", "team=core"}) {
		t.Errorf("effective tag bindings = %v", keys)
	}

	list, err := c.Projects.List(ctx, w.org, &tfe.ProjectListOptions{Query: "PLAT", ListOptions: tfe.ListOptions{PageSize: 1}})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].ID != p.ID || list.TotalCount != 1 || list.CurrentPage != 1 {
		t.Errorf("list q=PLAT = %d items, pagination %+v", len(list.Items), list.Pagination)
	}
	list, err = c.Projects.List(ctx, w.org, &tfe.ProjectListOptions{Name: "app,platform", Query: "nothing-matches", ListOptions: tfe.ListOptions{PageSize: 1, PageNumber: 2}})
	if err != nil {
		t.Fatalf("list names: %v", err)
	}
	if list.TotalCount != 2 || list.TotalPages != 2 || list.CurrentPage != 2 || list.PreviousPage != 1 || list.NextPage != 0 || len(list.Items) != 1 {
		t.Errorf("list filter[names] page 2 = %d items, %+v", len(list.Items), list.Pagination)
	}

	upd, err := c.Projects.Update(ctx, p.ID, tfe.ProjectUpdateOptions{Name: tfePtr("platform-2"), AutoDestroyActivityDuration: hjsonapi.NewNullNullableAttr[string]()})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if upd.Name != "platform-2" || upd.Description != "the platform team's" || upd.AutoDestroyActivityDuration.IsSpecified() && !upd.AutoDestroyActivityDuration.IsNull() {
		t.Errorf("updated project = %+v", upd)
	}
	added, err := c.Projects.AddTagBindings(ctx, p.ID, tfe.ProjectAddTagBindingsOptions{TagBindings: []*tfe.TagBinding{{Key: "env", Value: "dev"}, {Key: "cost", Value: "42"}}})
	if err != nil {
		t.Fatalf("add tag bindings: %v", err)
	}
	if len(added) != 3 {
		t.Errorf("tag bindings after add = %d", len(added))
	}
	tbs, err := c.Projects.ListTagBindings(ctx, p.ID)
	if err != nil || len(tbs) != 3 || tbs[0].Key != "env" || tbs[0].Value != "dev" {
		t.Errorf("list tag bindings = %v, %v", tbs, err)
	}
	if err := c.Projects.DeleteAllTagBindings(ctx, p.ID); err != nil {
		t.Fatalf("delete tag bindings: %v", err)
	}
	if etbs, err := c.Projects.ListEffectiveTagBindings(ctx, p.ID); err != nil || len(etbs) != 0 {
		t.Errorf("effective tag bindings after delete = %v, %v", etbs, err)
	}
	if err := c.Projects.Delete(ctx, p.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := c.Projects.Read(ctx, p.ID); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("read after delete: %v", err)
	}
	// A reader's token sees the project it has access to, and may not
	// create any.
	rc := tfeClient(t, ts, w.reader)
	if _, err := rc.Projects.Create(ctx, w.org, tfe.ProjectCreateOptions{Name: "nope"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("reader create: %v", err)
	}
	if rl, err := rc.Projects.List(ctx, w.org, nil); err != nil || len(rl.Items) != 1 || rl.Items[0].ID != w.appProject {
		t.Errorf("reader list = %+v, %v", rl, err)
	}
}

func TestMgmtGoTFETeamProjects(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, w.owner)

	devs := m.team(w.owner, w.org, "devs", "organization", nil)
	tpa, err := c.TeamProjectAccess.Add(ctx, tfe.TeamProjectAccessAddOptions{
		Access:  tfe.TeamProjectAccessCustom,
		Team:    &tfe.Team{ID: devs},
		Project: &tfe.Project{ID: w.appProject},
		ProjectAccess: &tfe.TeamProjectAccessProjectPermissionsOptions{
			Settings: tfePtr(tfe.ProjectSettingsPermissionUpdate), VariableSets: tfePtr(tfe.ProjectVariableSetsPermissionWrite)},
		WorkspaceAccess: &tfe.TeamProjectAccessWorkspacePermissionsOptions{
			Runs: tfePtr(tfe.WorkspaceRunsPermissionPlan), SentinelMocks: tfePtr(tfe.WorkspaceSentinelMocksPermissionRead),
			Locking: tfePtr(true), PolicyOverrides: tfePtr(true)},
	})
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	pa, wa := tpa.ProjectAccess, tpa.WorkspaceAccess
	if tpa.Access != tfe.TeamProjectAccessCustom || tpa.Team.ID != devs || tpa.Project.ID != w.appProject ||
		pa.ProjectSettingsPermission != "update" || pa.ProjectTeamsPermission != "none" || pa.ProjectVariableSetsPermission != "write" ||
		wa.WorkspaceRunsPermission != "plan" || wa.WorkspaceSentinelMocksPermission != "read" || !wa.WorkspaceLockingPermission ||
		wa.WorkspaceVariablesPermission != "none" || wa.WorkspaceCreatePermission {
		t.Errorf("added = %+v %+v %+v", tpa, pa, wa)
	}
	read, err := c.TeamProjectAccess.Read(ctx, tpa.ID)
	if err != nil || read.ID != tpa.ID || read.ProjectAccess.ProjectVariableSetsPermission != "write" {
		t.Errorf("read = %+v, %v", read, err)
	}
	list, err := c.TeamProjectAccess.List(ctx, tfe.TeamProjectAccessListOptions{ProjectID: w.appProject})
	if err != nil || len(list.Items) != 2 || list.TotalCount != 2 {
		t.Errorf("list = %+v, %v", list, err)
	}
	upd, err := c.TeamProjectAccess.Update(ctx, tpa.ID, tfe.TeamProjectAccessUpdateOptions{Access: tfePtr(tfe.TeamProjectAccessMaintain)})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if upd.Access != tfe.TeamProjectAccessMaintain || upd.WorkspaceAccess.WorkspaceRunsPermission != "apply" ||
		!upd.WorkspaceAccess.WorkspaceCreatePermission || upd.WorkspaceAccess.WorkspaceMovePermission ||
		upd.ProjectAccess.ProjectSettingsPermission != "read" {
		t.Errorf("updated to maintain = %+v %+v", upd.ProjectAccess, upd.WorkspaceAccess)
	}
	if _, err := c.TeamProjectAccess.Add(ctx, tfe.TeamProjectAccessAddOptions{Access: tfe.TeamProjectAccessRead,
		Team: &tfe.Team{ID: devs}, Project: &tfe.Project{ID: w.appProject}}); err == nil || !strings.Contains(err.Error(), "already has access") {
		t.Errorf("second record for the same team and project: %v", err)
	}
	if err := c.TeamProjectAccess.Remove(ctx, tpa.ID); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := c.TeamProjectAccess.Read(ctx, tpa.ID); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("read after remove: %v", err)
	}
	// The reader may list the access of its own (secret) team, and may
	// not add any: 404, as the spec's table says.
	rc := tfeClient(t, ts, w.reader)
	if rl, err := rc.TeamProjectAccess.List(ctx, tfe.TeamProjectAccessListOptions{ProjectID: w.appProject}); err != nil || len(rl.Items) != 1 || rl.Items[0].Team.ID != w.readersTeam {
		t.Errorf("reader list = %+v, %v", rl, err)
	}
	if _, err := rc.TeamProjectAccess.Add(ctx, tfe.TeamProjectAccessAddOptions{Access: tfe.TeamProjectAccessAdmin,
		Team: &tfe.Team{ID: w.readersTeam}, Project: &tfe.Project{ID: w.appProject}}); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("reader add: %v", err)
	}
}

func TestMgmtGoTFEAdmin(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	other := m.org(w.owner, "globex")
	ws := m.workspace(w.owner, w.org, "network", w.appProject, map[string]any{"vcs-repo": map[string]any{"identifier": "acme/network"}})
	ts := httptest.NewServer(neutralNames(m.srv.Handler()))
	defer ts.Close()
	ctx := context.Background()
	c := tfeClient(t, ts, m.root)

	// Organizations.
	orgs, err := c.Admin.Organizations.List(ctx, &tfe.AdminOrganizationListOptions{Query: "acme", Include: []tfe.AdminOrgIncludeOpt{tfe.AdminOrgOwners}})
	if err != nil {
		t.Fatalf("list orgs: %v", err)
	}
	if len(orgs.Items) != 1 || orgs.Items[0].Name != w.org || len(orgs.Items[0].Owners) != 1 || orgs.Items[0].Owners[0].ID != w.ownerID ||
		orgs.Items[0].Owners[0].Username != "olivia" || orgs.Items[0].ApplyTimeout != "24h" || orgs.Items[0].TerraformBuildWorkerPlanTimeout != "2h" {
		t.Errorf("admin orgs = %+v", orgs.Items)
	}
	upd, err := c.Admin.Organizations.Update(ctx, w.org, tfe.AdminOrganizationUpdateOptions{
		AccessBetaTools: tfePtr(true), IsDisabled: tfePtr(false), ApplyTimeout: tfePtr("12h"),
		TerraformBuildWorkerPlanTimeout: tfePtr("90m"), TerraformWorkerSudoEnabled: true, WorkspaceLimit: tfePtr(5),
		GlobalModuleSharing: tfePtr(true)})
	if err != nil {
		t.Fatalf("update org: %v", err)
	}
	if !upd.AccessBetaTools || upd.ApplyTimeout != "12h" || upd.PlanTimeout != "90m" || !upd.TerraformWorkerSudoEnabled ||
		upd.WorkspaceLimit == nil || *upd.WorkspaceLimit != 5 || upd.GlobalModuleSharing == nil || !*upd.GlobalModuleSharing {
		t.Errorf("updated org = %+v", upd)
	}
	if err := c.Admin.Organizations.UpdateModuleConsumers(ctx, w.org, []string{other.ID}); err != nil {
		t.Fatalf("update module consumers: %v", err)
	}
	cons, err := c.Admin.Organizations.ListModuleConsumers(ctx, w.org, nil)
	if err != nil || len(cons.Items) != 1 || cons.Items[0].Name != "globex" {
		t.Errorf("module consumers = %+v, %v", cons, err)
	}
	if got, err := c.Admin.Organizations.Read(ctx, w.org); err != nil || got.GlobalModuleSharing == nil || *got.GlobalModuleSharing {
		t.Errorf("module consumers did not turn global sharing off: %+v, %v", got, err)
	}

	// Workspaces.
	wl, err := c.Admin.Workspaces.List(ctx, &tfe.AdminWorkspaceListOptions{Query: "netw", Sort: "-name",
		Include: []tfe.AdminWorkspaceIncludeOpt{tfe.AdminWorkspaceOrg, tfe.AdminWorkspaceOrgOwners}})
	if err != nil {
		t.Fatalf("list workspaces: %v", err)
	}
	if len(wl.Items) != 1 || wl.Items[0].ID != ws.ID || wl.Items[0].VCSRepo == nil || wl.Items[0].VCSRepo.Identifier != "acme/network" ||
		wl.Items[0].Organization == nil || wl.Items[0].Organization.Name != w.org || wl.Items[0].CurrentRun != nil {
		t.Errorf("admin workspaces = %+v", wl.Items)
	}
	if _, err := c.Admin.Workspaces.List(ctx, &tfe.AdminWorkspaceListOptions{Filter: "bogus"}); err == nil {
		t.Error("an unknown run status filter was accepted")
	}
	aw, err := c.Admin.Workspaces.Read(ctx, ws.ID)
	if err != nil || aw.Name != "network" || aw.Locked {
		t.Errorf("admin workspace = %+v, %v", aw, err)
	}

	// Tool and policy versions.
	sha := strings.Repeat("a", 64)
	tv, err := c.Admin.TerraformVersions.Create(ctx, tfe.AdminTerraformVersionCreateOptions{
		Version: tfePtr("1.9.0"), Enabled: tfePtr(true), Deprecated: tfePtr(false),
		Archs: []*tfe.ToolVersionArchitecture{{URL: "https://example.com/tool_1.9.0_linux_amd64.zip", Sha: sha, OS: "linux", Arch: "amd64"},
			{URL: "https://example.com/tool_1.9.0_linux_arm64.zip", Sha: sha, OS: "linux", Arch: "arm64"}}})
	if err != nil {
		t.Fatalf("create tool version: %v", err)
	}
	if tv.Version != "1.9.0" || tv.URL != "https://example.com/tool_1.9.0_linux_amd64.zip" || tv.Sha != sha || len(tv.Archs) != 2 ||
		tv.CreatedAt.IsZero() || tv.DeprecatedReason != nil {
		t.Errorf("created tool version = %+v", tv)
	}
	tvl, err := c.Admin.TerraformVersions.List(ctx, &tfe.AdminTerraformVersionsListOptions{Filter: "1.9.0", Search: "nothing"})
	if err != nil || len(tvl.Items) != 1 || tvl.Items[0].ID != tv.ID {
		t.Errorf("tool versions filter[version] = %+v, %v", tvl, err)
	}
	tvu, err := c.Admin.TerraformVersions.Update(ctx, tv.ID, tfe.AdminTerraformVersionUpdateOptions{Deprecated: tfePtr(true), DeprecatedReason: tfePtr("use 1.10")})
	if err != nil || !tvu.Deprecated || tvu.DeprecatedReason == nil || *tvu.DeprecatedReason != "use 1.10" || tvu.Version != "1.9.0" {
		t.Errorf("updated tool version = %+v, %v", tvu, err)
	}
	if err := c.Admin.TerraformVersions.Delete(ctx, tv.ID); err != nil {
		t.Fatalf("delete tool version: %v", err)
	}
	pv, err := c.Admin.SentinelVersions.Create(ctx, tfe.AdminSentinelVersionCreateOptions{Version: "0.24.0", URL: "https://example.com/policy_0.24.0.zip", SHA: sha, Official: tfePtr(true)})
	if err != nil {
		t.Fatalf("create policy version: %v", err)
	}
	if got, err := c.Admin.SentinelVersions.Read(ctx, pv.ID); err != nil || got.Version != "0.24.0" || !got.Official || !got.Enabled {
		t.Errorf("policy version = %+v, %v", got, err)
	}
	if err := c.Admin.SentinelVersions.Delete(ctx, pv.ID); err == nil || !strings.Contains(err.Error(), "official") {
		t.Errorf("deleting an official version: %v", err)
	}

	// Deletes.
	if err := c.Admin.Workspaces.Delete(ctx, ws.ID); err != nil {
		t.Fatalf("delete workspace: %v", err)
	}
	if err := c.Admin.Organizations.Delete(ctx, "globex"); err != nil {
		t.Fatalf("delete org: %v", err)
	}
	if _, err := c.Admin.Organizations.Read(ctx, "globex"); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("read deleted org: %v", err)
	}
	// A user that is no administrator finds no admin API at all.
	uc := tfeClient(t, ts, w.owner)
	if _, err := uc.Admin.Organizations.List(ctx, nil); !errors.Is(err, tfe.ErrResourceNotFound) {
		t.Errorf("non-admin admin list: %v", err)
	}
}
