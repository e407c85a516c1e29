package jobs

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

const parseHCL2 = `
variable "instances" {
  type    = number
  default = 1
}
variable "image" {
  type = string
}

job "web" {
  datacenters = ["dc1"]
  group "web" {
    count = var.instances
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/${var.image}"
      }
    }
  }
}
`

const parseHCL1 = `
job "legacy" {
  datacenters = ["dc1"]
  type = "batch"
  group "g" {
    count = 3
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      resources {
        cpu = 250
      }
    }
  }
}
`

func TestJobParse(t *testing.T) {
	cases := []struct {
		name  string
		req   JobParseRequest
		check func(t *testing.T, j *state.Job)
	}{
		{
			name: "HCL2 with variables",
			req:  JobParseRequest{JobHCL: parseHCL2, Variables: "instances = 4\nimage = \"sleep\"\n"},
			check: func(t *testing.T, j *state.Job) {
				if j.ID != "web" || len(j.TaskGroups) != 1 || j.TaskGroups[0].Count != 4 ||
					j.TaskGroups[0].Tasks[0].Config["command"] != "/bin/sleep" {
					t.Errorf("variables not applied: %+v", j)
				}
			},
		},
		{
			name: "not canonicalized",
			req:  JobParseRequest{JobHCL: parseHCL2, Variables: `image = "x"`},
			check: func(t *testing.T, j *state.Job) {
				if j.Priority != 0 || j.Region != "" || j.Type != "" || j.Namespace != "" {
					t.Errorf("defaults filled without Canonicalize: Priority %d Region %q Type %q Namespace %q",
						j.Priority, j.Region, j.Type, j.Namespace)
				}
				if tg := j.TaskGroups[0]; tg.Count != 1 || tg.RestartPolicy != nil || tg.Tasks[0].Resources != nil {
					t.Errorf("group defaults filled without Canonicalize: %+v", tg)
				}
			},
		},
		{
			name: "canonicalized",
			req:  JobParseRequest{JobHCL: parseHCL2, Variables: `image = "x"`, Canonicalize: true},
			check: func(t *testing.T, j *state.Job) {
				if j.Priority != state.DefaultJobPriority || j.Region != state.DefaultRegion ||
					j.Type != state.JobTypeService || j.Namespace != state.DefaultNamespace {
					t.Errorf("defaults missing with Canonicalize: Priority %d Region %q Type %q Namespace %q",
						j.Priority, j.Region, j.Type, j.Namespace)
				}
				if tg := j.TaskGroups[0]; tg.RestartPolicy == nil || tg.Tasks[0].Resources == nil || tg.Tasks[0].KillTimeout == 0 {
					t.Errorf("group defaults missing with Canonicalize: %+v", tg)
				}
			},
		},
		{
			name: "HCLv1",
			req:  JobParseRequest{JobHCL: parseHCL1, HCLv1: true},
			check: func(t *testing.T, j *state.Job) {
				if j.ID != "legacy" || j.Type != state.JobTypeBatch || j.TaskGroups[0].Count != 3 ||
					j.TaskGroups[0].Tasks[0].Resources == nil || j.TaskGroups[0].Tasks[0].Resources.CPU != 250 {
					t.Errorf("HCLv1 job %+v", j)
				}
			},
		},
	}
	for _, tc := range cases {
		for _, method := range []string{http.MethodPost, http.MethodPut} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				h := newHarness(t)
				var job state.Job
				h.OK(method, "/v1/jobs/parse", &tc.req, &job)
				tc.check(t, &job)
				if h.writer.Applied != 0 {
					t.Error("parse wrote something")
				}
			})
		}
	}
}

// TestJobParseCanonicalizeNamespace: a canonicalized job without its own
// namespace takes the query's.
func TestJobParseCanonicalizeNamespace(t *testing.T) {
	h := newHarness(t)
	var job state.Job
	h.OK(http.MethodPost, "/v1/jobs/parse?namespace=prod", &JobParseRequest{JobHCL: parseHCL1, HCLv1: true, Canonicalize: true}, &job)
	if job.Namespace != "prod" {
		t.Errorf("Namespace %q, want prod from the query", job.Namespace)
	}
}

func TestJobParseErrors(t *testing.T) {
	cases := []struct {
		name string
		body any
		want []string
	}{
		{"empty body", "", []string{"body is required"}},
		{"empty JobHCL", &JobParseRequest{}, []string{"JobHCL"}},
		{"HCL2 syntax error", &JobParseRequest{JobHCL: "job \"x\" {\n  group \"g\" {\n    count = \n}\n"}, []string{"input.hcl:3:13", "expression"}},
		{"HCL1 syntax error", &JobParseRequest{JobHCL: "job \"x\" {\n  group = [\n", HCLv1: true}, []string{"input.hcl:3:1"}},
		{"missing variable", &JobParseRequest{JobHCL: parseHCL2}, []string{"input.hcl:6:1", `"image"`}},
		{"unknown block", &JobParseRequest{JobHCL: "job \"x\" {\n  bogus {}\n}\n"}, []string{"input.hcl:2", "bogus"}},
		{"variables with HCLv1", &JobParseRequest{JobHCL: parseHCL1, HCLv1: true, Variables: "a = 1"}, []string{"Variables"}},
		{"malformed variables", &JobParseRequest{JobHCL: parseHCL2, Variables: "image = "}, []string{"variables.hcl:1:9"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.Fail(http.MethodPost, "/v1/jobs/parse", tc.body, http.StatusBadRequest, tc.want...)
		})
	}
}

