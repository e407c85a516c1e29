package store

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

func TestWorkspaceCreateUpdateLock(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.org("beta", "")
	e.project("prj-b", "beta", "bproj", "")
	w := e.workspace("ws-a", "acme", "", "app")
	if w.ProjectID != mgDefault("acme") || !w.LatestChangeAt.Equal(w.CreatedAt) || w.Locked {
		t.Errorf("new workspace = %+v", w)
	}
	e.failField(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-b", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("APP")}}, "/data/attributes/name")
	e.failField(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-b", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("has space")}}, "/data/attributes/name")
	e.failField(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-b", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr(strings.Repeat("w", 91))}}, "/data/attributes/name")
	e.failField(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-b", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("b"), AutoDestroyActivityDuration: mgPtr("12345h")}}, "/data/attributes/auto-destroy-activity-duration")
	e.failField(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-b", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("b"), VCSRepo: &mgmt.WorkspaceVCSRepo{}}}, "/data/attributes/vcs-repo/identifier")
	e.failField(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-b", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("b"), ToolVersion: mgPtr("latest")}}, "/data/attributes/tool-version")
	e.fail(WorkspaceCreateRequestType, &WorkspaceCreateRequest{ID: "ws-b", OrganizationName: "acme",
		Attributes: mgmt.WorkspacePatch{Name: mgPtr("b"), ProjectID: mgPtr("prj-b")}}, state.ErrNotFound)

	upd := e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-a", Now: e.now(), Attributes: mgmt.WorkspacePatch{
		Name: mgPtr("app2"), VCSRepo: &mgmt.WorkspaceVCSRepo{Identifier: "acme/app", Branch: "main"}}}).(*mgmt.Workspace)
	if upd.Name != "app2" || upd.VCSRepo == nil || upd.VCSRepo.Identifier != "acme/app" || !upd.UpdatedAt.After(w.UpdatedAt) {
		t.Errorf("update = %+v", upd)
	}
	if got := stMust[*mgmt.Workspace](t)(e.s.WorkspaceByName(nil, "acme", "APP2")); got == nil || got.ID != "ws-a" {
		t.Errorf("by name = %v", got)
	}
	upd = e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-a", Attributes: mgmt.WorkspacePatch{RemoveVCSRepo: true}}).(*mgmt.Workspace)
	if upd.VCSRepo != nil {
		t.Error("vcs repo not removed")
	}
	e.fail(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-a", Attributes: mgmt.WorkspacePatch{ProjectID: mgPtr("prj-b")}}, state.ErrNotFound)
	e.fail(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-ghost"}, state.ErrNotFound)

	e.fail(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-a"}, state.ErrInvalid)
	locked := e.apply(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-a", LockedBy: "user-ann", Reason: "deploy"}).(*mgmt.Workspace)
	if !locked.Locked || locked.LockedBy != "user-ann" || locked.LockReason != "deploy" {
		t.Errorf("locked = %+v", locked)
	}
	e.fail(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-a", LockedBy: "user-bob"}, state.ErrConflict)
	e.fail(WorkspaceUnlockRequestType, &WorkspaceUnlockRequest{ID: "ws-a", By: "user-bob"}, state.ErrConflict)
	e.apply(WorkspaceUnlockRequestType, &WorkspaceUnlockRequest{ID: "ws-a", By: "user-ann"})
	e.fail(WorkspaceUnlockRequestType, &WorkspaceUnlockRequest{ID: "ws-a", By: "user-ann"}, state.ErrConflict)
	e.apply(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-a", LockedBy: "user-ann"})
	forced := e.apply(WorkspaceUnlockRequestType, &WorkspaceUnlockRequest{ID: "ws-a", By: "user-admin", Force: true}).(*mgmt.Workspace)
	if forced.Locked || forced.LockedBy != "" {
		t.Errorf("force unlock = %+v", forced)
	}
}

func TestWorkspaceToolVersionMustBeUsable(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.toolVersion("tool-stable", mgmt.VersionFamilyTool, "1.5.0", mgmt.ToolVersionPatch{})
	e.toolVersion("tool-off", mgmt.VersionFamilyTool, "1.4.0", mgmt.ToolVersionPatch{Enabled: mgPtr(false)})
	e.toolVersion("tool-beta", mgmt.VersionFamilyTool, "1.6.0-beta1", mgmt.ToolVersionPatch{Beta: mgPtr(true)})
	e.toolVersion("tool-pol", mgmt.VersionFamilyPolicy, "0.9.0", mgmt.ToolVersionPatch{})
	create := func(id, version string) *WorkspaceCreateRequest {
		return &WorkspaceCreateRequest{ID: id, OrganizationName: "acme", Attributes: mgmt.WorkspacePatch{Name: mgPtr(id[3:]), ToolVersion: mgPtr(version)}}
	}
	e.apply(WorkspaceCreateRequestType, create("ws-ok", "1.5.0"))
	e.failField(WorkspaceCreateRequestType, create("ws-x", "1.3.0"), "/data/attributes/tool-version")
	e.failField(WorkspaceCreateRequestType, create("ws-x", "1.4.0"), "/data/attributes/tool-version")
	e.failField(WorkspaceCreateRequestType, create("ws-x", "1.6.0-beta1"), "/data/attributes/tool-version")
	e.failField(WorkspaceCreateRequestType, create("ws-x", "0.9.0"), "/data/attributes/tool-version")
	e.apply(OrganizationAdminUpdateRequestType, &OrganizationAdminUpdateRequest{Name: "acme", Patch: mgmt.OrganizationAdminPatch{AccessBetaTools: mgPtr(true)}})
	e.apply(WorkspaceCreateRequestType, create("ws-beta", "1.6.0-beta1"))
	// Disabling a version later does not touch the workspaces using it.
	e.apply(ToolVersionUpdateRequestType, &ToolVersionUpdateRequest{ID: "tool-stable", Family: mgmt.VersionFamilyTool, Attributes: mgmt.ToolVersionPatch{Enabled: mgPtr(false)}})
	e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-ok", Attributes: mgmt.WorkspacePatch{Description: mgPtr("kept")}})
	e.failField(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-beta", Attributes: mgmt.WorkspacePatch{ToolVersion: mgPtr("1.5.0")}},
		"/data/attributes/tool-version")
	tv := stMust[*mgmt.ToolVersion](t)(e.s.ToolVersionByID(nil, mgmt.VersionFamilyTool, "tool-stable"))
	if n := stMust[int](t)(e.s.ToolVersionUsage(nil, tv)); n != 1 {
		t.Errorf("usage of 1.5.0 = %d, want 1", n)
	}
}

// Spec §3 run statuses driven by apply, discard and cancel; the newest run
// is the workspace's current run.
func TestRunLifecycle(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.workspace("ws-a", "acme", "", "app")
	run := func(id string) *mgmt.Run {
		return e.apply(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: id, WorkspaceID: "ws-a", Message: "go", CreatedBy: "user-ann", CreatedAt: e.now()}}).(*mgmt.Run)
	}
	action := func(id, act string) *mgmt.Run {
		return e.apply(RunActionRequestType, &RunActionRequest{ID: id, Action: act, Now: e.now()}).(*mgmt.Run)
	}
	advance := func(id, status string) *mgmt.Run {
		return e.apply(RunAdvanceRequestType, &RunAdvanceRequest{ID: id, Status: status, Now: e.now()}).(*mgmt.Run)
	}
	r1 := run("run-1")
	if r1.Status != mgmt.RunPending || r1.StatusTimestamps[mgmt.RunPending].IsZero() {
		t.Fatalf("new run = %+v", r1)
	}
	if w := stMust[*mgmt.Workspace](t)(e.s.WorkspaceByID(nil, "ws-a")); w.CurrentRunID != "run-1" {
		t.Errorf("current run = %q", w.CurrentRunID)
	}
	e.fail(RunActionRequestType, &RunActionRequest{ID: "run-1", Action: mgmt.RunActionApply}, state.ErrConflict)
	e.fail(RunActionRequestType, &RunActionRequest{ID: "run-1", Action: mgmt.RunActionCancel}, state.ErrConflict)
	e.fail(RunActionRequestType, &RunActionRequest{ID: "run-1", Action: "override"}, state.ErrInvalid)
	if r := action("run-1", mgmt.RunActionDiscard); r.Status != mgmt.RunDiscarded {
		t.Errorf("discard pending = %s", r.Status)
	}
	run("run-2")
	advance("run-2", mgmt.RunPlanQueued)
	advance("run-2", mgmt.RunPlanning)
	e.fail(RunAdvanceRequestType, &RunAdvanceRequest{ID: "run-2", Status: mgmt.RunApplied}, state.ErrConflict)
	e.fail(RunAdvanceRequestType, &RunAdvanceRequest{ID: "run-2", Status: "sleeping"}, state.ErrInvalid)
	advance("run-2", mgmt.RunPlanned)
	if r := action("run-2", mgmt.RunActionApply); r.Status != mgmt.RunConfirmed || len(r.StatusTimestamps) != 5 {
		t.Errorf("apply planned = %s with %d timestamps", r.Status, len(r.StatusTimestamps))
	}
	if r := action("run-2", mgmt.RunActionCancel); r.Status != mgmt.RunCanceled || !mgmt.RunIsFinal(r.Status) {
		t.Errorf("cancel confirmed = %s", r.Status)
	}
	e.fail(RunActionRequestType, &RunActionRequest{ID: "run-2", Action: mgmt.RunActionDiscard}, state.ErrConflict)
	run("run-3")
	if w := stMust[*mgmt.Workspace](t)(e.s.WorkspaceByID(nil, "ws-a")); w.CurrentRunID != "run-3" {
		t.Errorf("current run after a newer one = %q", w.CurrentRunID)
	}
	runs := stMust[[]*mgmt.Run](t)(e.s.RunsByWorkspace(nil, "ws-a"))
	if len(runs) != 3 || runs[0].ID != "run-3" || runs[2].ID != "run-1" {
		t.Errorf("runs newest first = %v", runs)
	}
	e.fail(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: "run-4", WorkspaceID: "ws-ghost"}}, state.ErrNotFound)
	e.failField(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: "run-4", WorkspaceID: "ws-a", Message: strings.Repeat("m", 1001)}}, "/data/attributes/message")
}

// Every (status, action) pair: the action table and Apply agree, and an
// action leads only out of a non-final status.
func TestRunActionTableEveryCell(t *testing.T) {
	for _, status := range mgmt.RunStatuses() {
		for _, act := range []string{mgmt.RunActionApply, mgmt.RunActionDiscard, mgmt.RunActionCancel} {
			to, ok := mgmt.RunActionTarget(status, act)
			if ok && mgmt.RunIsFinal(status) {
				t.Errorf("%s allowed from final status %s", act, status)
			}
			if ok && !mgmt.RunIsFinal(to) && to != mgmt.RunConfirmed {
				t.Errorf("%s from %s leads to %s", act, status, to)
			}
		}
	}
	for _, c := range []struct {
		status, action, to string
	}{
		{mgmt.RunPlanned, mgmt.RunActionApply, mgmt.RunConfirmed}, {mgmt.RunCostEstimated, mgmt.RunActionApply, mgmt.RunConfirmed},
		{mgmt.RunPolicyChecked, mgmt.RunActionApply, mgmt.RunConfirmed}, {mgmt.RunPolicyOverride, mgmt.RunActionApply, mgmt.RunConfirmed},
		{mgmt.RunPending, mgmt.RunActionDiscard, mgmt.RunDiscarded}, {mgmt.RunPolicySoftFailed, mgmt.RunActionDiscard, mgmt.RunDiscarded},
		{mgmt.RunPlanning, mgmt.RunActionCancel, mgmt.RunCanceled}, {mgmt.RunApplying, mgmt.RunActionCancel, mgmt.RunCanceled},
		{mgmt.RunPolicySoftFailed, mgmt.RunActionApply, ""}, {mgmt.RunApplied, mgmt.RunActionCancel, ""}, {mgmt.RunPending, mgmt.RunActionApply, ""},
	} {
		if to, _ := mgmt.RunActionTarget(c.status, c.action); to != c.to {
			t.Errorf("%s from %s → %q, want %q", c.action, c.status, to, c.to)
		}
	}
	// Every non-final status can end: the executor's table reaches a
	// final status from each.
	for _, s := range mgmt.RunStatuses() {
		if !mgmt.RunIsFinal(s) && !mgReachesFinal(s, map[string]bool{}) {
			t.Errorf("status %s can never end", s)
		}
	}
}

func mgReachesFinal(s string, seen map[string]bool) bool {
	if mgmt.RunIsFinal(s) {
		return true
	}
	if seen[s] {
		return false
	}
	seen[s] = true
	for _, next := range mgmt.RunSteps[s] {
		if mgReachesFinal(next, seen) {
			return true
		}
	}
	return false
}

// The newest state version sets latest-change-at; the workspace must be
// locked by the writer.
func TestStateVersionsSetLatestChange(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	w := e.workspace("ws-a", "acme", "", "app")
	sv := func(id string, at time.Time, by string) *StateVersionCreateRequest {
		return &StateVersionCreateRequest{StateVersion: &mgmt.StateVersion{ID: id, WorkspaceID: "ws-a", Serial: 1, CreatedBy: by, CreatedAt: at}}
	}
	e.fail(StateVersionCreateRequestType, sv("sv-1", e.now(), "user-ann"), state.ErrConflict)
	e.apply(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-a", LockedBy: "user-ann"})
	e.fail(StateVersionCreateRequestType, sv("sv-1", e.now(), "user-bob"), state.ErrConflict)
	e.failField(StateVersionCreateRequestType, &StateVersionCreateRequest{StateVersion: &mgmt.StateVersion{ID: "sv-1", WorkspaceID: "ws-a", Serial: -1}},
		"/data/attributes/serial")
	later := w.CreatedAt.Add(time.Hour)
	e.apply(StateVersionCreateRequestType, sv("sv-1", later, "user-ann"))
	got := stMust[*mgmt.Workspace](t)(e.s.WorkspaceByID(nil, "ws-a"))
	if !got.LatestChangeAt.Equal(later) || got.LatestStateVersionID != "sv-1" {
		t.Errorf("after sv-1: latest %v %s", got.LatestChangeAt, got.LatestStateVersionID)
	}
	// An older one (clock skew between leaders) does not move it back.
	e.apply(StateVersionCreateRequestType, sv("sv-0", later.Add(-time.Minute), "user-ann"))
	if got := stMust[*mgmt.Workspace](t)(e.s.WorkspaceByID(nil, "ws-a")); got.LatestStateVersionID != "sv-1" {
		t.Errorf("an older state version became the latest")
	}
	e.apply(StateVersionCreateRequestType, sv("sv-2", later.Add(time.Minute), ""))
	got = stMust[*mgmt.Workspace](t)(e.s.WorkspaceByID(nil, "ws-a"))
	if got.LatestStateVersionID != "sv-2" || !got.LatestChangeAt.Equal(later.Add(time.Minute)) {
		t.Errorf("after sv-2: %v %s", got.LatestChangeAt, got.LatestStateVersionID)
	}
	ids := []string{}
	for _, v := range stMust[[]*mgmt.StateVersion](t)(e.s.StateVersionsByWorkspace(nil, "ws-a")) {
		ids = append(ids, v.ID)
	}
	if !slices.Equal(ids, []string{"sv-2", "sv-0", "sv-1"}) {
		t.Errorf("state versions newest first (by creation) = %v", ids)
	}
	e.apply(WorkspaceDeleteRequestType, &WorkspaceDeleteRequest{ID: "ws-a"})
	if v := stMust[*mgmt.StateVersion](t)(e.s.StateVersionByID(nil, "sv-1")); v != nil {
		t.Error("a deleted workspace keeps its state versions")
	}
}

func TestToolAndPolicyVersions(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	tv := e.toolVersion("tool-a", mgmt.VersionFamilyTool, "1.5.0", mgmt.ToolVersionPatch{DeprecatedReason: mgPtr("ignored")})
	if !tv.Enabled || tv.Official || tv.Beta || tv.Deprecated || tv.DeprecatedReason != nil {
		t.Errorf("defaults = %+v", tv)
	}
	if tv.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 || tv.CreatedAt.Location() != time.UTC {
		t.Errorf("created-at %v is not UTC milliseconds", tv.CreatedAt)
	}
	// Archs alone give url and sha.
	sha := strings.Repeat("0f", 32)
	arch := e.toolVersion("tool-b", mgmt.VersionFamilyTool, "1.6.0", mgmt.ToolVersionPatch{Archs: &[]mgmt.ToolVersionArch{
		{URL: "https://x.example/darwin.zip", SHA: sha, OS: "darwin", Arch: "arm64"},
		{URL: "https://x.example/linux.zip", SHA: sha, OS: "linux", Arch: "amd64"}}})
	if arch.URL != "https://x.example/linux.zip" || arch.SHA != sha || len(arch.Archs) != 2 {
		t.Errorf("archs-only version = %+v", arch)
	}
	// Versions are unique per family, not across families.
	e.failField(ToolVersionCreateRequestType, &ToolVersionCreateRequest{ID: "tool-c", Family: mgmt.VersionFamilyTool, Attributes: mgmt.ToolVersionPatch{
		Version: mgPtr("1.5.0"), URL: mgPtr("https://x.example/a.zip"), SHA: mgPtr(sha)}}, "/data/attributes/version")
	e.toolVersion("tool-p", mgmt.VersionFamilyPolicy, "1.5.0", mgmt.ToolVersionPatch{})
	bad := []struct {
		patch mgmt.ToolVersionPatch
		field string
	}{
		{mgmt.ToolVersionPatch{URL: mgPtr("https://x.example/a.zip"), SHA: mgPtr(sha)}, "/data/attributes/version"},
		{mgmt.ToolVersionPatch{Version: mgPtr("1.5"), URL: mgPtr("https://x.example/a.zip"), SHA: mgPtr(sha)}, "/data/attributes/version"},
		{mgmt.ToolVersionPatch{Version: mgPtr("v1.5.0"), URL: mgPtr("https://x.example/a.zip"), SHA: mgPtr(sha)}, "/data/attributes/version"},
		{mgmt.ToolVersionPatch{Version: mgPtr("1.5.0-"), URL: mgPtr("https://x.example/a.zip"), SHA: mgPtr(sha)}, "/data/attributes/version"},
		{mgmt.ToolVersionPatch{Version: mgPtr("2.0.0"), SHA: mgPtr(sha)}, "/data/attributes/url"},
		{mgmt.ToolVersionPatch{Version: mgPtr("2.0.0"), URL: mgPtr("ftp://x/a.zip"), SHA: mgPtr(sha)}, "/data/attributes/url"},
		{mgmt.ToolVersionPatch{Version: mgPtr("2.0.0"), URL: mgPtr("https://x.example/a.zip")}, "/data/attributes/sha"},
		{mgmt.ToolVersionPatch{Version: mgPtr("2.0.0"), URL: mgPtr("https://x.example/a.zip"), SHA: mgPtr("abc")}, "/data/attributes/sha"},
		{mgmt.ToolVersionPatch{Version: mgPtr("2.0.0"), Archs: &[]mgmt.ToolVersionArch{{URL: "https://x.example/a", SHA: sha, OS: "darwin", Arch: "arm64"}}},
			"/data/attributes/url"},
		{mgmt.ToolVersionPatch{Version: mgPtr("2.0.0"), Archs: &[]mgmt.ToolVersionArch{{URL: "https://x.example/a", SHA: sha, OS: "Linux", Arch: "amd64"}}},
			"/data/attributes/archs/0/os"},
	}
	for _, b := range bad {
		e.failField(ToolVersionCreateRequestType, &ToolVersionCreateRequest{ID: "tool-z", Family: mgmt.VersionFamilyTool, Attributes: b.patch}, b.field)
	}
	e.fail(ToolVersionCreateRequestType, &ToolVersionCreateRequest{ID: "tool-z", Family: "engine"}, state.ErrInvalid)

	// deprecated-reason is kept only while deprecated.
	upd := e.apply(ToolVersionUpdateRequestType, &ToolVersionUpdateRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool,
		Attributes: mgmt.ToolVersionPatch{Deprecated: mgPtr(true), DeprecatedReason: mgPtr("CVE-1")}}).(*mgmt.ToolVersion)
	if !upd.Deprecated || upd.DeprecatedReason == nil || *upd.DeprecatedReason != "CVE-1" || upd.URL != tv.URL {
		t.Errorf("deprecate = %+v", upd)
	}
	upd = e.apply(ToolVersionUpdateRequestType, &ToolVersionUpdateRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool,
		Attributes: mgmt.ToolVersionPatch{Deprecated: mgPtr(false)}}).(*mgmt.ToolVersion)
	if upd.DeprecatedReason != nil {
		t.Errorf("undeprecated version keeps reason %q", *upd.DeprecatedReason)
	}
	e.fail(ToolVersionUpdateRequestType, &ToolVersionUpdateRequest{ID: "tool-p", Family: mgmt.VersionFamilyTool}, state.ErrNotFound)
	e.failField(ToolVersionUpdateRequestType, &ToolVersionUpdateRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool,
		Attributes: mgmt.ToolVersionPatch{Version: mgPtr("1.6.0")}}, "/data/attributes/version")
	e.failField(ToolVersionUpdateRequestType, &ToolVersionUpdateRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool,
		Attributes: mgmt.ToolVersionPatch{SHA: mgPtr("")}}, "/data/attributes/sha")

	// Delete: refused for official and used versions (422), else 204.
	e.toolVersion("tool-o", mgmt.VersionFamilyTool, "1.0.0", mgmt.ToolVersionPatch{Official: mgPtr(true)})
	e.failField(ToolVersionDeleteRequestType, &ToolVersionDeleteRequest{ID: "tool-o", Family: mgmt.VersionFamilyTool}, "/data/attributes/official")
	e.workspace("ws-a", "acme", "", "app")
	e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-a", Attributes: mgmt.WorkspacePatch{ToolVersion: mgPtr("1.5.0")}})
	e.failField(ToolVersionDeleteRequestType, &ToolVersionDeleteRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool}, "/data/attributes/usage")
	e.failField(ToolVersionUpdateRequestType, &ToolVersionUpdateRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool,
		Attributes: mgmt.ToolVersionPatch{Version: mgPtr("1.5.1")}}, "/data/attributes/version")
	e.apply(PolicySetCreateRequestType, &PolicySetCreateRequest{ID: "polset-1", OrganizationName: "acme",
		Attributes: mgmt.PolicySetPatch{Name: mgPtr("base"), PolicyToolVersion: mgPtr("1.5.0")}})
	e.failField(ToolVersionDeleteRequestType, &ToolVersionDeleteRequest{ID: "tool-p", Family: mgmt.VersionFamilyPolicy}, "/data/attributes/usage")
	e.apply(PolicySetUpdateRequestType, &PolicySetUpdateRequest{ID: "polset-1", Attributes: mgmt.PolicySetPatch{PolicyToolVersion: mgPtr("")}})
	e.apply(ToolVersionDeleteRequestType, &ToolVersionDeleteRequest{ID: "tool-p", Family: mgmt.VersionFamilyPolicy})
	e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-a", Attributes: mgmt.WorkspacePatch{ToolVersion: mgPtr("")}})
	e.apply(ToolVersionDeleteRequestType, &ToolVersionDeleteRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool})
	e.fail(ToolVersionDeleteRequestType, &ToolVersionDeleteRequest{ID: "tool-a", Family: mgmt.VersionFamilyTool}, state.ErrNotFound)
}

