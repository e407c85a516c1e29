package jobs

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// deepConfig nests depth single-key maps: {"a": {"a": … "x"}}.
func deepConfig(depth int) map[string]any {
	var v any = "x"
	for range depth {
		v = map[string]any{"a": v}
	}
	return v.(map[string]any)
}

// Each request of issue 13's "one request crashes the cluster" and
// "smaller holes" is refused with a 4xx naming the limit, and writes
// nothing.
func TestJobLimitsRefuseBeforeProposing(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name string
		mod  func(j *state.Job)
		code int
		want string
	}{
		{"count 1e9", func(j *state.Job) { j.TaskGroups[0].Count = 1_000_000_000 }, 400, "max_group_count"},
		{"counts adding up", func(j *state.Job) {
			for i := range 11 {
				tg := apitest.TestJob("x").TaskGroups[0]
				tg.Name, tg.Count = "g"+string(rune('a'+i)), 10_000
				j.TaskGroups = append(j.TaskGroups, tg)
			}
		}, 400, "max_job_count"},
		// Passed HTTP validation, then failed when applied from the log: a 500.
		{"config 2000 deep", func(j *state.Job) { j.TaskGroups[0].Tasks[0].Config = deepConfig(2000) }, 400, "nested more than"},
		{"config 70 deep", func(j *state.Job) { j.TaskGroups[0].Tasks[0].Config = deepConfig(70) }, 400, "Job.TaskGroups[0].Tasks[0].Config"},
		{"slash in job ID", func(j *state.Job) { j.ID, j.Name = "a/b", "a/b" }, 400, "Job.ID"},
		{"task named ..", func(j *state.Job) { j.TaskGroups[0].Tasks[0].Name = ".." }, 400, "escape the allocation directory"},
		{"group named ..", func(j *state.Job) { j.TaskGroups[0].Name = ".." }, 400, "Job.TaskGroups[0].Name"},
		{"huge meta", func(j *state.Job) { j.Meta = map[string]string{"k": strings.Repeat("x", state.MaxMapBytes)} }, 400, "Job.Meta"},
		{"env key with =", func(j *state.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"A=B": "c"} }, 400, "Env"},
		{"5 MiB job", func(j *state.Job) {
			j.TaskGroups[0].Tasks[0].Config = map[string]any{"big": strings.Repeat("x", 5<<20)}
		}, 413, "max_job_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := apitest.TestJob("limits")
			tc.mod(j)
			before := h.writer.Applied
			msg := h.Fail(http.MethodPost, "/v1/jobs", map[string]any{"Job": j}, tc.code, tc.want)
			if h.writer.Applied != before {
				t.Errorf("%s: refused (%s) yet %d command(s) proposed", tc.name, msg, h.writer.Applied-before)
			}
		})
	}
}

// The configured limits replace the defaults.
func TestJobLimitsConfigurable(t *testing.T) {
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Jobs.JobLimits = state.JobLimits{MaxGroupCount: 3} })
	j := apitest.TestJob("web")
	j.TaskGroups[0].Count = 4
	h.Fail(http.MethodPost, "/v1/jobs", map[string]any{"Job": j}, 400, "limit of 3 per group")
	j.TaskGroups[0].Count = 3
	h.OK(http.MethodPost, "/v1/jobs", map[string]any{"Job": j}, nil)
}

// Bodies nested deeper than the limit are refused before they are
// decoded; HCL nested 60,000 deep is refused before it is parsed.
func TestDeepBodiesRefused(t *testing.T) {
	h := newHarness(t)
	h.Fail(http.MethodPost, "/v1/jobs", strings.Repeat("[", 60000), 400, "nested more than")
	h.Fail(http.MethodPost, "/v1/jobs/parse", `{"JobHCL": "`+strings.Repeat("[", 60000)+`"}`, 400, "nested more than")
	body, _ := json.Marshal(JobParseRequest{JobHCL: "job \"x\" {\n meta = { a = " + strings.Repeat("[", 60000) + "\n}", HCLv1: true})
	h.Fail(http.MethodPost, "/v1/jobs/parse", string(body), 400, "nested more than")
	// Brackets inside a JSON string are no nesting.
	h.OK(http.MethodPost, "/v1/jobs/parse", JobParseRequest{JobHCL: `job "x" { meta = { a = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[" } }`}, nil)
}

// Every path that changes a count is held to the register's limits before
// anything is proposed: scale (issue 28), and a revert or a dispatch after
// the limits were lowered.
func TestCountLimitsAtEveryDoor(t *testing.T) {
	limits := state.JobLimits{MaxGroupCount: 10, MaxJobCount: 15}
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Jobs.JobLimits = limits })
	j := apitest.TestJob("web")
	j.TaskGroups[0].Count = 2
	second := apitest.TestJob("web").TaskGroups[0]
	second.Name, second.Count = "db", 8
	j.TaskGroups = append(j.TaskGroups, second)
	h.register(j)
	scale := func(count int64) map[string]any {
		return map[string]any{"Count": count, "Message": "m", "Target": map[string]string{"Group": "web"}}
	}
	before := h.writer.Applied
	h.Fail(http.MethodPost, "/v1/job/web/scale", scale(1_000_000_000), 400, "Count", "max_group_count")
	h.Fail(http.MethodPost, "/v1/job/web/scale", scale(1<<62), 400, "Count", "max_group_count")
	h.Fail(http.MethodPost, "/v1/job/web/scale", scale(8), 400, "Count", "add up to 16", "max_job_count")
	if h.writer.Applied != before {
		t.Fatalf("refused scales proposed %d command(s)", h.writer.Applied-before)
	}
	if got := h.Job("default", "web").TaskGroups[0].Count; got != 2 {
		t.Fatalf("count after refused scales = %d, want 2", got)
	}
	h.OK(http.MethodPost, "/v1/job/web/scale", scale(7), nil)
	if got := h.Job("default", "web").TaskGroups[0].Count; got != 7 {
		t.Fatalf("count after scale = %d, want 7", got)
	}
}

// A revert and a dispatch are held to the limits in force now, not to the
// ones the job version or the parameterized parent passed.
func TestCountLimitsLoweredSinceRegister(t *testing.T) {
	h := newHarness(t)
	big := apitest.TestJob("web")
	big.TaskGroups[0].Count = 50
	h.register(big)
	small := apitest.TestJob("web")
	small.TaskGroups[0].Count = 1
	h.register(small)
	tmpl := apitest.ParameterizedJob("tmpl")
	tmpl.TaskGroups[0].Count = 50
	h.register(tmpl)

	h.api.cfg.JobLimits = state.JobLimits{MaxGroupCount: 10}
	before := h.writer.Applied
	h.Fail(http.MethodPost, "/v1/job/web/revert", map[string]any{"JobID": "web", "JobVersion": 0}, 400, "max_group_count")
	h.Fail(http.MethodPost, "/v1/job/tmpl/dispatch", map[string]any{}, 400, "max_group_count")
	if h.writer.Applied != before {
		t.Fatalf("refused writes proposed %d command(s)", h.writer.Applied-before)
	}
}
