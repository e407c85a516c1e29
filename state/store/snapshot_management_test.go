package store

import (
	"bytes"
	"strings"
	"testing"

	"github.com/schedhq/sched/state/mgmt"
)

// mgFillTables writes at least one row into every management table, with
// every optional field set somewhere, through commands applied from index
// base+1 on. stFillEveryTable calls it so the store-wide snapshot tests
// cover these tables.
func mgFillTables(t *testing.T, s *Store, base uint64) {
	t.Helper()
	e := &mgEnv{t: t, s: s, idx: base}
	e.user("user-ann", "ann", true)
	e.user("user-bob", "bob", false)
	e.org("acme", "user-ann")
	e.org("bolt", "user-bob")
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme", Patch: mgmt.OrganizationAdminPatch{
		AccessBetaTools: mgPtr(true), ApplyTimeout: mgPtr("3h"), SetWorkspaceLimit: true, WorkspaceLimit: mgPtr(50)}})
	e.apply(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{Name: "acme", Kind: ConsumerKindModule, Consumers: []string{"bolt"}})
	e.apply(OrganizationConsumersReplaceRequestType, &OrganizationConsumersReplaceRequest{Name: "acme", Kind: ConsumerKindProvider, Consumers: []string{"bolt"}})
	e.team("team-dev", "acme", mgmt.TeamVisibilityOrganization, &mgmt.TeamOrganizationAccessPatch{ManageWorkspaces: mgPtr(true)}, "user-bob")
	e.apply(ProjectCreateRequestType, &ProjectCreateRequest{ID: "prj-web", OrganizationName: "acme", CreatedAt: e.now(), Attributes: mgmt.ProjectPatch{
		Name: mgPtr("web"), Description: mgPtr("web tier"), AutoDestroyActivityDuration: mgPtr("14d"),
		TagBindings: &[]mgmt.TagBinding{{Key: "env", Value: "prod"}}, DefaultExecutionMode: mgPtr(mgmt.ExecutionModeAgent), DefaultAgentPoolID: mgPtr("apool-1")}})
	e.teamProject("tprj-1", "team-dev", "prj-web", mgmt.ProjectAccessCustom, mgmt.TeamProjectPermissionsPatch{Runs: mgPtr(mgmt.PermPlan), Move: mgPtr(true)})
	sha := strings.Repeat("ab", 32)
	e.toolVersion("tool-1", mgmt.VersionFamilyTool, "1.6.0-beta1", mgmt.ToolVersionPatch{Beta: mgPtr(true), Deprecated: mgPtr(true),
		DeprecatedReason: mgPtr("old"), Archs: &[]mgmt.ToolVersionArch{{URL: "https://x.example/l.zip", SHA: sha, OS: "linux", Arch: "amd64"}}})
	e.toolVersion("tool-2", mgmt.VersionFamilyPolicy, "0.9.0", mgmt.ToolVersionPatch{Official: mgPtr(true)})
	e.apply(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-app", OrganizationName: "acme", CreatedAt: e.now(), Attributes: mgmt.WorkspacePatch{
		Name: mgPtr("app"), ProjectID: mgPtr("prj-web"), ToolVersion: mgPtr("1.6.0-beta1"),
		VCSRepo: &mgmt.WorkspaceVCSRepo{Identifier: "acme/app", Branch: "main", OAuthTokenID: "ot-1"}}})
	e.apply(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: "run-1", WorkspaceID: "ws-app", Message: "first", IsDestroy: true, CreatedBy: "user-ann", CreatedAt: e.now()}})
	e.apply(RunAdvanceRequestType, &RunAdvanceRequest{ID: "run-1", Status: mgmt.RunPlanning, Now: e.now()})
	e.apply(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-app", LockedBy: "user-ann", Reason: "state", Now: e.now()})
	e.apply(StateVersionCreateRequestType, &StateVersionCreateRequest{StateVersion: &mgmt.StateVersion{ID: "sv-1", WorkspaceID: "ws-app",
		Serial: 3, Lineage: "lin", MD5: "0123456789abcdef0123456789abcdef", RunID: "run-1", CreatedBy: "user-ann", CreatedAt: e.now(),
		Status: mgmt.StateVersionFinalized},
		State: []byte(`{"version":4,"serial":3,"lineage":"lin","outputs":{}}`), JSONState: []byte(`{"format_version":"1.0"}`),
		Outputs: []*mgmt.StateVersionOutput{{Name: "addr", Sensitive: true, Type: []byte(`"string"`), Value: []byte(`"10.0.0.1"`)}}})
	e.apply(ConfigurationVersionCreateRequestType, &ConfigurationVersionCreateRequest{ConfigurationVersion: &mgmt.ConfigurationVersion{
		ID: "cv-1", WorkspaceID: "ws-app", AutoQueueRuns: true, UploadSecret: "s", CreatedBy: "user-ann", CreatedAt: e.now()}})
	e.apply(ConfigurationVersionUploadRequestType, &ConfigurationVersionUploadRequest{ID: "cv-1", Archive: []byte("tgz"), Now: e.now()})
	e.apply(PolicySetCreateRequestType, &PolicySetCreateRequest{ID: "polset-1", OrganizationName: "acme", CreatedAt: e.now(), Attributes: mgmt.PolicySetPatch{
		Name: mgPtr("base"), Description: mgPtr("d"), Kind: mgPtr("gate"), Overridable: mgPtr(true), Global: mgPtr(true), PolicyToolVersion: mgPtr("0.9.0")}})
	e.apply(AgentPoolUpsertRequestType, &AgentPoolUpsertRequest{Create: true, ID: "apool-1", OrganizationName: "acme", Now: e.now(),
		Patch: mgmt.AgentPoolPatch{Name: mgPtr("gpu"), OrganizationScoped: mgPtr(false), AllowedWorkspaceIDs: &[]string{"ws-app"}}})
}

