package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// stDeploymentFixture is job web at version 0 with a running deployment
// d1 of one group wanting 2 allocations and 1 canary, canary a1 and
// allocation a2 placed.
func stDeploymentFixture(t *testing.T) *Store {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, stEval("e1", job))
	d := &state.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobCreateIndex: 10, Status: state.DeploymentStatusRunning,
		TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 2, DesiredCanaries: 1, ProgressDeadline: int64(time.Minute)}}}
	canary, other := stAlloc("a1", job, "n1"), stAlloc("a2", job, "n1")
	canary.DeploymentID, other.DeploymentID = "d1", "d1"
	canary.DeploymentStatus = &state.AllocDeploymentStatus{Canary: true}
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Deployment: d, Allocs: []*state.Allocation{canary, other}, Now: 11})
	return s
}

func stDeploymentState(t *testing.T, s *Store) *state.DeploymentState {
	t.Helper()
	d, err := s.DeploymentByID(nil, "d1")
	if err != nil || d == nil {
		t.Fatalf("read d1: %v", err)
	}
	return d.TaskGroups["web"]
}

func TestDeploymentCountsAllocations(t *testing.T) {
	s := stDeploymentFixture(t)
	if ds := stDeploymentState(t, s); ds.PlacedAllocs != 2 || len(ds.PlacedCanaries) != 1 || ds.PlacedCanaries[0] != "a1" {
		t.Fatalf("after placement %+v: want 2 placed, canary a1", ds)
	}
	yes, no := true, false
	at := time.Unix(100, 0)
	report := func(index uint64, id string, healthy *bool) {
		stApply(t, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{
			ID: id, ClientStatus: state.AllocClientStatusRunning, DeploymentStatus: &state.AllocDeploymentStatus{Healthy: healthy, Timestamp: at},
		}}, Now: int64(index)})
	}
	report(12, "a1", &yes)
	report(13, "a1", &yes) // a repeated report counts once
	report(14, "a2", &no)
	ds := stDeploymentState(t, s)
	if ds.HealthyAllocs != 1 || ds.UnhealthyAllocs != 1 {
		t.Fatalf("after reports %+v: want 1 healthy, 1 unhealthy", ds)
	}
	if want := at.Add(time.Minute); !ds.RequireProgressBy.Equal(want) {
		t.Fatalf("RequireProgressBy %v, want the healthy time plus the progress deadline %v", ds.RequireProgressBy, want)
	}
	a1, _ := s.AllocByID(nil, "a1")
	if !a1.DeploymentStatus.Canary {
		t.Fatal("a client report dropped the canary mark")
	}
	// A plan computed before the reports must not reset the counters.
	stale := &state.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobCreateIndex: 10, Status: state.DeploymentStatusRunning,
		TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 2, DesiredCanaries: 1}}}
	stApply(t, s, 15, AllocUpdateRequestType, &AllocUpdateRequest{Deployment: stale, Now: 15})
	if ds := stDeploymentState(t, s); ds.HealthyAllocs != 1 || ds.PlacedAllocs != 2 {
		t.Fatalf("after a stale plan %+v: counters lost", ds)
	}
}

func TestDeploymentPromote(t *testing.T) {
	s := stDeploymentFixture(t)
	// Not healthy yet: refused, nothing changes.
	err, _ := stApplyErr(t, s, 12, DeploymentPromoteRequestType, &DeploymentPromoteRequest{DeploymentID: "d1", All: true}).(error)
	if !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("promote with an unhealthy canary: %v, want invalid", err)
	}
	err, _ = stApplyErr(t, s, 12, DeploymentPromoteRequestType, &DeploymentPromoteRequest{DeploymentID: "d1", Groups: []string{"nope"}}).(error)
	var ve *state.ValidationError
	if !errors.As(err, &ve) || ve.Errors[0].Field != "Groups[0]" {
		t.Fatalf("promote of an unknown group: %v, want a field error on Groups[0]", err)
	}
	yes := true
	stApply(t, s, 13, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{
		ID: "a1", ClientStatus: state.AllocClientStatusRunning, DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &yes},
	}}})
	stApply(t, s, 14, DeploymentPromoteRequestType, &DeploymentPromoteRequest{DeploymentID: "d1", Groups: []string{"web"}})
	if ds := stDeploymentState(t, s); !ds.Promoted {
		t.Fatal("not promoted")
	}
}

