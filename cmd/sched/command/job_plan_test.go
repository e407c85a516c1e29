package command

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestJobPlanChanges(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/job/web/plan", reply(9, state.JobPlanResponse{
		Index: 9, JobModifyIndex: 7,
		Diff: &state.JobDiff{Type: state.DiffTypeEdited, ID: "web",
			Fields: []*state.FieldDiff{{Type: state.DiffTypeNone, Name: "Priority", Old: "50", New: "50"}},
			TaskGroups: []*state.TaskGroupDiff{{
				Type: state.DiffTypeEdited, Name: "cache", Updates: map[string]uint64{"create/destroy update": 2, "create": 1},
				Fields: []*state.FieldDiff{{Type: state.DiffTypeEdited, Name: "Count", Old: "2", New: "3"}},
				Tasks: []*state.TaskDiff{{Type: state.DiffTypeEdited, Name: "redis", Annotations: []string{"forces create/destroy update"},
					Objects: []*state.ObjectDiff{{Type: state.DiffTypeEdited, Name: "Config", Fields: []*state.FieldDiff{
						{Type: state.DiffTypeEdited, Name: "command", Old: "/bin/a", New: "/bin/b"},
						{Type: state.DiffTypeNone, Name: "args", Old: "x", New: "x"},
					}}}}},
			}, {Type: state.DiffTypeNone, Name: "db", Updates: map[string]uint64{"ignore": 1},
				Tasks: []*state.TaskDiff{{Type: state.DiffTypeNone, Name: "pg"}}}},
		},
		Annotations: &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{
			"cache": {Place: 1, DestructiveUpdate: 2}, "db": {Ignore: 1}}},
		FailedTGAllocs: map[string]*state.AllocMetric{"cache": {NodesEvaluated: 2, NodesExhausted: 2,
			DimensionExhausted: map[string]int{"cpu": 2}}},
	}))
	path := writeFile(t, "web.json", `{"ID":"web"}`)
	r := runCLI(t, f, runOpts{}, "job", "plan", path)
	r.check(t, exitPlacementFailed, lines(
		`+/- Job: "web"`,
		`+/- Task Group: "cache" (1 create, 2 create/destroy update)`,
		`  +/- Count: "2" => "3"`,
		`  +/- Task: "redis" (forces create/destroy update)`,
		`    +/- Config {`,
		`      +/- command: "/bin/a" => "/bin/b"`,
		`    }`,
		`Task Group: "db" (1 ignore)`,
		`  Task: "pg"`,
		``,
		`Scheduler dry-run:`,
		`- WARNING: Failed to place all allocations.`,
		`  Task Group "cache" (failed to place 1 allocation(s)):`,
		`    * Resources exhausted on 2 nodes`,
		`    * Dimension "cpu" exhausted on 2 nodes`,
		``,
		`Job Modify Index: 7`,
		`To submit the job with version verification run:`,
		``,
		`sched job run -check-index 7 `+path,
		``,
		`With -check-index the job is registered only if its job modify index still`,
		`matches: if someone changed the job since this plan, the register fails`,
		`instead of applying changes this plan did not show.`,
	), "")
	var body struct {
		Job            *state.Job
		Diff           bool
		PolicyOverride bool
	}
	decodeBody(t, f.only("PUT /v1/job/web/plan"), &body)
	if body.Job == nil || body.Job.ID != "web" || !body.Diff || body.PolicyOverride {
		t.Errorf("plan request %+v", body)
	}
}

func TestJobPlanNoChangesAndPeriodic(t *testing.T) {
	f := newFakeAPI(t)
	launch := testNow.Add(90 * time.Minute)
	f.on("PUT", "/v1/job/nightly/plan", reply(9, state.JobPlanResponse{
		Index: 9, JobModifyIndex: 4, NextPeriodicLaunch: launch,
		Diff:        &state.JobDiff{Type: state.DiffTypeNone, ID: "nightly"},
		Annotations: &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{}},
	}))
	path := writeFile(t, "nightly.json", `{"ID":"nightly","Periodic":{"Enabled":true,"Spec":"30 13 * * *"}}`)
	r := runCLI(t, f, runOpts{}, "job", "plan", "-diff=false", path)
	r.check(t, 0, lines(
		`Scheduler dry-run:`,
		`- All tasks successfully allocated.`,
		`- If submitted now, next periodic launch would be at 2025-03-01T13:30:00Z (1h30m0s from now).`,
		``,
		`Job Modify Index: 4`,
		`To submit the job with version verification run:`,
		``,
		`sched job run -check-index 4 `+path,
		``,
		`With -check-index the job is registered only if its job modify index still`,
		`matches: if someone changed the job since this plan, the register fails`,
		`instead of applying changes this plan did not show.`,
	), "")
}

func TestJobPlanErrors(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/job/web/plan", fail(http.StatusBadRequest, "Job.TaskGroups[0].Count: must not be negative"))
	r := runCLI(t, f, runOpts{}, "job", "plan", writeFile(t, "web.json", `{"ID":"web"}`))
	r.check(t, 255, "", "Error during plan: Unexpected response code: 400 (Job.TaskGroups[0].Count: must not be negative)\n")

	r = runCLI(t, f, runOpts{}, "job", "plan", "/no/such/file.json")
	if r.code != 255 {
		t.Errorf("missing file: code %d", r.code)
	}
	r = runCLI(t, f, runOpts{}, "job", "plan")
	if r.code != 255 {
		t.Errorf("no file argument: code %d", r.code)
	}
}

func TestJobPlanNewJobDiff(t *testing.T) {
	resp := state.JobPlanResponse{
		Diff: &state.JobDiff{Type: state.DiffTypeAdded, ID: "web",
			Fields: []*state.FieldDiff{{Type: state.DiffTypeAdded, Name: "Type", New: "service"}},
			TaskGroups: []*state.TaskGroupDiff{{Type: state.DiffTypeAdded, Name: "cache", Updates: map[string]uint64{"create": 2},
				Fields: []*state.FieldDiff{{Type: state.DiffTypeAdded, Name: "Count", New: "2"}},
				Tasks: []*state.TaskDiff{{Type: state.DiffTypeAdded, Name: "redis", Annotations: []string{"forces create"},
					Fields: []*state.FieldDiff{{Type: state.DiffTypeAdded, Name: "Driver", New: "raw_exec"}}}}}}},
		Annotations: &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{"cache": {Place: 2}}},
	}
	for _, tc := range []struct {
		verbose bool
		diff    string
	}{
		{false, lines(`+ Job: "web"`, `+ Task Group: "cache" (2 create)`, `  + Task: "redis" (forces create)`)},
		{true, lines(`+ Job: "web"`, `  + Type: "service"`, `+ Task Group: "cache" (2 create)`, `  + Count: "2"`,
			`  + Task: "redis" (forces create)`, `    + Driver: "raw_exec"`)},
	} {
		f := newFakeAPI(t)
		f.on("PUT", "/v1/job/web/plan", reply(9, resp))
		args := []string{"job", "plan"}
		if tc.verbose {
			args = append(args, "-verbose")
		}
		r := runCLI(t, f, runOpts{}, append(args, writeFile(t, "web.json", `{"ID":"web"}`))...)
		if r.code != 1 || !strings.HasPrefix(r.stdout, tc.diff+"\nScheduler dry-run:\n- All tasks successfully allocated.\n") {
			t.Errorf("verbose %v: code %d, stdout:\n%s\nwant it to start with:\n%s", tc.verbose, r.code, r.stdout, tc.diff)
		}
	}
}