func TestMgmtSnapshotRoundTrip(t *testing.T) {
	src := stStore(t, Config{})
	mgFillTables(t, src, 200)
	dump := stDump(t, src)
	for _, def := range mgmtTableDefs() {
		if len(dump[def.name]) == 0 {
			t.Errorf("table %s has no row: extend mgFillTables", def.name)
		}
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	dst := stStore(t, Config{})
	if err := dst.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	stCompareDumps(t, dump, stDump(t, dst))
	for _, def := range mgmtTableDefs() {
		if got, want := dst.Index(def.name), src.Index(def.name); got != want {
			t.Errorf("Index(%s) after restore = %d, want %d", def.name, got, want)
		}
	}
	// The restored indexes answer: case-insensitive names, memberships,
	// usage, and a further command.
	if p := stMust[*mgmt.Project](t)(dst.ProjectByName(nil, "acme", "WEB")); p == nil || p.ID != "prj-web" {
		t.Errorf("project by name after restore = %v", p)
	}
	a := (&mgEnv{t: t, s: dst}).authority(mgmt.CallerUser, "user-bob", "acme")
	if pa := (&mgEnv{t: t, s: dst}).projectAccess(a, "prj-web"); !pa.CanMoveWorkspaces() || !pa.CanCreateWorkspace() {
		t.Errorf("bob's access after restore = %+v", pa)
	}
	e := &mgEnv{t: t, s: dst, idx: 500}
	e.project("prj-more", "acme", "more", "")
	e.failField(ProjectCreateRequestType, &ProjectCreateRequest{ID: "prj-dup", OrganizationName: "acme", Attributes: mgmt.ProjectPatch{Name: mgPtr("Web")}},
		"/data/attributes/name")
}

// Two servers applying the same log end with identical management tables.
func TestMgmtApplyIsDeterministic(t *testing.T) {
	a, b := stStore(t, Config{}), stStore(t, Config{})
	mgFillTables(t, a, 200)
	mgFillTables(t, b, 200)
	stCompareDumps(t, stDump(t, a), stDump(t, b))
}
