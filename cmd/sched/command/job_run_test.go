package command

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

const webHCL = `job "web" {
  group "cache" {
    task "redis" {
      driver = "raw_exec"
      config { command = var.command }
    }
  }
}
`

// writeFile writes content to name in a fresh temporary folder.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func webJob() *state.Job {
	return &state.Job{ID: "web", Name: "web", Type: "service",
		TaskGroups: []*state.TaskGroup{{Name: "cache", Count: 1, Tasks: []*state.Task{{Name: "redis", Driver: "raw_exec"}}}}}
}

// registerBody is the register request as the server decodes it.
type registerBody struct {
	Job            *state.Job
	Submission     *state.JobSubmission
	EnforceIndex   bool
	JobModifyIndex uint64
	EvalPriority   int
	PolicyOverride bool
	PreserveCounts bool
}

func TestJobRunHCLWithVariables(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs/parse", reply(0, webJob()))
	f.on("PUT", "/v1/jobs", reply(7, state.JobRegisterResponse{EvalID: "e1e1e1e1-aaaa", EvalCreateIndex: 7, JobModifyIndex: 7}))

	jobPath := writeFile(t, "web.sched.hcl", webHCL)
	varFile := writeFile(t, "prod.hcl", "command = \"/bin/false\"\nport = 8080\n")
	r := runCLI(t, f, runOpts{}, "job", "run", "-detach", "-var-file", varFile, "-var", "command=/bin/true", "-var", `tags=["a","b"]`, jobPath)
	r.check(t, 0, lines(
		"Job registration successful",
		"Evaluation ID: e1e1e1e1-aaaa",
		"Job Modify Index: 7",
	), "")

	var parse struct {
		JobHCL       string
		Canonicalize bool
		Variables    string
		HCLv1        bool
	}
	decodeBody(t, f.only("PUT /v1/jobs/parse"), &parse)
	if parse.JobHCL != webHCL || parse.Canonicalize || parse.HCLv1 {
		t.Errorf("parse request = %+v", parse)
	}
	// The flag replaces the file's value in place; one definition each.
	wantVars := "command = \"/bin/true\"\nport    = 8080\ntags    = [\"a\", \"b\"]\n"
	if parse.Variables != wantVars {
		t.Errorf("Variables =\n%s\nwant\n%s", parse.Variables, wantVars)
	}

	var reg registerBody
	decodeBody(t, f.only("PUT /v1/jobs"), &reg)
	if reg.Job == nil || reg.Job.ID != "web" || reg.EnforceIndex {
		t.Errorf("register request = %+v", reg)
	}
	wantSub := &state.JobSubmission{
		Format:        "hcl2",
		Source:        webHCL,
		VariableFlags: map[string]string{"command": "/bin/true", "tags": `["a","b"]`},
		Variables:     "command = \"/bin/false\"\nport = 8080\n",
	}
	if !reflect.DeepEqual(reg.Submission, wantSub) {
		t.Errorf("submission = %+v\nwant %+v", reg.Submission, wantSub)
	}
}

func TestJobRunJSON(t *testing.T) {
	jobJSON := `{"ID":"web","Name":"web","Type":"batch","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"mock"}]}]}`
	cases := []struct {
		name    string
		file    string
		content string
		flags   []string
	}{
		{name: "wrapped", file: "web.json", content: `{"Job": ` + jobJSON + `}`},
		{name: "bare", file: "web.json", content: jobJSON},
		{name: "upper-case extension", file: "web.JSON", content: jobJSON},
		{name: "-json flag", file: "web.txt", content: jobJSON, flags: []string{"-json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e2", JobModifyIndex: 9}))
			args := append(append([]string{"job", "run", "-detach"}, tc.flags...), writeFile(t, tc.file, tc.content))
			runCLI(t, f, runOpts{}, args...).check(t, 0, lines("Job registration successful", "Evaluation ID: e2", "Job Modify Index: 9"), "")
			if n := len(f.requests("PUT /v1/jobs/parse")); n != 0 {
				t.Errorf("a JSON job was sent to parse")
			}
			var reg registerBody
			decodeBody(t, f.only("PUT /v1/jobs"), &reg)
			if reg.Job.ID != "web" || reg.Job.Type != "batch" || len(reg.Job.TaskGroups) != 1 || reg.Job.TaskGroups[0].Count != 1 {
				t.Errorf("job = %+v", reg.Job)
			}
			if reg.Submission == nil || reg.Submission.Format != "json" || reg.Submission.Source != tc.content {
				t.Errorf("submission = %+v", reg.Submission)
			}
		})
	}
}