// TestJobParseThenRegister: the JSON a parse answers registers as is, the
// round trip the CLI makes.
func TestJobParseThenRegister(t *testing.T) {
	h := newHarness(t)
	rec := h.OK(http.MethodPost, "/v1/jobs/parse", &JobParseRequest{JobHCL: parseHCL1, HCLv1: true}, nil)
	body := `{"Job":` + rec.Body.String() + `}`
	var out state.JobRegisterResponse
	h.OK(http.MethodPost, "/v1/jobs", body, &out)
	job := h.Job("default", "legacy")
	if job == nil || job.TaskGroups[0].Count != 3 {
		t.Fatalf("parsed job not registered: %+v", job)
	}
	// Registering the canonicalized form of the same source changes nothing.
	rec = h.OK(http.MethodPost, "/v1/jobs/parse", &JobParseRequest{JobHCL: parseHCL1, HCLv1: true, Canonicalize: true}, nil)
	var again state.JobRegisterResponse
	h.OK(http.MethodPost, "/v1/jobs", json.RawMessage(`{"Job":`+rec.Body.String()+`}`), &again)
	if again.JobModifyIndex != out.JobModifyIndex {
		t.Errorf("canonical form registered as a change: JobModifyIndex %d -> %d", out.JobModifyIndex, again.JobModifyIndex)
	}
}

// TestJobParseLeavesUnsetOut: without Canonicalize the answer has no
// member for a field the source did not set (Nomad's client decodes into
// pointers and would take a zero as set); what the source set is there.
func TestJobParseLeavesUnsetOut(t *testing.T) {
	h := newHarness(t)
	rec := h.OK(http.MethodPost, "/v1/jobs/parse", &JobParseRequest{JobHCL: parseHCL1, HCLv1: true}, nil)
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Priority", "Namespace", "Region", "Stop", "AllAtOnce", "Meta", "Version"} {
		if v, ok := raw[k]; ok {
			t.Errorf("%s: %v present, the source left it unset", k, v)
		}
	}
	if raw["ID"] != "legacy" || raw["Type"] != "batch" {
		t.Errorf("set fields lost: ID %v Type %v", raw["ID"], raw["Type"])
	}
	tg := raw["TaskGroups"].([]any)[0].(map[string]any)
	task := tg["Tasks"].([]any)[0].(map[string]any)
	res := task["Resources"].(map[string]any)
	if tg["Count"] != 3.0 || res["CPU"] != 250.0 || res["MemoryMB"] != nil {
		t.Errorf("group %v resources %v", tg["Count"], res)
	}
}

// TestJobParseKeepsMeaningfulZeros: where an absent member does not read
// as its zero (Enabled, Count, MaxParallel, the group's pointer
// durations), a parse without Canonicalize keeps the zero the source set,
// so the CLI's parse-then-register round trip keeps it too.
func TestJobParseKeepsMeaningfulZeros(t *testing.T) {
	h := newHarness(t)
	src := `job "p" {
  type = "batch"
  periodic {
    crons   = ["@daily"]
    enabled = false
  }
  group "g" {
    count          = 0
    shutdown_delay = "0s"
    update {
      max_parallel = 0
    }
    task "t" {
      driver = "mock"
    }
  }
}
`
	rec := h.OK(http.MethodPost, "/v1/jobs/parse", &JobParseRequest{JobHCL: src}, nil)
	var job state.Job
	if err := json.Unmarshal(rec.Body.Bytes(), &job); err != nil {
		t.Fatal(err)
	}
	tg := job.TaskGroups[0]
	if job.Periodic == nil || job.Periodic.Enabled || tg.Count != 0 || tg.ShutdownDelay == nil || *tg.ShutdownDelay != 0 ||
		tg.Update == nil || tg.Update.MaxParallel != 0 {
		t.Errorf("after parse: periodic %+v count %d shutdown %v update %+v\n%s", job.Periodic, tg.Count, tg.ShutdownDelay, tg.Update, rec.Body)
	}
}

// Parse errors name the file the caller named; a bad name is a 400.
func TestJobParseNamesTheCallersFile(t *testing.T) {
	h := newHarness(t)
	h.Fail(http.MethodPost, "/v1/jobs/parse", map[string]any{"JobHCL": "job \"web\" {\n  group \"g\" {\n    count = \n  }\n}\n", "Filename": "jobs/web.hcl"},
		http.StatusBadRequest, "jobs/web.hcl:3")
	h.Fail(http.MethodPost, "/v1/jobs/parse", map[string]any{"JobHCL": `job "web" {}`, "Filename": "a\nb"},
		http.StatusBadRequest, "Filename")
	h.Fail(http.MethodPost, "/v1/jobs/parse", map[string]any{"JobHCL": `job "web" {}`, "Filename": strings.Repeat("x", maxParseFilename+1)},
		http.StatusBadRequest, "Filename")
}
