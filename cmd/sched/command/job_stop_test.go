package command

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/schedhq/sched/state"
)

func stopFake(t *testing.T, jobs []*state.JobListStub) *fakeAPI {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, jobs))
	f.on("DELETE", "/v1/job/web", reply(8, state.JobDeregisterResponse{EvalID: "e9e9e9e9-full", EvalCreateIndex: 8, JobModifyIndex: 8}))
	f.on("GET", "/v1/job/web/evaluations", reply(9, []*state.Evaluation{{ID: "e9e9e9e9-full", Status: "complete", TriggeredBy: "job-deregister"}}))
	f.on("GET", "/v1/job/web/allocations", reply(9, []*state.Allocation{}))
	return f
}

func TestJobStop(t *testing.T) {
	ts := "2025-03-01T12:00:00Z"
	monitored := lines(
		`==> `+ts+`: Monitoring evaluation "e9e9e9e9"`,
		`    `+ts+`: Evaluation triggered by job "web"`,
		`==> `+ts+`: Evaluation "e9e9e9e9" finished with status "complete"`,
	)
	cases := []struct {
		name      string
		jobs      []*state.JobListStub
		args      []string
		stdin     string
		stdout    string
		wantQuery url.Values // nil: no DELETE expected
	}{
		{
			name: "exact ID, followed", jobs: []*state.JobListStub{{ID: "web", Namespace: "default"}},
			args: []string{"web"}, stdout: monitored, wantQuery: url.Values{"namespace": {"default"}},
		},
		{
			name: "every option, detached", jobs: []*state.JobListStub{{ID: "web", Namespace: "prod"}},
			args:   []string{"-purge", "-detach", "-no-shutdown-delay", "-global", "-eval-priority", "90", "web"},
			stdout: "e9e9e9e9-full\n",
			wantQuery: url.Values{"namespace": {"prod"}, "purge": {"true"}, "no_shutdown_delay": {"true"},
				"global": {"true"}, "eval_priority": {"90"}},
		},
		{
			name: "prefix confirmed", jobs: []*state.JobListStub{{ID: "web"}},
			args: []string{"-detach", "we"}, stdin: "y\n",
			stdout: "Are you sure you want to stop job \"web\"? [y/N] e9e9e9e9-full\n", wantQuery: url.Values{},
		},
		{
			name: "prefix refused", jobs: []*state.JobListStub{{ID: "web"}},
			args: []string{"we"}, stdin: "n\n",
			stdout: "Are you sure you want to stop job \"web\"? [y/N] \nCancelling job stop\n",
		},
		{
			name: "prefix without an answer", jobs: []*state.JobListStub{{ID: "web"}},
			args: []string{"we"}, stdin: "",
			stdout: "Are you sure you want to stop job \"web\"? [y/N] \nCancelling job stop\n",
		},
		{
			name: "prefix with -yes", jobs: []*state.JobListStub{{ID: "web"}},
			args: []string{"-yes", "-detach", "we"}, stdout: "e9e9e9e9-full\n", wantQuery: url.Values{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := stopFake(t, tc.jobs)
			r := runCLI(t, f, runOpts{stdin: tc.stdin}, append([]string{"job", "stop"}, tc.args...)...)
			r.check(t, 0, tc.stdout, "")
			dels := f.requests("DELETE /v1/job/web")
			if tc.wantQuery == nil {
				if len(dels) != 0 {
					t.Fatal("job stopped without confirmation")
				}
				return
			}
			if len(dels) != 1 {
				t.Fatalf("%d DELETEs, want 1", len(dels))
			}
			if !reflect.DeepEqual(dels[0].Query, tc.wantQuery) {
				t.Errorf("query = %v, want %v", dels[0].Query, tc.wantQuery)
			}
		})
	}
}

func TestJobStopWithoutEvaluation(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "nightly"}}))
	f.on("DELETE", "/v1/job/nightly", reply(8, state.JobDeregisterResponse{JobModifyIndex: 8}))
	runCLI(t, f, runOpts{}, "job", "stop", "nightly").check(t, 0, "Job \"nightly\" stopped\n", "")
}

func TestJobStopErrors(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "web"}}))
	f.on("DELETE", "/v1/job/web", fail(http.StatusForbidden, "Permission denied"))
	runCLI(t, f, runOpts{}, "job", "stop", "web").check(t, 1, "",
		"Error deregistering job: Unexpected response code: 403 (Permission denied)\n")

	f = newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{}))
	runCLI(t, f, runOpts{}, "job", "stop", "web").check(t, 1, "", "No job(s) with prefix or ID \"web\" found\n")
}