func TestJobRunFromStdin(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e2", JobModifyIndex: 9}))
	r := runCLI(t, f, runOpts{stdin: `  {"ID": "web"}`}, "job", "run", "-detach", "-")
	r.check(t, 0, lines("Job registration successful", "Evaluation ID: e2", "Job Modify Index: 9"), "")
	if len(f.requests("PUT /v1/jobs/parse")) != 0 {
		t.Error("JSON on stdin was sent to parse")
	}

	f.on("PUT", "/v1/jobs/parse", reply(0, webJob()))
	runCLI(t, f, runOpts{stdin: webHCL}, "job", "run", "-detach", "-").check(t, 0,
		lines("Job registration successful", "Evaluation ID: e2", "Job Modify Index: 9"), "")
	var parse struct{ JobHCL string }
	decodeBody(t, f.only("PUT /v1/jobs/parse"), &parse)
	if parse.JobHCL != webHCL {
		t.Errorf("JobHCL = %q", parse.JobHCL)
	}
}

func TestJobRunOptions(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e2", JobModifyIndex: 9}))
	path := writeFile(t, "web.json", `{"ID":"web"}`)
	runCLI(t, f, runOpts{}, "job", "run", "-detach", "-check-index", "0", "-preserve-counts", "-policy-override",
		"-eval-priority", "80", "-namespace", "prod", path).check(t, 0,
		lines("Job registration successful", "Evaluation ID: e2", "Job Modify Index: 9"), "")
	req := f.only("PUT /v1/jobs")
	var reg registerBody
	decodeBody(t, req, &reg)
	if !reg.EnforceIndex || reg.JobModifyIndex != 0 || !reg.PreserveCounts || !reg.PolicyOverride || reg.EvalPriority != 80 {
		t.Errorf("register request = %+v", reg)
	}
	if got := req.Query.Get("namespace"); got != "prod" {
		t.Errorf("namespace = %q, want prod", got)
	}
}

func TestJobRunNamespaceInFileWins(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e2", JobModifyIndex: 9}))
	path := writeFile(t, "web.json", `{"ID":"web","Namespace":"team-a"}`)
	runCLI(t, f, runOpts{}, "job", "run", "-detach", "-namespace", "prod", path)
	if got := f.only("PUT /v1/jobs").Query.Get("namespace"); got != "team-a" {
		t.Errorf("namespace = %q, want the file's team-a", got)
	}
}

func TestJobRunCheckIndexConflict(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", fail(http.StatusConflict, "job modify index is 12, not 10"))
	path := writeFile(t, "web.json", `{"ID":"web"}`)
	r := runCLI(t, f, runOpts{}, "job", "run", "-check-index", "10", path)
	r.check(t, 1, "", "Error submitting job: Unexpected response code: 409 (job modify index is 12, not 10)\n")
}

func TestJobRunBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name   string
		file   string
		body   string // file content; empty means the file does not exist
		flags  []string
		parse  http.HandlerFunc
		stderr string
	}{
		{
			name: "missing file", file: "nope.hcl",
			stderr: "Error getting job struct: reading job file: open " + filepath.Join(dir, "nope.hcl") + ": no such file or directory\n",
		},
		{
			name: "malformed JSON", file: "bad.json", body: "{\n  \"ID\": \"web\",\n  \"Type\": }",
			stderr: "Error getting job struct: parsing JSON job file " + filepath.Join(dir, "bad.json") + ": line 3, column 11: invalid character '}' looking for beginning of value\n",
		},
		{
			name: "JSON of the wrong type", file: "bad.json", body: `{"Job": {"ID": 5}}`,
			stderr: "Error getting job struct: parsing JSON job file " + filepath.Join(dir, "bad.json") + ": line 1, column 16: json: cannot unmarshal number into Go struct field Job.Job.ID of type string\n",
		},
		{
			name: "JSON array", file: "bad.json", body: `[]`,
			stderr: "Error getting job struct: parsing JSON job file " + filepath.Join(dir, "bad.json") + ": line 1, column 1: json: cannot unmarshal array into Go value of type map[string]json.RawMessage\n",
		},
		{
			name: "null job", file: "null.json", body: `{"Job": null}`,
			stderr: "Error getting job struct: parsing JSON job file " + filepath.Join(dir, "null.json") + ": the file holds no job\n",
		},
		{
			name: "variables with JSON", file: "web.json", body: `{"ID":"web"}`, flags: []string{"-var", "a=b"},
			stderr: "Error getting job struct: -var and -var-file apply only to HCL jobs\n",
		},
		{
			name: "variables with HCL1", file: "web.hcl", body: webHCL, flags: []string{"-hcl1", "-var", "a=b"},
			stderr: "Error getting job struct: -var and -var-file are not supported with -hcl1\n",
		},
		{
			name: "bad -var", file: "web.hcl", body: webHCL, flags: []string{"-var", "novalue"},
			stderr: "Error getting job struct: -var \"novalue\": want NAME=VALUE with NAME a valid identifier\n",
		},
		{
			name: "missing var file", file: "web.hcl", body: webHCL, flags: []string{"-var-file", filepath.Join(dir, "none.hcl")},
			stderr: "Error getting job struct: reading var file: open " + filepath.Join(dir, "none.hcl") + ": no such file or directory\n",
		},
		{
			name: "server cannot parse", file: "web.hcl", body: webHCL,
			parse:  fail(http.StatusBadRequest, "web.hcl:3,5-9: Unsupported block type"),
			stderr: "Error getting job struct: parsing job file " + filepath.Join(dir, "web.hcl") + ": Unexpected response code: 400 (web.hcl:3,5-9: Unsupported block type)\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if tc.body != "" {
				if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := newFakeAPI(t)
			if tc.parse != nil {
				f.on("PUT", "/v1/jobs/parse", tc.parse)
			}
			args := append(append([]string{"job", "run"}, tc.flags...), path)
			runCLI(t, f, runOpts{}, args...).check(t, 1, "", tc.stderr)
			if n := len(f.requests("PUT /v1/jobs")); n != 0 {
				t.Errorf("a bad job was registered")
			}
		})
	}
}

func TestJobRunHCL1(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs/parse", reply(0, webJob()))
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e2", JobModifyIndex: 9}))
	runCLI(t, f, runOpts{}, "job", "run", "-detach", "-hcl1", writeFile(t, "web.hcl", webHCL)).check(t, 0,
		lines("Job registration successful", "Evaluation ID: e2", "Job Modify Index: 9"), "")
	var parse struct{ HCLv1 bool }
	decodeBody(t, f.only("PUT /v1/jobs/parse"), &parse)
	var reg registerBody
	decodeBody(t, f.only("PUT /v1/jobs"), &reg)
	if !parse.HCLv1 || reg.Submission.Format != "hcl1" {
		t.Errorf("HCLv1 = %v, submission format %q", parse.HCLv1, reg.Submission.Format)
	}
}

func TestJobRunTemplatesAreNotMonitored(t *testing.T) {
	cases := []struct {
		name string
		job  string
		note string
	}{
		{"periodic", `{"ID":"nightly","Periodic":{"Enabled":true,"Spec":"@daily"}}`, "The job is periodic: it launches on its schedule, not now."},
		{"parameterized", `{"ID":"render","ParameterizedJob":{"Payload":"required"}}`, "The job is parameterized: run instances of it with dispatch."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{JobModifyIndex: 9, Warnings: "  deprecated field\n"}))
			r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "j.json", tc.job))
			r.check(t, 0, lines("Job Warnings:", "deprecated field", "", "Job registration successful", "Job Modify Index: 9", tc.note), "")
			if len(f.requests("GET /v1/job/nightly/evaluations"))+len(f.requests("GET /v1/job/render/evaluations")) != 0 {
				t.Error("a template job was monitored")
			}
		})
	}
}

