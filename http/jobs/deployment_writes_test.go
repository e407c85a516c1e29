package jobs

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// deployedJob registers job web and writes a running deployment "d1" of
// its version with one canary (allocation 1) and one other allocation
// (allocation 2), as a plan would.
func deployedJob(t *testing.T, h *harness) *state.Job {
	t.Helper()
	h.RegisterNode(apitest.TestNode(1))
	h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	d := &state.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: job.Version, JobCreateIndex: job.CreateIndex,
		Status:     state.DeploymentStatusRunning,
		TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 2, DesiredCanaries: 1}}}
	var allocs []*state.Allocation
	for i := 1; i <= 2; i++ {
		a := &state.Allocation{ID: apitest.AllocID(i), Namespace: "default", JobID: "web", EvalID: "e", NodeID: apitest.NodeID(1),
			Name: "web.web[" + itoa(i) + "]", TaskGroup: "web", DesiredStatus: state.AllocDesiredStatusRun, DeploymentID: "d1"}
		if i == 1 {
			a.DeploymentStatus = &state.AllocDeploymentStatus{Canary: true}
		}
		allocs = append(allocs, a)
	}
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Deployment: d, Allocs: allocs, Now: apitest.Now.UnixNano()})
	return job
}

func (h *harness) deployment(id string) *state.Deployment {
	h.T.Helper()
	d, err := h.Store.DeploymentByID(nil, id)
	if err != nil || d == nil {
		h.T.Fatalf("deployment %s: %v", id, err)
	}
	return d
}

func TestDeploymentWrites(t *testing.T) {
	h, _ := newSchedHarness(t)
	deployedJob(t, h)

	before := h.Writes()
	h.Fail(http.MethodPost, "/v1/deployment/promote/d1", map[string]any{}, http.StatusBadRequest, "Groups")
	h.Fail(http.MethodPost, "/v1/deployment/promote/d1", map[string]any{"All": true}, http.StatusBadRequest, "0/1 healthy canaries")
	h.Fail(http.MethodPost, "/v1/deployment/promote/d1", map[string]any{"Groups": []string{"db"}}, http.StatusBadRequest, "Groups[0]", "db")
	h.Fail(http.MethodPost, "/v1/deployment/promote/nope", map[string]any{"All": true}, http.StatusNotFound)
	h.Fail(http.MethodPost, "/v1/deployment/promote/d1?namespace=other", map[string]any{"All": true}, http.StatusNotFound)
	h.Fail(http.MethodPost, "/v1/deployment/promote/d1", map[string]any{"All": true, "DeploymentID": "d2"}, http.StatusBadRequest, "DeploymentID")
	h.Fail(http.MethodPost, "/v1/deployment/allocation-health/d1", map[string]any{}, http.StatusBadRequest, "HealthyAllocationIDs")
	h.Fail(http.MethodPost, "/v1/deployment/allocation-health/d1", map[string]any{"HealthyAllocationIDs": []string{"x"}}, http.StatusBadRequest, "HealthyAllocationIDs[0]")
	if h.Writes() != before {
		t.Fatal("refused deployment writes wrote")
	}

	// Manual health, then promotion.
	var out state.DeploymentUpdateResponse
	h.OK(http.MethodPost, "/v1/deployment/allocation-health/d1", map[string]any{"HealthyAllocationIDs": []string{apitest.AllocID(1)}}, &out)
	if a := h.Alloc(apitest.AllocID(1)); a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil || !*a.DeploymentStatus.Healthy || !a.DeploymentStatus.Canary {
		t.Fatalf("canary health %+v, want healthy canary", a.DeploymentStatus)
	}
	if e := h.Eval(out.EvalID); e.DeploymentID != "d1" || e.TriggeredBy != state.EvalTriggerDeploymentWatcher {
		t.Fatalf("eval %+v", e)
	}
	h.OK(http.MethodPut, "/v1/deployment/promote/d1", map[string]any{"Groups": []string{"web"}}, &out)
	if d := h.deployment("d1"); !d.TaskGroups["web"].Promoted || d.TaskGroups["web"].HealthyAllocs != 1 {
		t.Fatalf("after promote %+v", d.TaskGroups["web"])
	}

	// Pause, resume, fail; a failed one no longer changes.
	h.OK(http.MethodPost, "/v1/deployment/pause/d1", map[string]any{"Pause": true}, nil)
	if d := h.deployment("d1"); d.Status != state.DeploymentStatusPaused {
		t.Fatalf("status %s, want paused", d.Status)
	}
	h.OK(http.MethodPost, "/v1/deployment/pause/d1", map[string]any{"Pause": false}, nil)
	if d := h.deployment("d1"); d.Status != state.DeploymentStatusRunning {
		t.Fatalf("status %s, want running", d.Status)
	}
	h.OK(http.MethodPost, "/v1/deployment/fail/d1", nil, nil)
	if d := h.deployment("d1"); d.Status != state.DeploymentStatusFailed {
		t.Fatalf("status %s, want failed", d.Status)
	}
	h.Fail(http.MethodPost, "/v1/deployment/pause/d1", map[string]any{"Pause": true}, http.StatusBadRequest, "failed")

	// The job's deployment reads (rows 9 and 10) show it.
	var latest state.Deployment
	h.OK(http.MethodGet, "/v1/job/web/deployment", nil, &latest)
	var list []state.Deployment
	h.OK(http.MethodGet, "/v1/job/web/deployments", nil, &list)
	if latest.ID != "d1" || latest.Status != state.DeploymentStatusFailed || len(list) != 1 {
		t.Fatalf("latest %+v, list %d", latest, len(list))
	}
}

