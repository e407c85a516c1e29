package http

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// jobBody is a register body with job encoded as JSON and edited by edit, so
// a case can break the JSON form of one field.
func jobBody(t *testing.T, job *state.Job, edit func(m map[string]any)) string {
	t.Helper()
	buf, err := json.Marshal(&jobs.JobRegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		return string(buf)
	}
	var m map[string]any
	if err := json.Unmarshal(buf, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	buf, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf)
}

// TestJobRegisterBadInput sends broken registers; each must be a 400 naming
// what is wrong, and nothing may reach the store.
func TestJobRegisterBadInput(t *testing.T) {
	with := func(edit func(j *state.Job)) *state.Job {
		j := apitest.TestJob("web")
		edit(j)
		return j
	}
	dupTask := with(func(j *state.Job) {
		tg := j.TaskGroups[0]
		tg.Tasks = append(tg.Tasks, &state.Task{Name: "server", Driver: "raw_exec"})
	})
	dupGroup := with(func(j *state.Job) {
		j.TaskGroups = append(j.TaskGroups, apitest.TestJob("web").TaskGroups[0])
	})
	cases := []struct {
		name string
		path string
		body func(t *testing.T) any
		want []string
	}{
		{"malformed JSON", "/v1/jobs", func(*testing.T) any { return `{"Job": {"ID": "web",}` }, []string{"at byte 22"}},
		{"wrong JSON type", "/v1/jobs", func(*testing.T) any { return `{"Job": {"ID": 7}}` }, []string{"Job.ID"}},
		{"trailing data", "/v1/jobs", func(t *testing.T) any { return jobBody(t, apitest.TestJob("web"), nil) + `{}` }, []string{"after the JSON"}},
		{"empty body", "/v1/jobs", func(*testing.T) any { return "" }, []string{"body is required"}},
		{"blank body", "/v1/jobs", func(*testing.T) any { return "  \n" }, []string{"body is required"}},
		{"missing Job", "/v1/jobs", func(*testing.T) any { return `{"EnforceIndex": true}` }, []string{"Job"}},
		{"null Job", "/v1/job/web", func(*testing.T) any { return `{"Job": null}` }, []string{"Job"}},
		{"path ID mismatch", "/v1/job/other", func(t *testing.T) any { return jobBody(t, apitest.TestJob("web"), nil) }, []string{"Job.ID", "other"}},
		{"missing ID", "/v1/jobs", func(t *testing.T) any { return jobBody(t, apitest.TestJob(""), nil) }, []string{"Job.ID"}},
		{"invalid Type", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, with(func(j *state.Job) { j.Type = "daemon" }), nil)
		}, []string{"Job.Type", "daemon"}},
		{"Priority 101", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, with(func(j *state.Job) { j.Priority = 101 }), nil)
		}, []string{"Job.Priority", "101"}},
		{"Priority -1", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, with(func(j *state.Job) { j.Priority = -1 }), nil)
		}, []string{"Job.Priority", "-1"}},
		{"negative Count", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, with(func(j *state.Job) { j.TaskGroups[0].Count = -2 }), nil)
		}, []string{"Job.TaskGroups[0].Count", "negative"}},
		{"duplicate group", "/v1/jobs", func(t *testing.T) any { return jobBody(t, dupGroup, nil) }, []string{"Job.TaskGroups[1].Name", `"web"`}},
		{"duplicate task", "/v1/jobs", func(t *testing.T) any { return jobBody(t, dupTask, nil) }, []string{"Job.TaskGroups[0].Tasks[1].Name", `"server"`}},
		{"several problems", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, with(func(j *state.Job) { j.Type = "daemon"; j.TaskGroups[0].Tasks[0].Driver = "" }), nil)
		}, []string{"Job.Type", "Job.TaskGroups[0].Tasks[0].Driver"}},
		{"EvalPriority 101", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, apitest.TestJob("web"), func(m map[string]any) { m["EvalPriority"] = 101 })
		}, []string{"EvalPriority", "101"}},
		{"EvalPriority -5", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, apitest.TestJob("web"), func(m map[string]any) { m["EvalPriority"] = -5 })
		}, []string{"EvalPriority"}},
		{"bad Submission.Format", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, apitest.TestJob("web"), func(m map[string]any) {
				m["Submission"] = map[string]any{"Format": "yaml", "Source": "x: 1"}
			})
		}, []string{"Submission.Format", "yaml"}},
		{"missing Submission.Format", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, apitest.TestJob("web"), func(m map[string]any) { m["Submission"] = map[string]any{"Source": "x"} })
		}, []string{"Submission.Format"}},
		{"empty Submission.Source", "/v1/jobs", func(t *testing.T) any {
			return jobBody(t, apitest.TestJob("web"), func(m map[string]any) { m["Submission"] = map[string]any{"Format": "hcl2"} })
		}, []string{"Submission.Source"}},
	}
	for _, tc := range cases {
		for _, method := range []string{http.MethodPost, http.MethodPut} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				h := newHarness(t)
				before := h.Store.LatestIndex()
				msg := h.Fail(method, tc.path, tc.body(t), http.StatusBadRequest, tc.want...)
				if strings.Count(strings.TrimSuffix(msg, "\n"), "\n") != 0 {
					t.Errorf("error body %q is not one line", msg)
				}
				if h.writer.Applied != 0 || h.Store.LatestIndex() != before {
					t.Errorf("a rejected register reached the store (%d applies)", h.writer.Applied)
				}
				if jobs, _ := h.Store.Jobs(nil, "*", ""); len(jobs) != 0 {
					t.Errorf("%d jobs stored after a rejected register", len(jobs))
				}
			})
		}
	}
}

