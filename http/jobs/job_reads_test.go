package jobs

import (
	"net/http"
	"slices"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestJobRead(t *testing.T) {
	h := newHarness(t)
	h.CreateNamespace("prod")
	reg := h.register(apitest.TestJob("web"))
	var job state.Job
	rec := h.OK(http.MethodGet, "/v1/job/web", nil, &job)
	if job.ID != "web" || job.Namespace != state.DefaultNamespace || job.JobModifyIndex != reg.JobModifyIndex ||
		len(job.TaskGroups) != 1 || job.TaskGroups[0].Count != 2 || job.TaskGroups[0].Tasks[0].Config["command"] != "/bin/sleep" {
		t.Errorf("job read back: %+v", job)
	}
	if got := apitest.HeaderIndexOf(t, rec); got != reg.Index {
		t.Errorf("index %d, want %d", got, reg.Index)
	}
	h.Fail(http.MethodGet, "/v1/job/web?namespace=prod", nil, http.StatusNotFound)
}

func TestJobVersionsAndDiffs(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	second := apitest.TestJob("web")
	second.TaskGroups[0].Count = 3
	h.register(second)
	third := apitest.TestJob("web")
	third.TaskGroups[0].Count = 3
	third.Meta["owner"] = "someone-else"
	h.register(third)

	var plain state.JobVersionsResponse
	rec := h.OK(http.MethodGet, "/v1/job/web/versions", nil, &plain)
	var got []uint64
	for _, v := range plain.Versions {
		got = append(got, v.Version)
	}
	if !slices.Equal(got, []uint64{2, 1, 0}) {
		t.Fatalf("versions %v, want newest first [2 1 0]", got)
	}
	if plain.Diffs != nil {
		t.Errorf("Diffs %v without diffs=true", plain.Diffs)
	}
	if plain.Index == 0 || plain.Index != apitest.HeaderIndexOf(t, rec) || !plain.KnownLeader {
		t.Errorf("Index %d KnownLeader %v", plain.Index, plain.KnownLeader)
	}

	var withDiffs state.JobVersionsResponse
	h.OK(http.MethodGet, "/v1/job/web/versions?diffs=true", nil, &withDiffs)
	if len(withDiffs.Diffs) != len(withDiffs.Versions)-1 {
		t.Fatalf("%d diffs for %d versions", len(withDiffs.Diffs), len(withDiffs.Versions))
	}
	// Diffs[0]: version 1 -> 2 changed Meta; Diffs[1]: 0 -> 1 changed Count.
	if d := withDiffs.Diffs[0]; d.Type != state.DiffTypeEdited || !hasField(d.Fields, "Meta[owner]", "team-web", "someone-else") {
		t.Errorf("Diffs[0] %+v, want Meta[owner] edited", d)
	}
	d := withDiffs.Diffs[1]
	if d.Type != state.DiffTypeEdited || len(d.TaskGroups) != 1 || !hasField(d.TaskGroups[0].Fields, "Count", "2", "3") {
		t.Errorf("Diffs[1] %+v, want Count 2 -> 3 in group web", d)
	}

	var one state.JobVersionsResponse
	h2 := newHarness(t)
	h2.register(apitest.TestJob("solo"))
	h2.OK(http.MethodGet, "/v1/job/solo/versions?diffs=true", nil, &one)
	if len(one.Versions) != 1 || one.Diffs == nil || len(one.Diffs) != 0 {
		t.Errorf("single version: %d versions, diffs %v, want 1 and []", len(one.Versions), one.Diffs)
	}
}

// hasField reports whether fs holds an edit of name from old to new.
func hasField(fs []*state.FieldDiff, name, old, new string) bool {
	for _, f := range fs {
		if f.Name == name && f.Old == old && f.New == new && f.Type == state.DiffTypeEdited {
			return true
		}
	}
	return false
}

// TestJobAllocationsAll covers `all`: an allocation of an earlier job with
// the same ID (purged, then registered again) shows only with all=true.
func TestJobAllocationsAll(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	alloc := func(id string, status string) *state.Allocation {
		return &state.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "web", NodeID: "n1",
			DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: status}
	}
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{alloc("a-old", state.AllocClientStatusComplete)}, Now: 1})
	h.OK(http.MethodDelete, "/v1/job/web?purge=true", nil, nil)
	h.register(apitest.TestJob("web"))
	idx := h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{alloc("a-new", "")}, Now: 2})

	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{"a-new"}},
		{"?all=false", []string{"a-new"}},
		{"?all=true", []string{"a-new", "a-old"}},
		{"?all", []string{"a-new", "a-old"}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			var out []*state.Allocation
			rec := h.on(t).OK(http.MethodGet, "/v1/job/web/allocations"+tc.query, nil, &out)
			var ids []string
			for _, a := range out {
				ids = append(ids, a.ID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("allocations %v, want %v", ids, tc.want)
			}
			if got := apitest.HeaderIndexOf(t, rec); got != idx {
				t.Errorf("index %d, want %d", got, idx)
			}
		})
	}
	rec := h.OK(http.MethodGet, "/v1/job/nope/allocations", nil, nil)
	if rec.Body.String() != "[]" {
		t.Errorf("unknown job allocations %q, want []", rec.Body.String())
	}
}

