package command

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func versionsFake(t *testing.T, resp *state.JobVersionsResponse) *fakeAPI {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "web", Namespace: "prod"}}))
	f.on("GET", "/v1/job/web", reply(5, resp.Versions[0]))
	f.on("GET", "/v1/job/web/versions", reply(5, resp))
	return f
}

var twoVersions = &state.JobVersionsResponse{
	Versions: []*state.Job{
		{ID: "web", Namespace: "prod", Version: 1, Stable: true, SubmitTime: submitted, Priority: 60},
		{ID: "web", Namespace: "prod", Version: 0, SubmitTime: submitted, Priority: 50},
	},
	Diffs: []*state.JobDiff{{
		Type: state.DiffTypeEdited, ID: "web",
		Fields: []*state.FieldDiff{{Type: state.DiffTypeEdited, Name: "Priority", Old: "50", New: "60"}},
		TaskGroups: []*state.TaskGroupDiff{
			{Type: state.DiffTypeNone, Name: "same"},
			{
				Type: state.DiffTypeEdited, Name: "cache", Updates: map[string]uint64{"create/destroy update": 1, "ignore": 0},
				Fields: []*state.FieldDiff{{Type: state.DiffTypeEdited, Name: "Count", Old: "1", New: "3"}},
				Objects: []*state.ObjectDiff{{Type: state.DiffTypeAdded, Name: "Constraint", Fields: []*state.FieldDiff{
					{Type: state.DiffTypeAdded, Name: "Operand", New: "="},
				}}},
				Tasks: []*state.TaskDiff{
					{Type: state.DiffTypeNone, Name: "sidecar"},
					{
						Type: state.DiffTypeEdited, Name: "redis", Annotations: []string{"forces create/destroy update"},
						Objects: []*state.ObjectDiff{{Type: state.DiffTypeEdited, Name: "Config", Fields: []*state.FieldDiff{
							{Type: state.DiffTypeEdited, Name: "image", Old: "redis:6", New: "redis:7"},
							{Type: state.DiffTypeDeleted, Name: "args", Old: "-v"},
							{Type: state.DiffTypeNone, Name: "port", Old: "6379", New: "6379", Annotations: []string{"unchanged"}},
						}}},
					},
				},
			},
		},
	}},
}

