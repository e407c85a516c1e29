package jobs

import (
	"net/http"
	"testing"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

func TestJobPlanNewJob(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	h.RegisterNode(apitest.TestNode(2))
	before, index := h.Writes(), h.Store.LatestIndex()

	var out state.JobPlanResponse
	rec := h.OK(http.MethodPost, "/v1/job/web/plan", map[string]any{"Job": apitest.TestJob("web")}, &out)
	if out.Index != index || apitest.HeaderIndexOf(t, rec) != index || out.JobModifyIndex != 0 || !out.NextPeriodicLaunch.IsZero() {
		t.Errorf("Index %d (want %d), JobModifyIndex %d, NextPeriodicLaunch %v", out.Index, index, out.JobModifyIndex, out.NextPeriodicLaunch)
	}
	u := out.Annotations.DesiredTGUpdates["web"]
	if u == nil || u.Place != 2 || u.Stop != 0 {
		t.Fatalf("annotations %+v", out.Annotations.DesiredTGUpdates)
	}
	if len(out.FailedTGAllocs) != 0 || out.Diff != nil {
		t.Errorf("failed %v, diff %+v (not asked for)", out.FailedTGAllocs, out.Diff)
	}
	if h.Writes() != before || h.Job("default", "web") != nil {
		t.Fatal("the plan wrote")
	}

	h.OK(http.MethodPut, "/v1/job/web/plan", map[string]any{"Job": apitest.TestJob("web"), "Diff": true}, &out)
	if out.Diff == nil || out.Diff.Type != state.DiffTypeAdded || len(out.Diff.TaskGroups) != 1 || out.Diff.TaskGroups[0].Updates["create"] != 2 {
		t.Errorf("diff %+v", out.Diff)
	} else if tasks := out.Diff.TaskGroups[0].Tasks; len(tasks) != 1 || len(tasks[0].Annotations) != 1 || tasks[0].Annotations[0] != "forces create" {
		t.Errorf("task diff %+v", tasks)
	}
}

func TestJobPlanExistingJob(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	reg := h.register(apitest.TestJob("web"))
	changed := apitest.TestJob("web")
	changed.TaskGroups[0].Count = 3
	var out state.JobPlanResponse
	h.OK(http.MethodPost, "/v1/job/web/plan", map[string]any{"Job": changed, "Diff": true}, &out)
	if out.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("JobModifyIndex = %d, want the registered %d", out.JobModifyIndex, reg.JobModifyIndex)
	}
	if out.Diff == nil || out.Diff.Type != state.DiffTypeEdited {
		t.Fatalf("diff %+v", out.Diff)
	}
	var count *state.FieldDiff
	for _, f := range out.Diff.TaskGroups[0].Fields {
		if f.Name == "Count" {
			count = f
		}
	}
	if count == nil || count.Old != "2" || count.New != "3" {
		t.Errorf("Count diff %+v", count)
	}
	if h.Registered(apitest.TestJob("web")).TaskGroups[0].Count != 2 {
		t.Error("the plan changed the job")
	}
}

func TestJobPlanNoCapacity(t *testing.T) {
	h, _ := newSchedHarness(t)
	var out state.JobPlanResponse
	h.OK(http.MethodPost, "/v1/job/web/plan", map[string]any{"Job": apitest.TestJob("web")}, &out)
	m := out.FailedTGAllocs["web"]
	if m == nil {
		t.Fatalf("FailedTGAllocs = %v, want the group's failure", out.FailedTGAllocs)
	}
	if m.NodesEvaluated != 0 || m.CoalescedFailures != 1 {
		t.Errorf("metrics %+v, want no node evaluated and the second failure coalesced", m)
	}
	if len(out.CreatedEvals) != 1 || out.CreatedEvals[0].Status != state.EvalStatusBlocked {
		t.Errorf("created evals %+v, want one blocked eval", out.CreatedEvals)
	}
	if ev, _ := h.Store.Evals(nil, "*", ""); len(ev) != 0 {
		t.Errorf("the plan wrote evals %v", ev)
	}
}

func TestJobPlanPeriodic(t *testing.T) {
	h, _ := newSchedHarness(t)
	var out state.JobPlanResponse
	job := apitest.PeriodicJob("nightly")
	job.Periodic.Spec = "30 2 * * *"
	h.OK(http.MethodPost, "/v1/job/nightly/plan", map[string]any{"Job": job}, &out)
	want := time.Date(2025, 6, 2, 2, 30, 0, 0, time.UTC) // apitest.Now is 12:00 on June 1st
	if !out.NextPeriodicLaunch.Equal(want) {
		t.Errorf("NextPeriodicLaunch = %v, want %v", out.NextPeriodicLaunch, want)
	}
	if len(out.Annotations.DesiredTGUpdates) != 0 || len(out.FailedTGAllocs) != 0 {
		t.Errorf("a template planned placements: %+v %+v", out.Annotations, out.FailedTGAllocs)
	}
	job.Periodic.TimeZone = "America/New_York"
	h.OK(http.MethodPost, "/v1/job/nightly/plan", map[string]any{"Job": job}, &out)
	ny, _ := time.LoadLocation("America/New_York")
	if want := time.Date(2025, 6, 2, 2, 30, 0, 0, ny); !out.NextPeriodicLaunch.Equal(want) {
		t.Errorf("NextPeriodicLaunch in New York = %v, want %v", out.NextPeriodicLaunch, want)
	}
}

func TestJobPlanBadInput(t *testing.T) {
	h, _ := newSchedHarness(t)
	invalid := apitest.TestJob("web")
	invalid.TaskGroups[0].Count = -1
	before := h.Writes()
	h.Fail(http.MethodPost, "/v1/job/web/plan", map[string]any{}, http.StatusBadRequest, "Job: a job definition is required")
	h.Fail(http.MethodPost, "/v1/job/web/plan", map[string]any{"Job": apitest.TestJob("api")}, http.StatusBadRequest, "Job.ID", "api", "web")
	h.Fail(http.MethodPost, "/v1/job/web/plan", map[string]any{"Job": invalid}, http.StatusBadRequest, "Job.TaskGroups[0].Count")
	h.Fail(http.MethodPost, "/v1/job/web/plan", `{"Job": {"ID": "web"}, "Diff": "yes"}`, http.StatusBadRequest, "Diff")
	h.Fail(http.MethodPost, "/v1/job/web/plan?namespace=nope", map[string]any{"Job": apitest.TestJob("web")}, http.StatusNotFound, "nope")
	if h.Writes() != before {
		t.Error("a refused plan wrote")
	}
}