func TestJobEvaluations(t *testing.T) {
	h := newHarness(t)
	a := h.register(apitest.TestJob("web"))
	h.register(apitest.TestJob("other"))
	b := h.register(apitest.TestJob("web"))
	var out []*state.Evaluation
	h.OK(http.MethodGet, "/v1/job/web/evaluations", nil, &out)
	var ids []string
	for _, e := range out {
		ids = append(ids, e.ID)
		if e.JobID != "web" {
			t.Errorf("eval %s of job %q", e.ID, e.JobID)
		}
	}
	if want := []string{a.EvalID, b.EvalID}; !slices.Equal(ids, want) {
		t.Errorf("evals %v, want %v", ids, want)
	}
	rec := h.OK(http.MethodGet, "/v1/job/nope/evaluations", nil, nil)
	if rec.Body.String() != "[]" {
		t.Errorf("unknown job evaluations %q, want []", rec.Body.String())
	}
}

// TestJobDeployments covers the list (with and without all) and the latest
// deployment, null before there is one.
func TestJobDeployments(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))

	rec := h.OK(http.MethodGet, "/v1/job/web/deployment", nil, nil)
	if rec.Body.String() != "null" {
		t.Fatalf("latest deployment %q before any, want null", rec.Body.String())
	}
	rec = h.OK(http.MethodGet, "/v1/job/web/deployments", nil, nil)
	if rec.Body.String() != "[]" {
		t.Fatalf("deployments %q before any, want []", rec.Body.String())
	}

	oldJob := h.Job("default", "web")
	h.Apply(store.DeploymentUpsertRequestType, &store.DeploymentUpsertRequest{Deployments: []*state.Deployment{{
		ID: "d-old", Namespace: "default", JobID: "web", JobCreateIndex: oldJob.CreateIndex,
		Status: state.DeploymentStatusSuccessful,
	}}, Now: 1})
	h.OK(http.MethodDelete, "/v1/job/web?purge=true", nil, nil)
	h.register(apitest.TestJob("web"))
	newJob := h.Job("default", "web")
	if newJob.CreateIndex == oldJob.CreateIndex {
		t.Fatal("re-registered job kept its CreateIndex")
	}
	h.Apply(store.DeploymentUpsertRequestType, &store.DeploymentUpsertRequest{Deployments: []*state.Deployment{{
		ID: "d-new", Namespace: "default", JobID: "web", JobCreateIndex: newJob.CreateIndex, JobVersion: newJob.Version,
		Status:     state.DeploymentStatusRunning,
		TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 2, PlacedAllocs: 1}},
	}}, Now: 2})

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"d-new"}},
		{"?all=true", []string{"d-new", "d-old"}},
	} {
		var out []*state.Deployment
		h.OK(http.MethodGet, "/v1/job/web/deployments"+tc.query, nil, &out)
		var ids []string
		for _, d := range out {
			ids = append(ids, d.ID)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("deployments%s: %v, want %v", tc.query, ids, tc.want)
		}
	}

	var latest *state.Deployment
	h.OK(http.MethodGet, "/v1/job/web/deployment", nil, &latest)
	if latest == nil || latest.ID != "d-new" || latest.Status != state.DeploymentStatusRunning ||
		latest.TaskGroups["web"] == nil || latest.TaskGroups["web"].DesiredTotal != 2 {
		t.Errorf("latest deployment %+v, want d-new", latest)
	}
	rec = h.OK(http.MethodGet, "/v1/job/nope/deployment", nil, nil)
	if rec.Body.String() != "null" {
		t.Errorf("unknown job latest deployment %q, want null", rec.Body.String())
	}
}

// TestJobSummary checks the counts follow the allocations' client status.
func TestJobSummary(t *testing.T) {
	h := newHarness(t)
	job := apitest.TestJob("web")
	job.TaskGroups = append(job.TaskGroups, &state.TaskGroup{Name: "cache", Count: 1, Tasks: job.TaskGroups[0].Tasks})
	h.register(job)

	var sum state.JobSummary
	h.OK(http.MethodGet, "/v1/job/web/summary", nil, &sum)
	if sum.JobID != "web" || len(sum.Summary) != 2 || sum.Summary["web"] != (state.TaskGroupSummary{}) {
		t.Fatalf("summary before allocations %+v", sum)
	}

	mk := func(id, group, status string) *state.Allocation {
		return &state.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: group, NodeID: "n1",
			DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: status}
	}
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{
		mk("a1", "web", state.AllocClientStatusRunning),
		mk("a2", "web", state.AllocClientStatusRunning),
		mk("a3", "web", state.AllocClientStatusFailed),
		mk("a4", "cache", ""),
		mk("a5", "cache", state.AllocClientStatusComplete),
		mk("a6", "cache", state.AllocClientStatusLost),
	}, Now: 1})
	h.Apply(store.JobSummaryUpsertRequestType, &store.JobSummaryUpsertRequest{Namespace: "default", JobID: "web", Queued: map[string]int{"web": 4}})

	rec := h.OK(http.MethodGet, "/v1/job/web/summary", nil, &sum)
	want := map[string]state.TaskGroupSummary{
		"web":   {Queued: 4, Running: 2, Failed: 1},
		"cache": {Starting: 1, Complete: 1, Lost: 1},
	}
	for g, w := range want {
		if sum.Summary[g] != w {
			t.Errorf("group %s: %+v, want %+v", g, sum.Summary[g], w)
		}
	}
	if got := apitest.HeaderIndexOf(t, rec); got != sum.ModifyIndex {
		t.Errorf("index %d, summary ModifyIndex %d", got, sum.ModifyIndex)
	}

	var parent state.JobSummary
	h.register(apitest.PeriodicJob("cron"))
	h.OK(http.MethodGet, "/v1/job/cron/summary", nil, &parent)
	if parent.Children == nil {
		t.Error("periodic job summary without Children")
	}
}