func TestDeploymentStatusAndStability(t *testing.T) {
	s := stDeploymentFixture(t)
	stApply(t, s, 12, DeploymentStatusUpdateRequestType, &DeploymentStatusUpdateRequest{
		Updates: []*DeploymentStatusUpdate{{DeploymentID: "d1", Status: state.DeploymentStatusSuccessful, StatusDescription: "done"}},
		Stable:  []JobVersionRef{{Namespace: "default", JobID: "web", Version: 0}},
	})
	d, _ := s.DeploymentByID(nil, "d1")
	job, _ := s.JobByID(nil, "default", "web")
	v0, _ := s.JobByIDAndVersion(nil, "default", "web", 0)
	if d.Status != state.DeploymentStatusSuccessful || !job.Stable || !v0.Stable {
		t.Fatalf("deployment %s, job stable %v, version 0 stable %v: want successful and stable", d.Status, job.Stable, v0.Stable)
	}
	// A finished deployment does not change any more.
	stApply(t, s, 13, DeploymentStatusUpdateRequestType, &DeploymentStatusUpdateRequest{
		Updates: []*DeploymentStatusUpdate{{DeploymentID: "d1", Status: state.DeploymentStatusFailed}},
	})
	if d, _ := s.DeploymentByID(nil, "d1"); d.Status != state.DeploymentStatusSuccessful {
		t.Fatalf("status %s after an update of a finished deployment", d.Status)
	}
	err, _ := stApplyErr(t, s, 14, JobStabilityRequestType, &JobStabilityRequest{Namespace: "default", JobID: "web", Version: 7, Stable: true}).(error)
	if !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("stability of an unknown version: %v, want not found", err)
	}
}

func TestNewVersionCancelsDeployment(t *testing.T) {
	s := stDeploymentFixture(t)
	job, _ := s.JobByID(nil, "default", "web")
	next := job.Copy()
	next.TaskGroups[0].Count = 5
	stRegister(t, s, 12, next, nil)
	if d, _ := s.DeploymentByID(nil, "d1"); d.Status != state.DeploymentStatusCancelled {
		t.Fatalf("deployment of version 0 is %s after version 1 registered, want cancelled", d.Status)
	}
}

func TestJobScale(t *testing.T) {
	s := stDeploymentFixture(t)
	five := int64(5)
	err, _ := stApplyErr(t, s, 12, JobScaleRequestType, &JobScaleRequest{Namespace: "default", JobID: "web", Group: "web", Count: &five, Message: "m"}).(error)
	if !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("scale during an active deployment: %v, want invalid", err)
	}
	if job, _ := s.JobByID(nil, "default", "web"); job.Version != 0 {
		t.Fatal("a refused scale changed the job")
	}
	stApply(t, s, 13, DeploymentStatusUpdateRequestType, &DeploymentStatusUpdateRequest{
		Updates: []*DeploymentStatusUpdate{{DeploymentID: "d1", Status: state.DeploymentStatusSuccessful}},
	})
	job, _ := s.JobByID(nil, "default", "web")
	resp := stApply(t, s, 14, JobScaleRequestType, &JobScaleRequest{Namespace: "default", JobID: "web", Group: "web", Count: &five,
		Message: "more", Eval: stEval("e2", job), Now: 14}).(*JobRegisterResponse)
	job, _ = s.JobByID(nil, "default", "web")
	evs, _ := s.ScalingEventsByJob(nil, "default", "web")
	if job.Version != 1 || job.TaskGroups[0].Count != 5 || resp.EvalID != "e2" {
		t.Fatalf("after scale: version %d count %d eval %q", job.Version, job.TaskGroups[0].Count, resp.EvalID)
	}
	if e := evs.ScalingEvents["web"]; len(e) != 1 || e[0].Message != "more" || e[0].PreviousCount != 2 || *e[0].EvalID != "e2" {
		t.Fatalf("scaling events %+v", e)
	}
	if e, _ := stApplyErr(t, s, 15, JobScaleRequestType, &JobScaleRequest{Namespace: "default", JobID: "web", Group: "api", Message: "x"}).(error); !errors.Is(e, state.ErrInvalid) {
		t.Fatalf("scale of an unknown group: %v, want invalid", e)
	}
}