func TestRequestBodyTooLarge(t *testing.T) {
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.MaxBodyBytes = 64 })
	h.Fail(http.MethodPost, "/v1/jobs", jobBody(t, apitest.TestJob("web"), nil), http.StatusRequestEntityTooLarge, "64 bytes")
	if h.writer.Applied != 0 {
		t.Error("an oversize body reached the writer")
	}
}

// TestNotFound covers the 404s: unknown jobs, versions, submissions and
// endpoints.
func TestNotFound(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	cases := []struct {
		method, target string
		want           string
	}{
		{http.MethodGet, "/v1/job/nope", `"nope"`},
		{http.MethodGet, "/v1/job/web?namespace=other", `"web"`},
		{http.MethodGet, "/v1/job/nope/versions", `"nope"`},
		{http.MethodGet, "/v1/job/nope/summary", `"nope"`},
		{http.MethodGet, "/v1/job/nope/submission?version=0", `"nope"`},
		{http.MethodGet, "/v1/job/web/submission?version=0", "version 0"},
		{http.MethodDelete, "/v1/job/nope", `"nope"`},
		{http.MethodDelete, "/v1/job/nope?purge=true", `"nope"`},
		{http.MethodGet, "/v1/namespace/nope", `"nope"`},
		{http.MethodDelete, "/v1/namespace/nope", `"nope"`},
		{http.MethodGet, "/v1/nothing", "/v1/nothing"},
		{http.MethodGet, "/v1/job/web/nothing", "/v1/job/web/nothing"},
		{http.MethodGet, "/v1/jobs/", "/v1/jobs/"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			h := h.on(t)
			before := h.Store.LatestIndex()
			h.Fail(tc.method, tc.target, nil, http.StatusNotFound, tc.want)
			if h.Store.LatestIndex() != before {
				t.Error("a 404 wrote something")
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	h := newHarness(t)
	cases := []struct{ method, target string }{
		{http.MethodDelete, "/v1/jobs"},
		{http.MethodPatch, "/v1/jobs"},
		{http.MethodGet, "/v1/jobs/parse"},
		{http.MethodGet, "/v1/validate/job"},
		{http.MethodPatch, "/v1/job/web"},
		{http.MethodPost, "/v1/job/web/versions"},
		{http.MethodDelete, "/v1/job/web/allocations"},
		{http.MethodPut, "/v1/namespaces"},
		{http.MethodGet, "/v1/namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			h := h.on(t)
			rec := h.Do(tc.method, tc.target, nil)
			if rec.Code != http.StatusMethodNotAllowed {
				t.Fatalf("status %d, want 405; body %q", rec.Code, rec.Body.String())
			}
			if !strings.Contains(rec.Body.String(), tc.method) {
				t.Errorf("body %q does not name the method", rec.Body.String())
			}
			if rec.Header().Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
		})
	}
}

// TestBadQueryParameters: each malformed parameter is a 400 naming it.
func TestBadQueryParameters(t *testing.T) {
	h := newHarness(t)
	h.register(apitest.TestJob("web"))
	cases := []struct {
		method, target, param string
	}{
		{http.MethodGet, "/v1/jobs?index=x", "index"},
		{http.MethodGet, "/v1/jobs?index=-1", "index"},
		{http.MethodGet, "/v1/job/web?wait=10", "wait"},
		{http.MethodGet, "/v1/job/web?index=1&wait=forever", "wait"},
		{http.MethodGet, "/v1/job/web?wait=-1s", "wait"},
		{http.MethodGet, "/v1/jobs?per_page=x", "per_page"},
		{http.MethodGet, "/v1/jobs?per_page=-1", "per_page"},
		{http.MethodGet, "/v1/jobs?meta=maybe", "meta"},
		{http.MethodGet, "/v1/jobs?filter=" + urlEscape(`Type ==`), "filter"},
		{http.MethodGet, "/v1/job/web/versions?diffs=yes", "diffs"},
		{http.MethodGet, "/v1/job/web/allocations?all=2x", "all"},
		{http.MethodGet, "/v1/job/web/deployments?all=on", "all"},
		{http.MethodGet, "/v1/job/web/submission", "version"},
		{http.MethodGet, "/v1/job/web/submission?version=x", "version"},
		{http.MethodGet, "/v1/job/web/submission?version=-1", "version"},
		{http.MethodDelete, "/v1/job/web?purge=please", "purge"},
		{http.MethodDelete, "/v1/job/web?global=sure", "global"},
		{http.MethodDelete, "/v1/job/web?no_shutdown_delay=y", "no_shutdown_delay"},
		{http.MethodDelete, "/v1/job/web?eval_priority=high", "eval_priority"},
		{http.MethodDelete, "/v1/job/web?eval_priority=101", "eval_priority"},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			h := h.on(t)
			before := h.Store.LatestIndex()
			h.Fail(tc.method, tc.target, nil, http.StatusBadRequest, tc.param)
			if h.Store.LatestIndex() != before {
				t.Error("a rejected request wrote something")
			}
		})
	}
	if j := h.Job(state.DefaultNamespace, "web"); j == nil || j.Stop {
		t.Fatal("a rejected stop changed the job")
	}
}

// TestWriterErrorsMapToStatus checks that what a writer answers (a
// forwarded or leaderless failure) reaches the client with its status.
func TestWriterErrorsMapToStatus(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code int
	}{
		{"no leader", &CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader"}, http.StatusServiceUnavailable},
		{"wrapped conflict", state.Conflictf("forwarded"), http.StatusConflict},
		{"plain fault", errors.New("disk on fire"), http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.writer.Err = tc.err
			h.Fail(http.MethodPost, "/v1/jobs", &jobs.JobRegisterRequest{Job: apitest.TestJob("web")}, tc.code, tc.err.Error())
		})
	}
}
