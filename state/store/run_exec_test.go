package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
)

// rxEnv is a workspace with an uploaded configuration version and a run
// on it, as the executor finds them.
func rxEnv(t *testing.T) *mgEnv {
	t.Helper()
	e := newMgEnv(t)
	e.user("user-ann", "ann", false)
	e.org("acme", "user-ann")
	e.workspace("ws-app", "acme", "", "app")
	e.apply(ConfigurationVersionCreateRequestType, &ConfigurationVersionCreateRequest{ConfigurationVersion: &mgmt.ConfigurationVersion{
		ID: "cv-1", WorkspaceID: "ws-app", UploadSecret: "s", CreatedBy: "user-ann", CreatedAt: e.now()}})
	e.apply(ConfigurationVersionUploadRequestType, &ConfigurationVersionUploadRequest{ID: "cv-1", Archive: []byte("tgz"), Now: e.now()})
	e.apply(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: "run-1", WorkspaceID: "ws-app", CreatedBy: "user-ann", CreatedAt: e.now(),
		RunExecution: mgmt.RunExecution{ConfigurationVersionID: "cv-1"}}})
	return e
}

// rxStart is the executor's command that starts a phase of run-1.
func rxStart(e *mgEnv, phase string) *RunPhaseStartRequest {
	job := stJob("run-1-" + phase)
	job.Namespace, job.Type = mgmt.RunNamespace, state.JobTypeBatch
	return &RunPhaseStartRequest{RunID: "run-1", Phase: phase, Namespace: &state.Namespace{Name: mgmt.RunNamespace},
		Job: job, Eval: stEval("eval-"+phase, job), TerraformVersion: "1.5.7", WorkerSecret: "sekrit", Now: e.now()}
}

func rxRun(e *mgEnv) *mgmt.Run {
	e.t.Helper()
	r, err := e.s.RunByID(nil, "run-1")
	if err != nil || r == nil {
		e.t.Fatalf("run-1: %v %v", r, err)
	}
	return r
}

// TestRunExecutionLifecycle drives a run through the executor's and the
// worker's commands: plan job started (namespace created, job and eval
// registered), planning, the plan's report, confirmation, the apply job
// (the workspace locked for the run), its report (unlocked).
func TestRunExecutionLifecycle(t *testing.T) {
	e := rxEnv(t)
	e.apply(RunPhaseStartRequestType, rxStart(e, mgmt.PhasePlan))
	r := rxRun(e)
	if r.Status != mgmt.RunPlanQueued || r.Plan.Status != mgmt.PhaseQueued || r.Plan.JobID != "run-1-plan" || r.WorkerSecret != "sekrit" || r.TerraformVersion != "1.5.7" {
		t.Fatalf("after the plan's start: %+v", r)
	}
	if ns, _ := e.s.NamespaceByName(nil, mgmt.RunNamespace); ns == nil {
		t.Error("namespace tfe-runs was not created")
	}
	if job, _ := e.s.JobByID(nil, mgmt.RunNamespace, "run-1-plan"); job == nil {
		t.Error("the plan job was not registered")
	}
	// A second start is refused: the run is no longer pending.
	e.fail(RunPhaseStartRequestType, rxStart(e, mgmt.PhasePlan), state.ErrConflict)

	e.apply(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Status: mgmt.RunPlanning, Now: e.now()})
	e.apply(RunLogAppendRequestType, &RunLogAppendRequest{RunID: "run-1", Phase: mgmt.PhasePlan, Data: []byte("Plan: 1 to add\n")})
	e.apply(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Phase: mgmt.PhasePlan, Now: e.now(),
		Result: &mgmt.PlanResult{OK: true, Additions: 1, HasChanges: true}})
	r = rxRun(e)
	if r.Status != mgmt.RunPlanned || r.Plan.Status != mgmt.PhaseFinished || r.Plan.Additions != 1 || !r.Plan.HasChanges ||
		!bytes.Equal(r.Plan.Log, []byte("Plan: 1 to add\n")) {
		t.Fatalf("after the plan's report: %+v", r)
	}
	// The plan's log is closed once it finished.
	e.fail(RunLogAppendRequestType, &RunLogAppendRequest{RunID: "run-1", Phase: mgmt.PhasePlan, Data: []byte("late")}, state.ErrConflict)

	e.apply(RunActionRequestType, &RunActionRequest{ID: "run-1", Action: mgmt.RunActionApply, Now: e.now()})
	e.apply(RunPhaseStartRequestType, rxStart(e, mgmt.PhaseApply))
	w, _ := e.s.WorkspaceByID(nil, "ws-app")
	if !w.Locked || w.LockedBy != "run-1" {
		t.Fatalf("the apply did not lock the workspace for the run: %+v", w)
	}
	e.apply(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Phase: mgmt.PhaseApply, Now: e.now(),
		Result: &mgmt.PlanResult{OK: true, Additions: 1, HasChanges: true}})
	r = rxRun(e)
	if r.Status != mgmt.RunApplied || r.Apply.Status != mgmt.PhaseFinished || r.StatusTimestamps[mgmt.RunApplying].IsZero() {
		t.Fatalf("after the apply's report (through applying): %+v", r)
	}
	if w, _ := e.s.WorkspaceByID(nil, "ws-app"); w.Locked {
		t.Errorf("the applied run left the workspace locked by %s", w.LockedBy)
	}
	// A report for a run that ended changes nothing.
	e.fail(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Phase: mgmt.PhaseApply, Now: e.now(),
		Result: &mgmt.PlanResult{OK: false, Error: "late"}}, state.ErrConflict)
}

