package command

import (
	"net/http"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestJobValidate(t *testing.T) {
	cases := []struct {
		name   string
		reply  http.HandlerFunc
		code   int
		stdout string
		stderr string
	}{
		{
			name:   "valid",
			reply:  reply(0, state.JobValidateResponse{DriverConfigValidated: true, ValidationErrors: []string{}}),
			stdout: "Job validation successful\n",
		},
		{
			name:   "valid with warnings",
			reply:  reply(0, state.JobValidateResponse{Warnings: "group \"cache\": count 0\n"}),
			stdout: lines("Job Warnings:", `group "cache": count 0`, "", "Job validation successful"),
		},
		{
			name: "invalid",
			reply: reply(0, state.JobValidateResponse{
				ValidationErrors: []string{"Job.Datacenters: required", "Job.TaskGroups[0].Tasks: a group needs a task"},
				Error:            "2 errors: ...",
			}),
			code: 1,
			stderr: lines("Job validation errors:",
				"  * Job.Datacenters: required",
				"  * Job.TaskGroups[0].Tasks: a group needs a task"),
		},
		{
			name:   "invalid with only a message",
			reply:  reply(0, state.JobValidateResponse{Error: "job is broken"}),
			code:   1,
			stderr: lines("Job validation errors:", "  * job is broken"),
		},
		{
			name:   "server error",
			reply:  fail(http.StatusBadRequest, "Job: a job definition is required"),
			code:   1,
			stderr: "Error validating job: Unexpected response code: 400 (Job: a job definition is required)\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("PUT", "/v1/jobs/parse", reply(0, webJob()))
			f.on("PUT", "/v1/validate/job", tc.reply)
			runCLI(t, f, runOpts{}, "job", "validate", writeFile(t, "web.hcl", webHCL)).check(t, tc.code, tc.stdout, tc.stderr)
			var body struct{ Job *struct{ ID string } }
			decodeBody(t, f.only("PUT /v1/validate/job"), &body)
			if body.Job == nil || body.Job.ID != "web" {
				t.Errorf("validate body = %+v", body)
			}
			if n := len(f.requests("PUT /v1/jobs")); n != 0 {
				t.Error("validate registered the job")
			}
		})
	}
}

func TestJobValidateBadFile(t *testing.T) {
	f := newFakeAPI(t)
	r := runCLI(t, f, runOpts{}, "job", "validate", writeFile(t, "j.json", "{"))
	if r.code != 1 || r.stdout != "" || len(f.requests("")) != 0 {
		t.Fatalf("got %+v, requests %v", r, f.keys())
	}
	const want = ": line 1, column 1: unexpected end of JSON input\n"
	if len(r.stderr) < len(want) || r.stderr[len(r.stderr)-len(want):] != want {
		t.Fatalf("stderr = %q", r.stderr)
	}
}