func TestDeploymentResumeExtendsProgressDeadline(t *testing.T) {
	s := stDeploymentFixture(t)
	set := func(index uint64, status string, now int64) {
		stApply(t, s, index, DeploymentStatusUpdateRequestType, &DeploymentStatusUpdateRequest{
			Updates: []*DeploymentStatusUpdate{{DeploymentID: "d1", Status: status}}, Now: now,
		})
	}
	set(12, state.DeploymentStatusPaused, 100)
	resumeAt := int64(time.Hour)
	set(13, state.DeploymentStatusRunning, resumeAt)
	if got, want := stDeploymentState(t, s).RequireProgressBy, time.Unix(0, resumeAt+int64(time.Minute)); !got.Equal(want) {
		t.Fatalf("RequireProgressBy %v after resume, want %v", got, want)
	}
}

// TestDeploymentCountedInPlaceWithinACommand: a plan's placements of one
// deployment are counted on one copy of it per command (written once,
// then counted in place): the counts come out right, the command's events
// carry the deployment once with its final counts, a snapshot taken
// before still reads the counts it had, and a later command counts on a
// copy of its own.
func TestDeploymentCountedInPlaceWithinACommand(t *testing.T) {
	s := stDeploymentFixture(t) // d1 with a1 and a2 placed at 11
	job := stMust[*state.Job](t)(s.JobByID(nil, "default", "web"))
	before, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	place := func(index uint64, from, n int) {
		t.Helper()
		var allocs []*state.Allocation
		for i := from; i < from+n; i++ {
			a := stAlloc(fmt.Sprintf("p%03d", i), job, fmt.Sprintf("n%d", i%3))
			a.DeploymentID = "d1"
			allocs = append(allocs, a)
		}
		stApply(t, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: int64(index)})
	}
	place(12, 0, 50)
	d := stMust[*state.Deployment](t)(s.DeploymentByID(nil, "d1"))
	if ds := d.TaskGroups["web"]; ds.PlacedAllocs != 52 || d.ModifyIndex != 12 {
		t.Fatalf("after 50 placements in one command: %+v at %d, want 52 placed at 12", ds, d.ModifyIndex)
	}
	old := stMust[*state.Deployment](t)(before.DeploymentByID(nil, "d1"))
	if old.TaskGroups["web"].PlacedAllocs != 2 || old.ModifyIndex != 11 {
		t.Fatalf("a snapshot taken before reads %+v at %d, want 2 placed at 11", old.TaskGroups["web"], old.ModifyIndex)
	}
	batches, _ := s.Events().After(11, 0)
	var seen []*state.Deployment
	for _, b := range batches {
		for _, e := range b.Events {
			if dep, ok := e.Object.(*state.Deployment); ok && b.Index == 12 {
				seen = append(seen, dep)
			}
		}
	}
	if len(seen) != 1 || seen[0].TaskGroups["web"].PlacedAllocs != 52 {
		t.Fatalf("command 12's events carry the deployment %d times (%v), want once with 52 placed", len(seen), seen)
	}
	place(13, 50, 10)
	if ds := stDeploymentState(t, s); ds.PlacedAllocs != 62 {
		t.Fatalf("after 10 more: %d placed, want 62", ds.PlacedAllocs)
	}
	if seen[0].TaskGroups["web"].PlacedAllocs != 52 {
		t.Fatalf("the next command changed command 12's deployment: %d placed", seen[0].TaskGroups["web"].PlacedAllocs)
	}
}