// TestRunCancelReleasesTheWorkspace: a run canceled while applying ends
// its phases and unlocks the workspace it locked.
func TestRunCancelReleasesTheWorkspace(t *testing.T) {
	e := rxEnv(t)
	e.apply(RunPhaseStartRequestType, rxStart(e, mgmt.PhasePlan))
	e.apply(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Phase: mgmt.PhasePlan, Now: e.now(),
		Result: &mgmt.PlanResult{OK: true, HasChanges: true}})
	e.apply(RunActionRequestType, &RunActionRequest{ID: "run-1", Action: mgmt.RunActionApply, Now: e.now()})
	e.apply(RunPhaseStartRequestType, rxStart(e, mgmt.PhaseApply))
	e.apply(RunActionRequestType, &RunActionRequest{ID: "run-1", Action: mgmt.RunActionCancel, Now: e.now()})
	r := rxRun(e)
	if r.Status != mgmt.RunCanceled || r.Plan.Status != mgmt.PhaseFinished || r.Apply.Status != mgmt.PhaseCanceled {
		t.Errorf("canceled run: %s, plan %s, apply %s", r.Status, r.Plan.Status, r.Apply.Status)
	}
	if w, _ := e.s.WorkspaceByID(nil, "ws-app"); w.Locked {
		t.Errorf("the canceled run left the workspace locked by %s", w.LockedBy)
	}
}

// TestRunApplyOnWorkspaceLockedByAnother: the apply cannot start on a
// workspace someone else locked (the executor then errors the run), and
// the refused command changes nothing.
func TestRunApplyOnWorkspaceLockedByAnother(t *testing.T) {
	e := rxEnv(t)
	e.apply(RunPhaseStartRequestType, rxStart(e, mgmt.PhasePlan))
	e.apply(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Phase: mgmt.PhasePlan, Now: e.now(),
		Result: &mgmt.PlanResult{OK: true, HasChanges: true}})
	e.apply(RunActionRequestType, &RunActionRequest{ID: "run-1", Action: mgmt.RunActionApply, Now: e.now()})
	e.apply(WorkspaceLockRequestType, &WorkspaceLockRequest{ID: "ws-app", LockedBy: "user-bob", Now: e.now()})
	e.fail(RunPhaseStartRequestType, rxStart(e, mgmt.PhaseApply), state.ErrConflict)
	e.apply(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Status: mgmt.RunErrored, Message: "locked", Now: e.now()})
	if r := rxRun(e); r.Status != mgmt.RunErrored || r.ErrorMessage != "locked" || r.Apply.Status != mgmt.PhaseUnreachable {
		t.Errorf("run: %s %q apply %s", r.Status, r.ErrorMessage, r.Apply.Status)
	}
	if w, _ := e.s.WorkspaceByID(nil, "ws-app"); !w.Locked || w.LockedBy != "user-bob" {
		t.Errorf("another's lock was released: %+v", w)
	}
}

