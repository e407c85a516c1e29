package jobs

import (
	"net/http"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestJobStop(t *testing.T) {
	cases := []struct {
		name     string
		query    string
		wantPrio int
	}{
		{"plain", "", state.DefaultJobPriority},
		{"eval_priority", "?eval_priority=95", 95},
		{"global accepted", "?global=true", state.DefaultJobPriority},
		{"global bare flag", "?global", state.DefaultJobPriority},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			reg := h.register(apitest.TestJob("web"))
			var out state.JobDeregisterResponse
			rec := h.OK(http.MethodDelete, "/v1/job/web"+tc.query, nil, &out)

			job := h.Job(state.DefaultNamespace, "web")
			if job == nil || !job.Stop || job.Version != 1 {
				t.Fatalf("job after stop: %+v, want Stop at version 1", job)
			}
			if out.JobModifyIndex != job.JobModifyIndex || out.JobModifyIndex <= reg.JobModifyIndex {
				t.Errorf("JobModifyIndex %d, stored %d, registered %d", out.JobModifyIndex, job.JobModifyIndex, reg.JobModifyIndex)
			}
			if got := apitest.HeaderIndexOf(t, rec); got != out.Index {
				t.Errorf("header index %d, Index %d", got, out.Index)
			}
			eval, _ := h.Store.EvalByID(nil, out.EvalID)
			if eval == nil {
				t.Fatalf("no eval %q", out.EvalID)
			}
			if eval.TriggeredBy != state.EvalTriggerJobDeregister || eval.Priority != tc.wantPrio ||
				eval.JobModifyIndex != out.JobModifyIndex || eval.CreateIndex != out.EvalCreateIndex {
				t.Errorf("eval %+v, want job-deregister at priority %d", eval, tc.wantPrio)
			}
			versions, _ := h.Store.JobVersions(nil, state.DefaultNamespace, "web")
			if len(versions) != 2 || !versions[0].Stop || versions[1].Stop {
				t.Errorf("versions after stop: %d, want the running and the stopped one", len(versions))
			}

			// Stopping again keeps the version, still makes an eval.
			var again state.JobDeregisterResponse
			h.OK(http.MethodDelete, "/v1/job/web", nil, &again)
			if got := h.Job(state.DefaultNamespace, "web"); got.Version != 1 || again.JobModifyIndex != out.JobModifyIndex {
				t.Errorf("second stop: Version %d JobModifyIndex %d, want 1 and %d", got.Version, again.JobModifyIndex, out.JobModifyIndex)
			}
			if again.EvalID == "" || again.EvalID == out.EvalID {
				t.Errorf("second stop eval %q", again.EvalID)
			}
		})
	}
}

func TestJobStopPurge(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	h.RegisterReq(&JobRegisterRequest{Job: apitest.BatchJob("web"), Submission: &state.JobSubmission{Format: "json", Source: "{}"}})
	var out state.JobDeregisterResponse
	h.OK(http.MethodDelete, "/v1/job/web?purge=true", nil, &out)
	if out.EvalID == "" {
		t.Error("purge created no eval to stop the allocations")
	}
	if h.Job(state.DefaultNamespace, "web") != nil {
		t.Fatal("job still stored after purge")
	}
	for _, target := range []string{"/v1/job/web", "/v1/job/web/versions", "/v1/job/web/summary", "/v1/job/web/submission?version=1"} {
		h.Fail(http.MethodGet, target, nil, http.StatusNotFound, `"web"`)
	}
	if v, _ := h.Store.JobVersions(nil, state.DefaultNamespace, "web"); len(v) != 0 {
		t.Errorf("%d versions kept after purge", len(v))
	}
	// The eval outlives the job, for the scheduler to stop allocations.
	var evals []*state.Evaluation
	h.OK(http.MethodGet, "/v1/job/web/evaluations", nil, &evals)
	if len(evals) != 3 {
		t.Errorf("%d evals after purge, want 3", len(evals))
	}
}

func TestJobStopNoShutdownDelay(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{
		Allocs: []*state.Allocation{{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "web", NodeID: "n1", DesiredStatus: "run"}},
		Now:    1,
	})
	h.OK(http.MethodDelete, "/v1/job/web?no_shutdown_delay=true", nil, nil)
	a, _ := h.Store.AllocByID(nil, "a1")
	if a == nil || a.DesiredTransition.NoShutdownDelay == nil || !*a.DesiredTransition.NoShutdownDelay {
		t.Fatalf("alloc %+v not marked to skip its shutdown delay", a)
	}
}

func TestJobStopTemplateCreatesNoEval(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.PeriodicJob("cron"))
	var out state.JobDeregisterResponse
	h.OK(http.MethodDelete, "/v1/job/cron", nil, &out)
	if out.EvalID != "" {
		t.Errorf("EvalID %q for a periodic job", out.EvalID)
	}
	if j := h.Job(state.DefaultNamespace, "cron"); j == nil || !j.Stop {
		t.Error("periodic job not stopped")
	}
}

func TestJobStopInNamespace(t *testing.T) {
	h := newHarness(t)
	h.CreateNamespace("prod")
	for _, ns := range []string{"default", "prod"} {
		j := apitest.TestJob("web")
		j.Namespace = ns
		h.register(j)
	}
	h.OK(http.MethodDelete, "/v1/job/web?namespace=prod&purge", nil, nil)
	if h.Job("prod", "web") != nil || h.Job("default", "web") == nil {
		t.Fatal("stop did not act on the namespace of the query only")
	}
}