func TestJobRevertAndStable(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.register(apitest.TestJob("web"))
	v1 := apitest.TestJob("web")
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"99"}}
	h.register(v1)
	if j := h.Registered(v1); j.Version != 1 {
		t.Fatalf("version %d", j.Version)
	}
	before := h.Writes()
	h.Fail(http.MethodPost, "/v1/job/web/revert", map[string]any{"JobVersion": 0}, http.StatusBadRequest, "JobID")
	h.Fail(http.MethodPost, "/v1/job/web/revert", map[string]any{"JobID": "web", "JobVersion": 1}, http.StatusBadRequest, "JobVersion", "current")
	h.Fail(http.MethodPost, "/v1/job/web/revert", map[string]any{"JobID": "web", "JobVersion": 9}, http.StatusBadRequest, "JobVersion", "9")
	h.Fail(http.MethodPost, "/v1/job/web/revert", map[string]any{"JobID": "web", "JobVersion": 0, "EnforcePriorVersion": 0}, http.StatusConflict, "EnforcePriorVersion")
	h.Fail(http.MethodPost, "/v1/job/nope/revert", map[string]any{"JobID": "nope"}, http.StatusNotFound)
	h.Fail(http.MethodPost, "/v1/job/web/stable", map[string]any{"JobID": "web", "JobVersion": 5, "Stable": true}, http.StatusBadRequest, "JobVersion")
	if h.Writes() != before {
		t.Fatal("refused writes wrote")
	}

	var out state.JobRegisterResponse
	h.OK(http.MethodPost, "/v1/job/web/revert", map[string]any{"JobID": "web", "JobVersion": 0, "EnforcePriorVersion": 1}, &out)
	j := h.Job("default", "web")
	if j.Version != 2 || j.TaskGroups[0].Tasks[0].Config["args"].([]any)[0] != "60" || out.EvalID == "" {
		t.Fatalf("after revert: version %d config %v eval %q", j.Version, j.TaskGroups[0].Tasks[0].Config, out.EvalID)
	}

	var st state.JobStabilityResponse
	h.OK(http.MethodPut, "/v1/job/web/stable", map[string]any{"JobID": "web", "JobVersion": 2, "Stable": true}, &st)
	if j := h.Job("default", "web"); !j.Stable || st.JobModifyIndex == 0 {
		t.Fatalf("job stable %v, answer %+v", j.Stable, st)
	}
}