func TestJobRunMonitorsEvaluation(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1e1e1e1-full", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations",
		reply(0, []*state.Evaluation{}), // not visible yet: the monitor must wait, not fail
		reply(10, []*state.Evaluation{{ID: "other"}, {ID: "e1e1e1e1-full", Status: "pending", TriggeredBy: "job-register"}}),
		reply(12, []*state.Evaluation{{ID: "e1e1e1e1-full", Status: "complete", TriggeredBy: "job-register", DeploymentID: "d0d0d0d0-full"}}),
	)
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{
		{ID: "a1a1a1a1-full", EvalID: "e1e1e1e1-full", NodeID: "n1n1n1n1-full", TaskGroup: "cache"},
		{ID: "a0a0a0a0-full", EvalID: "older", NodeID: "n1n1n1n1-full", TaskGroup: "cache"},
	}))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	ts := "2025-03-01T12:00:00Z"
	r.check(t, 0, lines(
		"Job registration successful",
		"Evaluation ID: e1e1e1e1-full",
		"Job Modify Index: 9",
		"",
		`==> `+ts+`: Monitoring evaluation "e1e1e1e1"`,
		`    `+ts+`: Evaluation triggered by job "web"`,
		`    `+ts+`: Evaluation status changed: "pending" -> "complete"`,
		`    `+ts+`: Allocation "a1a1a1a1" created: node "n1n1n1n1", group "cache"`,
		`==> `+ts+`: Evaluation "e1e1e1e1" finished with status "complete"`,
	), "")

	// Each wait starts from the index of the previous answer, at least 1.
	var indexes []string
	for _, req := range f.requests("GET /v1/job/web/evaluations") {
		indexes = append(indexes, req.Query.Get("index"))
	}
	if want := []string{"", "1", "10"}; !reflect.DeepEqual(indexes, want) {
		t.Errorf("wait indexes = %q, want %q", indexes, want)
	}
}

func TestJobRunMonitorReportsPlacementFailures(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations", reply(12, []*state.Evaluation{{
		ID: "e1", Status: "complete", TriggeredBy: "job-register", BlockedEval: "b1",
		FailedTGAllocs: map[string]*state.AllocMetric{"cache": {
			NodesEvaluated: 3, CoalescedFailures: 1,
			ConstraintFiltered: map[string]int{"${attr.kernel.name} = windows": 2},
			DimensionExhausted: map[string]int{"memory": 1},
			NodesAvailable:     map[string]int{"dc1": 3, "dc2": 0},
		}},
	}}))
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{}))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	ts := "2025-03-01T12:00:00Z"
	r.check(t, exitPlacementFailed, lines(
		"Job registration successful",
		"Evaluation ID: e1",
		"Job Modify Index: 9",
		"",
		`==> `+ts+`: Monitoring evaluation "e1"`,
		`    `+ts+`: Evaluation triggered by job "web"`,
		`==> `+ts+`: Evaluation "e1" finished with status "complete" but failed to place all allocations:`,
		`    Task Group "cache" (failed to place 2 allocation(s)):`,
		`      * No nodes are available in datacenter "dc2"`,
		`      * Constraint "${attr.kernel.name} = windows": 2 nodes excluded by filter`,
		`      * Dimension "memory" exhausted on 1 nodes`,
		`    Evaluation "b1" waiting for additional capacity to place remainder`,
	), "")
}

func TestJobRunMonitorFailedEvaluation(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations", reply(12, []*state.Evaluation{{
		ID: "e1", Status: "failed", StatusDescription: "maximum attempts reached", TriggeredBy: "job-register",
	}}))
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{}))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	if r.code != 1 || r.stderr != "Evaluation failed: maximum attempts reached\n" ||
		!strings.HasSuffix(r.stdout, `Evaluation "e1" finished with status "failed"`+"\n") {
		t.Fatalf("got %+v", r)
	}
}

func TestJobRunMonitorServerError(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations", fail(http.StatusServiceUnavailable, "No cluster leader"))
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	if r.code != 1 || r.stderr != "Error reading evaluation: Unexpected response code: 503 (No cluster leader)\n" {
		t.Fatalf("got %+v", r)
	}
}

func TestJobRunMonitorInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations",
		reply(10, []*state.Evaluation{{ID: "e1", Status: "pending", TriggeredBy: "job-register"}}),
		func(w http.ResponseWriter, r *http.Request) {
			// The user presses Ctrl-C while the monitor blocks.
			cancel()
			<-r.Context().Done()
		},
	)
	r := runCLI(t, f, runOpts{ctx: ctx}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	if r.code != 1 || r.stderr != "Monitoring interrupted; evaluation \"e1\" continues on the servers (see `sched job status web`)\n" {
		t.Fatalf("got %+v", r)
	}
}
