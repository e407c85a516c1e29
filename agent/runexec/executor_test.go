package runexec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// memRaft applies commands to a store in order, as raft would on a
// single server: real commands, encoded and applied, without consensus.
type memRaft struct {
	mu    sync.Mutex
	s     *store.Store
	index uint64
}

func (m *memRaft) Apply(_ context.Context, t store.MessageType, req any) (any, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, err := store.Encode(t, req)
	if err != nil {
		return nil, 0, err
	}
	m.index++
	resp := m.s.Apply(m.index, data)
	if err, ok := resp.(error); ok {
		return nil, m.index, err
	}
	return resp, m.index, nil
}

func (m *memRaft) must(t *testing.T, mt store.MessageType, req any) any {
	t.Helper()
	resp, _, err := m.Apply(context.Background(), mt, req)
	if err != nil {
		t.Fatalf("apply %d: %v", mt, err)
	}
	return resp
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// world is an organization with a workspace, a terraform version and an
// uploaded configuration version, and a run on it.
func world(t *testing.T, autoApply bool) (*memRaft, *store.Store) {
	t.Helper()
	s, err := store.NewStore(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := &memRaft{s: s}
	r.must(t, store.UserUpsertRequestType, &store.UserUpsertRequest{User: &mgmt.User{ID: "user-ann", Username: "ann", Email: "ann@example.com", CreatedAt: t0}})
	r.must(t, store.OrganizationCreateRequestType, &store.OrganizationCreateRequest{
		Organization: &mgmt.Organization{Name: "acme", ExternalID: "org-acme", Email: "a@acme.example", CreatedAt: t0},
		OwnersTeamID: "team-owners", DefaultProjectID: "prj-default", OwnerUserID: "user-ann"})
	r.must(t, store.WorkspaceCreateRequestType, &store.WorkspaceCreateRequest{ID: "ws-app", OrganizationName: "acme", CreatedAt: t0,
		Attributes: mgmt.WorkspacePatch{Name: tptr("app")}})
	r.must(t, store.ToolVersionCreateRequestType, &store.ToolVersionCreateRequest{ID: "tool-1", Family: mgmt.VersionFamilyTool, CreatedAt: t0,
		Attributes: mgmt.ToolVersionPatch{Version: tptr("1.5.7"), URL: tptr("https://releases.example/terraform"), SHA: tptr(fmt.Sprintf("%064x", 1)), Enabled: tptr(true)}})
	r.must(t, store.ConfigurationVersionCreateRequestType, &store.ConfigurationVersionCreateRequest{ConfigurationVersion: &mgmt.ConfigurationVersion{
		ID: "cv-1", WorkspaceID: "ws-app", UploadSecret: "s", CreatedBy: "user-ann", CreatedAt: t0}})
	r.must(t, store.ConfigurationVersionUploadRequestType, &store.ConfigurationVersionUploadRequest{ID: "cv-1", Archive: []byte("tgz"), Now: t0})
	r.must(t, store.RunCreateRequestType, &store.RunCreateRequest{Run: &mgmt.Run{ID: "run-1", WorkspaceID: "ws-app", CreatedBy: "user-ann", CreatedAt: t0,
		RunExecution: mgmt.RunExecution{ConfigurationVersionID: "cv-1", AutoApply: autoApply}}})
	return r, s
}

func tptr[T any](v T) *T { return &v }

func start(t *testing.T, r *memRaft, s *store.Store) *Executor {
	t.Helper()
	n := 0
	var mu sync.Mutex
	e, err := New(Config{Store: s, Raft: r, Now: func() time.Time { return t0 }, Command: "/usr/bin/sched", APIAddress: "https://127.0.0.1:4646",
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("00000000-0000-0000-0000-%012d", n)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func waitRun(t *testing.T, s *store.Store, what string, ok func(*mgmt.Run) bool) *mgmt.Run {
	t.Helper()
	var got *mgmt.Run
	testutil.WaitForErr(t, 10*time.Second, what, func() error {
		r, err := s.RunByID(nil, "run-1")
		if err != nil {
			return err
		}
		got = r
		if !ok(r) {
			return fmt.Errorf("run is %s (plan %s, apply %s, error %q)", r.Status, r.Plan.Status, r.Apply.Status, r.ErrorMessage)
		}
		return nil
	})
	return got
}

// alloc places (or moves) the one allocation of a phase's job.
func alloc(t *testing.T, r *memRaft, s *store.Store, jobID, clientStatus string) {
	t.Helper()
	job, _ := s.JobByID(nil, mgmt.RunNamespace, jobID)
	if job == nil {
		t.Fatalf("job %s not registered", jobID)
	}
	id := "alloc-" + jobID
	if a, _ := s.AllocByID(nil, id); a == nil {
		r.must(t, store.AllocUpdateRequestType, &store.AllocUpdateRequest{Now: t0.UnixNano(), Allocs: []*state.Allocation{{
			ID: id, Namespace: mgmt.RunNamespace, EvalID: "eval", Name: jobID + ".terraform[0]", NodeID: "node-1", JobID: jobID, Job: job,
			TaskGroup: "terraform", DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending,
			AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"terraform": {CPU: 500, MemoryMB: 512}}}}}})
	}
	r.must(t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Now: t0.UnixNano(),
		Allocs: []*state.Allocation{{ID: id, ClientStatus: clientStatus}}})
}

// TestExecutorRunsAPlanAndApply follows a run with auto-apply: the
// executor starts the plan job (namespace, job, worker environment), moves
// the run to planning when its allocation runs, starts the apply once the
// worker reported a plan with changes, and leaves the end to the worker.
func TestExecutorRunsAPlanAndApply(t *testing.T) {
	r, s := world(t, true)
	start(t, r, s)
	run := waitRun(t, s, "the plan to be queued", func(x *mgmt.Run) bool { return x.Status == mgmt.RunPlanQueued })
	job, _ := s.JobByID(nil, mgmt.RunNamespace, "run-1-plan")
	if job == nil || run.Plan.JobID != "run-1-plan" || run.WorkerSecret == "" || run.TerraformVersion != "1.5.7" {
		t.Fatalf("plan job %+v, run %+v", job, run)
	}
	task := job.TaskGroups[0].Tasks[0]
	if task.Driver != "raw_exec" || task.Config["command"] != "/usr/bin/sched" || task.Env[EnvSecret] != run.WorkerSecret ||
		task.Env[EnvPhase] != mgmt.PhasePlan || task.Env[EnvTFURL] != "https://releases.example/terraform" || task.Env[EnvAddress] != "https://127.0.0.1:4646" {
		t.Errorf("plan task = %+v", task)
	}
	if rp := job.TaskGroups[0].ReschedulePolicy; rp == nil || rp.Attempts != 0 || rp.Unlimited {
		t.Errorf("a failed plan would be rescheduled: %+v", rp)
	}
	alloc(t, r, s, "run-1-plan", state.AllocClientStatusRunning)
	waitRun(t, s, "planning", func(x *mgmt.Run) bool { return x.Status == mgmt.RunPlanning })
	r.must(t, store.RunPhaseUpdateRequestType, &store.RunPhaseUpdateRequest{RunID: "run-1", Phase: mgmt.PhasePlan, Now: t0,
		Result: &mgmt.PlanResult{OK: true, Additions: 1, HasChanges: true}})
	alloc(t, r, s, "run-1-plan", state.AllocClientStatusComplete)
	run = waitRun(t, s, "the apply to be queued (auto-apply)", func(x *mgmt.Run) bool { return x.Status == mgmt.RunApplyQueued })
	if w, _ := s.WorkspaceByID(nil, "ws-app"); !w.Locked || w.LockedBy != "run-1" {
		t.Errorf("the apply did not lock the workspace: %+v", w)
	}
	if job, _ := s.JobByID(nil, mgmt.RunNamespace, "run-1-apply"); job == nil || job.TaskGroups[0].Tasks[0].Env[EnvSecret] != run.WorkerSecret {
		t.Errorf("apply job = %+v", job)
	}
	alloc(t, r, s, "run-1-apply", state.AllocClientStatusRunning)
	waitRun(t, s, "applying", func(x *mgmt.Run) bool { return x.Status == mgmt.RunApplying })
}

// TestExecutorErrorsARunWhoseJobDied: an allocation that fails before the
// worker reported errors the run (and releases nothing it did not hold).
func TestExecutorErrorsARunWhoseJobDied(t *testing.T) {
	r, s := world(t, false)
	start(t, r, s)
	waitRun(t, s, "the plan to be queued", func(x *mgmt.Run) bool { return x.Status == mgmt.RunPlanQueued })
	alloc(t, r, s, "run-1-plan", state.AllocClientStatusFailed)
	run := waitRun(t, s, "errored", func(x *mgmt.Run) bool { return x.Status == mgmt.RunErrored })
	if run.Plan.Status != mgmt.PhaseErrored || run.ErrorMessage == "" {
		t.Errorf("errored run: plan %s, message %q", run.Plan.Status, run.ErrorMessage)
	}
}

// TestExecutorStopsACanceledRunsJob, and a new executor (a new leader)
// picks up where the last one left: the run was canceled while no
// executor ran; the next one stops its job.
func TestExecutorStopsACanceledRunsJob(t *testing.T) {
	r, s := world(t, false)
	e := start(t, r, s)
	waitRun(t, s, "the plan to be queued", func(x *mgmt.Run) bool { return x.Status == mgmt.RunPlanQueued })
	alloc(t, r, s, "run-1-plan", state.AllocClientStatusRunning)
	waitRun(t, s, "planning", func(x *mgmt.Run) bool { return x.Status == mgmt.RunPlanning })
	e.Stop() // leadership lost
	r.must(t, store.RunActionRequestType, &store.RunActionRequest{ID: "run-1", Action: mgmt.RunActionCancel, Now: t0})
	start(t, r, s) // a new leader
	testutil.WaitForErr(t, 10*time.Second, "the canceled run's job to stop", func() error {
		job, _ := s.JobByID(nil, mgmt.RunNamespace, "run-1-plan")
		if job == nil || !job.Stop {
			return errors.New("the plan job still runs")
		}
		return nil
	})
	if run, _ := s.RunByID(nil, "run-1"); run.Status != mgmt.RunCanceled || run.Plan.Status != mgmt.PhaseCanceled {
		t.Errorf("run %s, plan %s", run.Status, run.Plan.Status)
	}
}

// TestExecutorSerializesAWorkspacesRuns: a second run waits while the
// first has not ended, then starts.
func TestExecutorSerializesAWorkspacesRuns(t *testing.T) {
	r, s := world(t, false)
	r.must(t, store.RunCreateRequestType, &store.RunCreateRequest{Run: &mgmt.Run{ID: "run-2", WorkspaceID: "ws-app", CreatedBy: "user-ann", CreatedAt: t0,
		RunExecution: mgmt.RunExecution{ConfigurationVersionID: "cv-1"}}})
	start(t, r, s)
	waitRun(t, s, "the first plan to be queued", func(x *mgmt.Run) bool { return x.Status == mgmt.RunPlanQueued })
	if second, _ := s.RunByID(nil, "run-2"); second.Status != mgmt.RunPending {
		t.Fatalf("the second run started beside the first: %s", second.Status)
	}
	r.must(t, store.RunActionRequestType, &store.RunActionRequest{ID: "run-1", Action: mgmt.RunActionCancel, Now: t0})
	testutil.WaitForErr(t, 10*time.Second, "the second run to start", func() error {
		if second, _ := s.RunByID(nil, "run-2"); second.Status != mgmt.RunPlanQueued {
			return fmt.Errorf("second run %s", second.Status)
		}
		return nil
	})
}

func TestJobStateOf(t *testing.T) {
	job := &state.Job{Status: state.JobStatusPending}
	if got := JobStateOf(job, nil); got != mgmt.JobWaiting {
		t.Errorf("no allocation yet: %v", got)
	}
	if got := JobStateOf(&state.Job{Status: state.JobStatusDead}, nil); got != mgmt.JobDone {
		t.Errorf("dead job without allocations: %v", got)
	}
	run := &state.Allocation{ClientStatus: state.AllocClientStatusRunning, DesiredStatus: state.AllocDesiredStatusRun}
	failed := &state.Allocation{ClientStatus: state.AllocClientStatusFailed, DesiredStatus: state.AllocDesiredStatusRun}
	if got := JobStateOf(job, []*state.Allocation{failed, run}); got != mgmt.JobRunning {
		t.Errorf("one running: %v", got)
	}
	if got := JobStateOf(job, []*state.Allocation{failed}); got != mgmt.JobDone {
		t.Errorf("all failed: %v", got)
	}
}
