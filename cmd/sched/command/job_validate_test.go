package command

import (
	"net/http"
	"strings"
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
			runCLI(t, f, runOpts{}, "job", "validate", writeFile(t, "web.hcl", validWebHCL)).check(t, tc.code, tc.stdout, tc.stderr)
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

// validWebHCL is a job that passes the checks its file alone decides.
const validWebHCL = `job "web" {
  datacenters = ["dc1"]
  group "cache" {
    task "redis" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// Without a server, job validate decides what the file alone decides: a
// parse error names the user's file and line, an invalid job lists its
// problems (exit 1), a valid one passes with a note (exit 0).
func TestJobValidateWithoutServer(t *testing.T) {
	noServer := runOpts{env: map[string]string{"SCHED_ADDR": "http://127.0.0.1:1"}}
	r := runCLI(t, nil, noServer, "job", "validate", writeFile(t, "web.hcl", validWebHCL))
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Job validation successful (no server reached") {
		t.Errorf("valid job without server: %d %q %q", r.code, r.stdout, r.stderr)
	}
	bad := writeFile(t, "broken.hcl", "job \"web\" {\n  group \"g\" {\n    count = \n  }\n}\n")
	r = runCLI(t, nil, noServer, "job", "validate", bad)
	if r.code != 1 || !strings.Contains(r.stderr, bad+":3") {
		t.Errorf("parse error: %d %q, want the file and line 3 named", r.code, r.stderr)
	}
	r = runCLI(t, nil, noServer, "job", "validate", writeFile(t, "neg.hcl", strings.Replace(validWebHCL, `group "cache" {`, "group \"cache\" {\n    count = -1", 1)))
	if r.code != 1 || !strings.Contains(r.stderr, "Job validation errors:") || !strings.Contains(r.stderr, "Count") {
		t.Errorf("invalid job: %d %q", r.code, r.stderr)
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