func TestJobScale(t *testing.T) {
	h, _ := newSchedHarness(t)
	deployedJob(t, h)
	before := h.Writes()
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": 3, "Message": "m"}, http.StatusBadRequest, "Target.Group")
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": 3, "Target": map[string]string{"Group": "web"}}, http.StatusBadRequest, "Message")
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": -1, "Message": "m", "Target": map[string]string{"Group": "web"}}, http.StatusBadRequest, "Count")
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": 1, "Error": true, "Target": map[string]string{"Group": "web"}}, http.StatusBadRequest, "Count")
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": 3, "Message": "m", "Target": map[string]string{"Group": "db"}}, http.StatusBadRequest, "Target.Group", "db")
	h.Fail(http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": 3, "Message": "m", "Target": map[string]string{"Group": "web"}}, http.StatusBadRequest, "active deployment")
	if h.Writes() != before {
		t.Fatal("refused scales wrote")
	}
	// An autoscaler's error event changes no count and makes no eval.
	var out state.JobScaleResponse
	rec := h.OK(http.MethodPost, "/v1/job/web/scale", map[string]any{"Error": "metrics unavailable", "Target": map[string]string{"Group": "web"}}, &out)
	if out.EvalID != "" || h.Job("default", "web").TaskGroups[0].Count != 2 {
		t.Fatalf("error event: %+v", out)
	}
	if body := rec.Body.String(); strings.Contains(body, "EvalID") {
		t.Fatalf("EvalID present without an eval: %s", body)
	}
	h.OK(http.MethodPost, "/v1/deployment/fail/d1", nil, nil)
	h.OK(http.MethodPost, "/v1/job/web/scale", map[string]any{"Count": 5, "Message": "busy", "Meta": map[string]any{"a": "b"},
		"Target": map[string]string{"Group": "web"}}, &out)
	if e := h.Eval(out.EvalID); e.TriggeredBy != state.EvalTriggerScaling || h.Job("default", "web").TaskGroups[0].Count != 5 {
		t.Fatalf("scale eval %+v", e)
	}
	var st state.JobScaleStatus
	h.OK(http.MethodGet, "/v1/job/web/scale", nil, &st)
	g := st.TaskGroups["web"]
	if g == nil || g.Desired != 5 || g.Placed != 2 || len(g.Events) != 2 || g.Events[0].Message != "busy" || g.Events[0].EvalID == nil ||
		!g.Events[1].Error || g.Events[1].Message != "metrics unavailable" {
		t.Fatalf("scale status %+v %+v", st, g)
	}
	h.Fail(http.MethodGet, "/v1/job/nope/scale", nil, http.StatusNotFound)
}

func TestDeploymentFailAutoReverts(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.register(apitest.TestJob("web"))
	h.OK(http.MethodPost, "/v1/job/web/stable", map[string]any{"JobID": "web", "JobVersion": 0, "Stable": true}, nil)
	v1 := apitest.TestJob("web")
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"99"}}
	h.register(v1)
	job := h.Registered(v1)
	d := &state.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: job.Version, JobCreateIndex: job.CreateIndex,
		Status: state.DeploymentStatusRunning, TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 2, AutoRevert: true}}}
	h.Apply(store.DeploymentUpsertRequestType, &store.DeploymentUpsertRequest{Deployments: []*state.Deployment{d}})

	var out state.DeploymentUpdateResponse
	h.OK(http.MethodPost, "/v1/deployment/fail/d1", nil, &out)
	got := h.deployment("d1")
	j := h.Job("default", "web")
	if got.Status != state.DeploymentStatusFailed || got.StatusDescription != "Deployment marked as failed - rolling back to job version 0" {
		t.Fatalf("deployment %s (%s)", got.Status, got.StatusDescription)
	}
	if j.Version != 2 || j.TaskGroups[0].Tasks[0].Config["args"].([]any)[0] != "60" || out.RevertedJobVersion == nil || *out.RevertedJobVersion != 0 {
		t.Fatalf("job version %d config %v, answer %+v", j.Version, j.TaskGroups[0].Tasks[0].Config, out)
	}
	if e := h.Eval(out.EvalID); e.JobID != "web" {
		t.Fatalf("revert eval %+v", e)
	}
}