func TestJobHistory(t *testing.T) {
	t.Run("versions", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		runCLI(t, f, runOpts{}, "job", "history", "web").check(t, 0, lines(
			"Version     = 1",
			"Stable      = true",
			"Submit Date = 2025-03-01T11:00:00Z",
			"",
			"Version     = 0",
			"Stable      = false",
			"Submit Date = 2025-03-01T11:00:00Z",
		), "")
		req := f.only("GET /v1/job/web/versions")
		if req.Query.Get("diffs") != "" || req.Query.Get("namespace") != "prod" {
			t.Errorf("query = %v, want no diffs, the job's namespace", req.Query)
		}
	})

	t.Run("diffs", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		runCLI(t, f, runOpts{}, "job", "history", "-p", "web").check(t, 0, lines(
			"Version     = 1",
			"Stable      = true",
			"Submit Date = 2025-03-01T11:00:00Z",
			"Diff        =",
			`+/- Job: "web"`,
			`  +/- Priority: "50" => "60"`,
			`+/- Task Group: "cache" (1 create/destroy update)`,
			`  +/- Count: "1" => "3"`,
			`  + Constraint {`,
			`    + Operand: "="`,
			`  }`,
			`  +/- Task: "redis" (forces create/destroy update)`,
			`    +/- Config {`,
			`      +/- image: "redis:6" => "redis:7"`,
			`      - args: "-v"`,
			`      port: "6379" (unchanged)`,
			`    }`,
			"",
			"Version     = 0",
			"Stable      = false",
			"Submit Date = 2025-03-01T11:00:00Z",
		), "")
		if got := f.only("GET /v1/job/web/versions").Query.Get("diffs"); got != "true" {
			t.Errorf("diffs = %q", got)
		}
	})

	t.Run("one version", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		runCLI(t, f, runOpts{}, "job", "history", "-version", "0", "web").check(t, 0, lines(
			"Version     = 0",
			"Stable      = false",
			"Submit Date = 2025-03-01T11:00:00Z",
		), "")
	})

	t.Run("no change", func(t *testing.T) {
		f := versionsFake(t, &state.JobVersionsResponse{
			Versions: twoVersions.Versions,
			Diffs:    []*state.JobDiff{{Type: state.DiffTypeNone, ID: "web"}},
		})
		r := runCLI(t, f, runOpts{}, "job", "history", "-p", "-version", "1", "web")
		r.check(t, 0, lines("Version     = 1", "Stable      = true", "Submit Date = 2025-03-01T11:00:00Z", "Diff        =", "No changes"), "")
	})

	t.Run("template", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		runCLI(t, f, runOpts{}, "job", "inspect", "-t", "{{.ID}} v{{.Version}} p{{.Priority}}", "web").check(t, 0, "web v1 p60", "")
	})

	t.Run("unknown version", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		runCLI(t, f, runOpts{}, "job", "history", "-version", "7", "web").check(t, 1, "",
			"Error: job \"web\" has no version 7 (only the most recent versions are kept)\n")
	})

	t.Run("bad version flag", func(t *testing.T) {
		r := runCLI(t, nil, runOpts{}, "job", "history", "-version", "-1", "web")
		if r.code != 1 || !strings.Contains(r.stderr, `invalid value "-1" for flag -version: "-1" is not a non-negative integer`) {
			t.Fatalf("got %+v", r)
		}
	})

	t.Run("server error", func(t *testing.T) {
		f := newFakeAPI(t)
		f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "web"}}))
		f.on("GET", "/v1/job/web/versions", fail(http.StatusInternalServerError, "boom"))
		runCLI(t, f, runOpts{}, "job", "history", "web").check(t, 1, "",
			"Error retrieving job versions: Unexpected response code: 500 (boom)\n")
	})
}

func TestJobInspect(t *testing.T) {
	t.Run("current", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		r := runCLI(t, f, runOpts{}, "job", "inspect", "web")
		want, _ := json.MarshalIndent(map[string]*state.Job{"Job": twoVersions.Versions[0]}, "", "    ")
		r.check(t, 0, string(want)+"\n", "")
		if got := f.only("GET /v1/job/web").Query.Get("namespace"); got != "prod" {
			t.Errorf("namespace = %q, want the job's", got)
		}
	})

	t.Run("round trip through job run", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		out := runCLI(t, f, runOpts{}, "job", "inspect", "web").stdout
		job, err := decodeJSONJob([]byte(out))
		if err != nil || job.Version != 1 || job.Priority != 60 {
			t.Fatalf("decode inspect output: %v, %+v", err, job)
		}
	})

	t.Run("version", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		r := runCLI(t, f, runOpts{}, "job", "inspect", "-version", "0", "web")
		want, _ := json.MarshalIndent(map[string]*state.Job{"Job": twoVersions.Versions[1]}, "", "    ")
		r.check(t, 0, string(want)+"\n", "")
	})

	t.Run("unknown version", func(t *testing.T) {
		f := versionsFake(t, twoVersions)
		runCLI(t, f, runOpts{}, "job", "inspect", "-version", "9", "web").check(t, 1, "",
			"Error inspecting job: job \"web\" has no version 9 (only the most recent versions are kept)\n")
	})

	t.Run("job gone", func(t *testing.T) {
		f := newFakeAPI(t)
		f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "web"}}))
		f.on("GET", "/v1/job/web", fail(http.StatusNotFound, "job not found"))
		runCLI(t, f, runOpts{}, "job", "inspect", "web").check(t, 1, "",
			"Error inspecting job: Unexpected response code: 404 (job not found)\n")
	})
}
