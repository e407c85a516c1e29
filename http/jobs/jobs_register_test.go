package jobs

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// TestJobRegisterBothPathsAndMethods registers through each write route and
// method and checks the answer and what the store holds.
func TestJobRegisterBothPathsAndMethods(t *testing.T) {
	cases := []struct {
		method, path string
	}{
		{http.MethodPost, "/v1/jobs"},
		{http.MethodPut, "/v1/jobs"},
		{http.MethodPost, "/v1/job/%s"},
		{http.MethodPut, "/v1/job/%s"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			h := newHarness(t)
			id := "web"
			path := strings.ReplaceAll(tc.path, "%s", id)
			var out state.JobRegisterResponse
			rec := h.OK(tc.method, path, &JobRegisterRequest{Job: apitest.TestJob(id)}, &out)

			if out.EvalID == "" || out.EvalCreateIndex == 0 || out.JobModifyIndex == 0 {
				t.Fatalf("answer %+v lacks EvalID, EvalCreateIndex or JobModifyIndex", out)
			}
			if got := apitest.HeaderIndexOf(t, rec); got != out.Index || out.Index != out.JobModifyIndex {
				t.Errorf("header index %d, Index %d, JobModifyIndex %d: want all equal for a new job", got, out.Index, out.JobModifyIndex)
			}
			if !out.KnownLeader {
				t.Error("KnownLeader false on the leader")
			}
			job := h.Job(state.DefaultNamespace, id)
			if job == nil {
				t.Fatal("job not stored")
			}
			if job.Version != 0 || job.JobModifyIndex != out.JobModifyIndex || job.SubmitTime != apitest.Now.UnixNano() {
				t.Errorf("stored job Version %d JobModifyIndex %d SubmitTime %d", job.Version, job.JobModifyIndex, job.SubmitTime)
			}
			if job.Priority != state.DefaultJobPriority || job.Region != state.DefaultRegion {
				t.Errorf("stored job not canonicalized: Priority %d Region %q", job.Priority, job.Region)
			}
			eval, err := h.Store.EvalByID(nil, out.EvalID)
			if err != nil || eval == nil {
				t.Fatalf("eval %q: %v, %v", out.EvalID, eval, err)
			}
			if eval.TriggeredBy != state.EvalTriggerJobRegister || eval.JobID != id ||
				eval.Priority != state.DefaultJobPriority || eval.CreateIndex != out.EvalCreateIndex ||
				eval.JobModifyIndex != out.JobModifyIndex || eval.Type != state.JobTypeService ||
				eval.CreateTime != apitest.Now.UnixNano() {
				t.Errorf("eval %+v", eval)
			}
		})
	}
}

func TestJobRegisterEvalPriority(t *testing.T) {
	h := newHarness(t)
	job := apitest.TestJob("web")
	job.Priority = 30
	out := h.RegisterReq(&JobRegisterRequest{Job: job, EvalPriority: 90})
	eval, _ := h.Store.EvalByID(nil, out.EvalID)
	if eval == nil || eval.Priority != 90 {
		t.Fatalf("eval %+v, want Priority 90 from EvalPriority", eval)
	}
	if got := h.Job(state.DefaultNamespace, "web").Priority; got != 30 {
		t.Errorf("job priority %d, want 30: EvalPriority must not change the job", got)
	}

	out = h.register(job)
	eval, _ = h.Store.EvalByID(nil, out.EvalID)
	if eval == nil || eval.Priority != 30 {
		t.Fatalf("eval %+v, want the job's priority 30 without EvalPriority", eval)
	}
}

func TestJobRegisterIntoNamespace(t *testing.T) {
	h := newHarness(t)
	h.CreateNamespace("prod")
	var out state.JobRegisterResponse
	h.OK(http.MethodPut, "/v1/jobs?namespace=prod", &JobRegisterRequest{Job: apitest.TestJob("api")}, &out)
	if h.Job("prod", "api") == nil || h.Job(state.DefaultNamespace, "api") != nil {
		t.Fatal("job not registered into the namespace of the query")
	}
	// The job's own Namespace wins over the query.
	job := apitest.TestJob("api2")
	job.Namespace = "prod"
	h.register(job)
	if h.Job("prod", "api2") == nil {
		t.Fatal("job not registered into its own Namespace")
	}
	h.Fail(http.MethodPost, "/v1/jobs?namespace=nope", &JobRegisterRequest{Job: apitest.TestJob("x")}, http.StatusNotFound, "nope")
	if h.Job("nope", "x") != nil {
		t.Fatal("job written into an unknown namespace")
	}
}