func TestRunExecutionBadInput(t *testing.T) {
	e := rxEnv(t)
	bad := rxStart(e, mgmt.PhasePlan)
	bad.Job.Namespace = state.DefaultNamespace
	e.failField(RunPhaseStartRequestType, bad, "Job")
	bad = rxStart(e, "destroy")
	e.failField(RunPhaseStartRequestType, bad, "Phase")
	e.fail(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-1", Status: mgmt.RunApplied, Now: e.now()}, state.ErrConflict)
	err := e.fail(RunLogAppendRequestType, &RunLogAppendRequest{RunID: "run-1", Phase: mgmt.PhasePlan,
		Data: bytes.Repeat([]byte("x"), mgmt.MaxRunLogChunk+1)}, state.ErrInvalid)
	if !errors.Is(err, state.ErrInvalid) {
		t.Errorf("oversized chunk: %v", err)
	}
	e.fail(RunPhaseUpdateRequestType, &RunPhaseUpdateRequest{RunID: "run-404", Status: mgmt.RunPlanning, Now: e.now()}, state.ErrNotFound)
	e.fail(RunCreateRequestType, &RunCreateRequest{Run: &mgmt.Run{ID: "run-2", WorkspaceID: "ws-app", CreatedAt: e.now(),
		RunExecution: mgmt.RunExecution{ConfigurationVersionID: "cv-1x"}}}, state.ErrNotFound)
}

// TestAgentPools: create, rename, names unique per organization,
// allowed workspaces of the organization only, delete refused while a
// workspace uses the pool.
func TestAgentPools(t *testing.T) {
	e := rxEnv(t)
	e.org("bolt", "user-ann")
	e.workspace("ws-other", "bolt", "", "other")
	p := e.apply(AgentPoolUpsertRequestType, &AgentPoolUpsertRequest{Create: true, ID: "apool-1", OrganizationName: "acme", Now: e.now(),
		Patch: mgmt.AgentPoolPatch{Name: mgPtr("gpu")}}).(*mgmt.AgentPool)
	if p.NodePool() != "gpu" || !p.OrganizationScoped {
		t.Errorf("pool: %+v", p)
	}
	e.failField(AgentPoolUpsertRequestType, &AgentPoolUpsertRequest{Create: true, ID: "apool-2", OrganizationName: "acme", Now: e.now(),
		Patch: mgmt.AgentPoolPatch{Name: mgPtr("GPU")}}, mgmt.AttrPointer("name"))
	e.failField(AgentPoolUpsertRequestType, &AgentPoolUpsertRequest{Create: true, ID: "apool-2", OrganizationName: "acme", Now: e.now(),
		Patch: mgmt.AgentPoolPatch{Name: mgPtr("bad name")}}, mgmt.AttrPointer("name"))
	e.fail(AgentPoolUpsertRequestType, &AgentPoolUpsertRequest{ID: "apool-1", Now: e.now(),
		Patch: mgmt.AgentPoolPatch{AllowedWorkspaceIDs: &[]string{"ws-other"}}}, state.ErrInvalid)
	e.apply(AgentPoolUpsertRequestType, &AgentPoolUpsertRequest{ID: "apool-1", Now: e.now(), Patch: mgmt.AgentPoolPatch{Name: mgPtr("cpu")}})
	e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-app", Now: e.now(),
		Attributes: mgmt.WorkspacePatch{ExecutionMode: mgPtr(mgmt.ExecutionModeAgent), AgentPoolID: mgPtr("apool-1")}})
	e.fail(AgentPoolDeleteRequestType, &AgentPoolDeleteRequest{ID: "apool-1"}, state.ErrConflict)
	e.apply(WorkspaceUpdateRequestType, &WorkspaceUpdateRequest{ID: "ws-app", Now: e.now(),
		Attributes: mgmt.WorkspacePatch{ExecutionMode: mgPtr(mgmt.ExecutionModeRemote)}})
	e.apply(AgentPoolDeleteRequestType, &AgentPoolDeleteRequest{ID: "apool-1"})
	if p, _ := e.s.AgentPoolByID(nil, "apool-1"); p != nil {
		t.Errorf("deleted pool still there: %+v", p)
	}
}