func TestPolicySets(t *testing.T) {
	e := newMgEnv(t)
	e.org("acme", "")
	e.toolVersion("tool-p", mgmt.VersionFamilyPolicy, "0.9.0", mgmt.ToolVersionPatch{})
	e.toolVersion("tool-t", mgmt.VersionFamilyTool, "1.0.0", mgmt.ToolVersionPatch{})
	s := e.apply(PolicySetCreateRequestType, &PolicySetCreateRequest{ID: "polset-1", OrganizationName: "acme", CreatedAt: e.now(),
		Attributes: mgmt.PolicySetPatch{Name: mgPtr("base"), Overridable: mgPtr(true), PolicyToolVersion: mgPtr("0.9.0")}}).(*mgmt.PolicySet)
	if !s.Overridable || s.PolicyToolVersion != "0.9.0" {
		t.Errorf("policy set = %+v", s)
	}
	e.failField(PolicySetCreateRequestType, &PolicySetCreateRequest{ID: "polset-2", OrganizationName: "acme",
		Attributes: mgmt.PolicySetPatch{Name: mgPtr("BASE")}}, "/data/attributes/name")
	e.failField(PolicySetCreateRequestType, &PolicySetCreateRequest{ID: "polset-2", OrganizationName: "acme",
		Attributes: mgmt.PolicySetPatch{Name: mgPtr("other"), PolicyToolVersion: mgPtr("1.0.0")}}, "/data/attributes/policy-tool-version")
	e.failField(PolicySetCreateRequestType, &PolicySetCreateRequest{ID: "polset-2", OrganizationName: "acme"}, "/data/attributes/name")
	pv := stMust[*mgmt.ToolVersion](t)(e.s.ToolVersionByVersion(nil, mgmt.VersionFamilyPolicy, "0.9.0"))
	if n := stMust[int](t)(e.s.ToolVersionUsage(nil, pv)); n != 1 {
		t.Errorf("policy version usage = %d, want 1", n)
	}
	if sets := stMust[[]*mgmt.PolicySet](t)(e.s.PolicySetsByOrganization(nil, "acme")); len(sets) != 1 {
		t.Errorf("policy sets = %v", sets)
	}
	e.apply(PolicySetDeleteRequestType, &PolicySetDeleteRequest{ID: "polset-1"})
	e.fail(PolicySetDeleteRequestType, &PolicySetDeleteRequest{ID: "polset-1"}, state.ErrNotFound)
}