func TestJobRegisterEnforceIndex(t *testing.T) {
	h := newHarness(t)
	// Index 0 on a new job: allowed.
	first := h.RegisterReq(&JobRegisterRequest{Job: apitest.TestJob("web"), EnforceIndex: true, JobModifyIndex: 0})
	stored := h.Job(state.DefaultNamespace, "web")

	changed := apitest.TestJob("web")
	changed.TaskGroups[0].Count = 5
	cases := []struct {
		name  string
		index uint64
		want  string
	}{
		{"zero on existing job", 0, "already exists"},
		{"stale index", first.JobModifyIndex + 100, "job modify index"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := h.on(t)
			evals, _ := h.Store.EvalsByJob(nil, state.DefaultNamespace, "web")
			h.Fail(http.MethodPost, "/v1/job/web", &JobRegisterRequest{Job: changed, EnforceIndex: true, JobModifyIndex: tc.index},
				http.StatusConflict, tc.want)
			if got := h.Job(state.DefaultNamespace, "web"); got != stored {
				t.Errorf("job changed by a failed check-and-set: %+v", got)
			}
			after, _ := h.Store.EvalsByJob(nil, state.DefaultNamespace, "web")
			if len(after) != len(evals) {
				t.Errorf("%d evals after a failed check-and-set, want %d", len(after), len(evals))
			}
		})
	}

	// The current index: applied.
	out := h.RegisterReq(&JobRegisterRequest{Job: changed, EnforceIndex: true, JobModifyIndex: first.JobModifyIndex})
	if got := h.Job(state.DefaultNamespace, "web"); got.TaskGroups[0].Count != 5 || got.JobModifyIndex != out.JobModifyIndex {
		t.Fatalf("check-and-set with the current index not applied: %+v", got)
	}
}

func TestJobRegisterPreserveCounts(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	next := apitest.TestJob("web")
	next.TaskGroups[0].Count = 9
	next.TaskGroups[0].Tasks[0].Env = map[string]string{"A": "b"}
	h.RegisterReq(&JobRegisterRequest{Job: next, PreserveCounts: true})
	got := h.Job(state.DefaultNamespace, "web")
	if got.TaskGroups[0].Count != 2 {
		t.Errorf("count %d, want 2 kept by PreserveCounts", got.TaskGroups[0].Count)
	}
	if got.TaskGroups[0].Tasks[0].Env["A"] != "b" || got.Version != 1 {
		t.Errorf("the rest of the change was not applied: Version %d Env %v", got.Version, got.TaskGroups[0].Tasks[0].Env)
	}

	h.RegisterReq(&JobRegisterRequest{Job: next})
	if got := h.Job(state.DefaultNamespace, "web"); got.TaskGroups[0].Count != 9 {
		t.Errorf("count %d, want 9 without PreserveCounts", got.TaskGroups[0].Count)
	}
}

func TestJobRegisterVersions(t *testing.T) {
	h := newHarness(t)
	first := h.register(apitest.TestJob("web"))

	// Unchanged: same Version and JobModifyIndex, but a new eval.
	again := h.register(apitest.TestJob("web"))
	job := h.Job(state.DefaultNamespace, "web")
	if job.Version != 0 || again.JobModifyIndex != first.JobModifyIndex || job.JobModifyIndex != first.JobModifyIndex {
		t.Errorf("unchanged re-register: Version %d, JobModifyIndex %d (answer %d), want 0 and %d",
			job.Version, job.JobModifyIndex, again.JobModifyIndex, first.JobModifyIndex)
	}
	if again.EvalID == "" || again.EvalID == first.EvalID {
		t.Errorf("unchanged re-register made no new eval: %q after %q", again.EvalID, first.EvalID)
	}

	// Changed: Version and JobModifyIndex move.
	changed := apitest.TestJob("web")
	changed.TaskGroups[0].Count = 3
	third := h.register(changed)
	job = h.Job(state.DefaultNamespace, "web")
	if job.Version != 1 || third.JobModifyIndex <= first.JobModifyIndex || job.JobModifyIndex != third.JobModifyIndex {
		t.Errorf("changed re-register: Version %d JobModifyIndex %d (answer %d)", job.Version, job.JobModifyIndex, third.JobModifyIndex)
	}
	if job.CreateIndex != first.JobModifyIndex {
		t.Errorf("CreateIndex %d moved from %d on update", job.CreateIndex, first.JobModifyIndex)
	}
}

func TestJobRegisterVersionRetention(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 9; i++ {
		j := apitest.TestJob("web")
		j.TaskGroups[0].Count = i
		h.register(j)
	}
	var out state.JobVersionsResponse
	h.OK(http.MethodGet, "/v1/job/web/versions", nil, &out)
	if len(out.Versions) != store.DefaultJobVersionsRetained {
		t.Fatalf("%d versions, want %d retained", len(out.Versions), store.DefaultJobVersionsRetained)
	}
	for i, v := range out.Versions {
		if want := uint64(8 - i); v.Version != want {
			t.Errorf("Versions[%d].Version = %d, want %d (newest first, oldest dropped)", i, v.Version, want)
		}
	}
}

func TestJobRegisterSubmissions(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 7; i++ {
		j := apitest.TestJob("web")
		j.TaskGroups[0].Count = i + 1
		src := `job "web" { group "web" { count = ` + string(rune('1'+i)) + ` } }`
		h.RegisterReq(&JobRegisterRequest{Job: j, Submission: &state.JobSubmission{
			Format: state.SubmissionFormatHCL2, Source: src, VariableFlags: map[string]string{"n": "v"},
		}})
	}
	// Versions 1..6 keep their source; version 0's was dropped.
	for v := 1; v <= 6; v++ {
		var sub state.JobSubmission
		h.OK(http.MethodGet, "/v1/job/web/submission?version="+itoa(v), nil, &sub)
		if sub.Version != uint64(v) || sub.JobID != "web" || sub.Namespace != state.DefaultNamespace ||
			sub.Format != state.SubmissionFormatHCL2 || !strings.Contains(sub.Source, "count = "+itoa(v+1)) ||
			sub.VariableFlags["n"] != "v" || sub.JobIndex == 0 {
			t.Errorf("submission of version %d: %+v", v, sub)
		}
	}
	h.Fail(http.MethodGet, "/v1/job/web/submission?version=0", nil, http.StatusNotFound, "version 0")
}

func TestJobRegisterLargeSubmissionWarns(t *testing.T) {
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Jobs.MaxSubmissionBytes = 10 })
	out := h.RegisterReq(&JobRegisterRequest{Job: apitest.TestJob("web"), Submission: &state.JobSubmission{
		Format: state.SubmissionFormatJSON, Source: `{"ID":"web","Type":"service"}`,
	}})
	if !strings.Contains(out.Warnings, "exceeds") {
		t.Errorf("Warnings %q, want a note that the source was not stored", out.Warnings)
	}
	if h.Job(state.DefaultNamespace, "web") == nil {
		t.Fatal("register failed with an oversize submission")
	}
	h.Fail(http.MethodGet, "/v1/job/web/submission?version=0", nil, http.StatusNotFound)
}

func TestJobRegisterTemplatesCreateNoEval(t *testing.T) {
	cases := map[string]*state.Job{
		"periodic":      apitest.PeriodicJob("cron"),
		"parameterized": apitest.ParameterizedJob("param"),
	}
	for name, job := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			out := h.register(job)
			if out.EvalID != "" || out.EvalCreateIndex != 0 {
				t.Errorf("answer %+v, want no eval", out)
			}
			evals, _ := h.Store.EvalsByJob(nil, state.DefaultNamespace, job.ID)
			if len(evals) != 0 {
				t.Errorf("%d evals stored, want none", len(evals))
			}
			if h.Job(state.DefaultNamespace, job.ID) == nil {
				t.Error("job not stored")
			}
		})
	}
}

// TestJobValidateEndpoint checks POST/PUT /v1/validate/job: problems are a
// 200 listing them, and nothing is written either way.
func TestJobValidateEndpoint(t *testing.T) {
	bad := apitest.TestJob("web")
	bad.TaskGroups[0].Count = -1
	bad.Type = "nope"
	cases := []struct {
		name     string
		method   string
		job      *state.Job
		wantErrs []string
	}{
		{"valid POST", http.MethodPost, apitest.TestJob("web"), nil},
		{"valid PUT", http.MethodPut, apitest.TestJob("web"), nil},
		{"invalid", http.MethodPost, bad, []string{"Job.Type", "Job.TaskGroups[0].Count"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			before := h.Store.LatestIndex()
			var out state.JobValidateResponse
			h.OK(tc.method, "/v1/validate/job", &JobValidateRequest{Job: tc.job}, &out)
			if len(out.ValidationErrors) != len(tc.wantErrs) {
				t.Fatalf("ValidationErrors %q, want %d", out.ValidationErrors, len(tc.wantErrs))
			}
			for _, w := range tc.wantErrs {
				if !strings.Contains(out.Error, w) {
					t.Errorf("Error %q does not name %s", out.Error, w)
				}
			}
			if (out.Error == "") != (tc.wantErrs == nil) {
				t.Errorf("Error %q", out.Error)
			}
			if h.Store.LatestIndex() != before || h.writer.Applied != 0 {
				t.Error("validate wrote something")
			}
		})
	}
	h := newHarness(t)
	h.Fail(http.MethodPost, "/v1/validate/job", `{}`, http.StatusBadRequest, "Job")
}
