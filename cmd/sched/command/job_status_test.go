package command

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

var submitted = testNow.Add(-time.Hour).UnixNano()

func TestJobStatusList(t *testing.T) {
	jobs := []*state.JobListStub{
		{ID: "web", Namespace: "default", Type: "service", Priority: 50, Status: "running", SubmitTime: submitted},
		{ID: "nightly", Namespace: "ops", Type: "batch", Priority: 70, Status: "running", Periodic: true, SubmitTime: submitted},
		{ID: "old", Namespace: "default", Type: "batch", Priority: 50, Status: "dead", Stop: true},
	}
	t.Run("one namespace", func(t *testing.T) {
		f := newFakeAPI(t)
		f.on("GET", "/v1/jobs", reply(5, jobs))
		runCLI(t, f, runOpts{}, "job", "status").check(t, 0, lines(
			"ID       Type            Priority  Status          Submit Date",
			"web      service         50        running         2025-03-01T11:00:00Z",
			"nightly  batch/periodic  70        running         2025-03-01T11:00:00Z",
			"old      batch           50        dead (stopped)  <none>",
		), "")
		if q := f.only("GET /v1/jobs").Query; len(q) != 0 {
			t.Errorf("query = %v, want none", q)
		}
	})
	t.Run("all namespaces", func(t *testing.T) {
		f := newFakeAPI(t)
		f.on("GET", "/v1/jobs", reply(5, jobs[:2]))
		runCLI(t, f, runOpts{}, "job", "status", "-namespace", "*").check(t, 0, lines(
			"ID       Namespace  Type            Priority  Status   Submit Date",
			"web      default    service         50        running  2025-03-01T11:00:00Z",
			"nightly  ops        batch/periodic  70        running  2025-03-01T11:00:00Z",
		), "")
		if got := f.only("GET /v1/jobs").Query.Get("namespace"); got != "*" {
			t.Errorf("namespace = %q", got)
		}
	})
	t.Run("none", func(t *testing.T) {
		f := newFakeAPI(t)
		f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{}))
		runCLI(t, f, runOpts{}, "job", "status").check(t, 0, "No running jobs\n", "")
	})
}

// statusFake serves everything `job status web` reads.
func statusFake(t *testing.T, job *state.Job, d *state.Deployment, allocs []*state.Allocation) *fakeAPI {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: job.ID, Namespace: job.Namespace}}))
	f.on("GET", "/v1/job/"+job.ID, reply(5, job))
	f.on("GET", "/v1/job/"+job.ID+"/summary", reply(5, &state.JobSummary{
		JobID: job.ID,
		Summary: map[string]state.TaskGroupSummary{
			"web":   {Running: 2, Failed: 1},
			"cache": {Queued: 1, Starting: 1, Complete: 3, Lost: 1, Unknown: 1},
		},
		Children: &state.JobChildrenSummary{Pending: 1, Running: 2, Dead: 3},
	}))
	f.on("GET", "/v1/job/"+job.ID+"/deployment", reply(5, d))
	stubs := make([]*state.AllocListStub, len(allocs))
	for i, a := range allocs {
		stubs[i] = a.Stub()
	}
	f.on("GET", "/v1/job/"+job.ID+"/allocations", reply(5, stubs))
	return f
}

func TestJobStatusDetail(t *testing.T) {
	job := &state.Job{
		ID: "web", Name: "web", Namespace: "default", NodePool: "default", Type: "service", Priority: 50,
		Datacenters: []string{"dc1", "dc2"}, Status: "running", Version: 3, SubmitTime: submitted,
	}
	d := &state.Deployment{
		ID: "d1d1d1d1-0000-0000-0000-000000000000", Status: "running", StatusDescription: "Deployment is running",
		TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 3, PlacedAllocs: 2, HealthyAllocs: 1}},
	}
	allocs := []*state.Allocation{
		{ID: "a0a0a0a0-0000", NodeID: "n1n1n1n1-0000", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "failed",
			Job: &state.Job{Type: "service", Version: 2}, CreateIndex: 10, CreateTime: testNow.Add(-26 * time.Hour).UnixNano(), ModifyTime: testNow.Add(-90 * time.Minute).UnixNano()},
		{ID: "a1a1a1a1-0000", NodeID: "n1n1n1n1-0000", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "running",
			Job: &state.Job{Type: "service", Version: 3}, CreateIndex: 20, CreateTime: testNow.Add(-3*time.Minute - 12*time.Second).UnixNano(), ModifyTime: testNow.UnixNano()},
	}
	header := []string{
		"ID            = web",
		"Name          = web",
		"Submit Date   = 2025-03-01T11:00:00Z",
		"Type          = service",
		"Priority      = 50",
		"Datacenters   = dc1,dc2",
		"Namespace     = default",
		"Node Pool     = default",
		"Status        = running",
		"Version       = 3",
		"Periodic      = false",
		"Parameterized = false",
	}

	t.Run("full", func(t *testing.T) {
		f := statusFake(t, job, d, allocs)
		want := append(append([]string{}, header...),
			"",
			"Summary",
			"Task Group  Queued  Starting  Running  Failed  Complete  Lost  Unknown",
			"cache       1       1         0        0       3         1     1",
			"web         0       0         2        1       0         0     0",
			"",
			"Latest Deployment",
			"ID          = d1d1d1d1",
			"Status      = running",
			"Description = Deployment is running",
			"",
			"Deployed",
			"Task Group  Desired  Placed  Healthy  Unhealthy",
			"web         3        2       1        0",
			"",
			"Allocations",
			"ID        Node ID   Task Group  Version  Desired  Status   Created    Modified",
			"a1a1a1a1  n1n1n1n1  web         3        run      running  3m12s ago  just now",
			"a0a0a0a0  n1n1n1n1  web         2        run      failed   1d2h ago   1h30m ago",
		)
		runCLI(t, f, runOpts{}, "job", "status", "web").check(t, 0, lines(want...), "")
		if got := f.only("GET /v1/job/web/allocations").Query.Get("all"); got != "" {
			t.Errorf("all = %q without -all-allocs", got)
		}
	})

	t.Run("short", func(t *testing.T) {
		f := statusFake(t, job, d, allocs)
		runCLI(t, f, runOpts{}, "job", "status", "-short", "web").check(t, 0, lines(header...), "")
		if n := len(f.requests("GET /v1/job/web/allocations")); n != 0 {
			t.Error("-short read allocations")
		}
	})

	t.Run("no deployment, no allocations, verbose, all allocs", func(t *testing.T) {
		f := statusFake(t, job, nil, []*state.Allocation{})
		r := runCLI(t, f, runOpts{}, "job", "status", "-verbose", "-all-allocs", "web")
		want := append(append([]string{}, header...),
			"",
			"Summary",
			"Task Group  Queued  Starting  Running  Failed  Complete  Lost  Unknown",
			"cache       1       1         0        0       3         1     1",
			"web         0       0         2        1       0         0     0",
			"",
			"Allocations",
			"No allocations placed",
		)
		r.check(t, 0, lines(want...), "")
		if got := f.only("GET /v1/job/web/allocations").Query.Get("all"); got != "true" {
			t.Errorf("all = %q with -all-allocs", got)
		}
	})

	t.Run("periodic", func(t *testing.T) {
		pj := *job
		pj.ID, pj.Type, pj.Periodic = "nightly", "batch", &state.PeriodicConfig{Enabled: true, Spec: "0 3 * * *"}
		f := statusFake(t, &pj, nil, nil)
		f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{
			{ID: "nightly/periodic-1740711600", ParentID: "nightly", Status: "dead", SubmitTime: testNow.Add(-9 * time.Hour).UnixNano()},
			{ID: "nightly/x", ParentID: "other"},
		}))
		r := runCLI(t, f, runOpts{}, "job", "status", "nightly")
		want := []string{
			"Periodic             = true",
			"Parameterized        = false",
			"Next Periodic Launch = 2025-03-02T03:00:00Z (in 15h0m0s)",
			"",
			"Children Job Summary",
			"Pending  Running  Dead",
			"1        2        3",
			"",
			"Previously Launched Jobs",
			"ID                           Submit Date           Status",
			"nightly/periodic-1740711600  2025-03-01T03:00:00Z  dead",
		}
		if r.code != 0 || !strings.Contains(r.stdout, lines(want...)) {
			t.Fatalf("got %+v", r)
		}

		f = statusFake(t, &pj, nil, nil)
		f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{
			{ID: "nightly/periodic-1740711600", ParentID: "nightly", Status: "dead"},
		}))
		r = runCLI(t, f, runOpts{}, "job", "status", "-json", "nightly")
		var out struct {
			Job      *state.Job
			Summary  *state.JobSummary
			Children []*state.JobListStub
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
			t.Fatalf("-json: %v; %+v", err, r)
		}
		if out.Job.ID != "nightly" || out.Summary == nil || len(out.Children) != 1 || out.Children[0].ParentID != "nightly" {
			t.Errorf("-json = %+v", out)
		}
	})
}

func TestJobPrefixResolution(t *testing.T) {
	cases := []struct {
		name   string
		jobs   []*state.JobListStub
		arg    string
		code   int
		stderr string
		wantID string
	}{
		{name: "exact among several", arg: "web", jobs: []*state.JobListStub{{ID: "web"}, {ID: "web-2"}}, wantID: "web"},
		{name: "unique prefix", arg: "we", jobs: []*state.JobListStub{{ID: "web"}}, wantID: "web"},
		{
			name: "none", arg: "zz", jobs: []*state.JobListStub{}, code: 1,
			stderr: "No job(s) with prefix or ID \"zz\" found\n",
		},
		{
			name: "ambiguous", arg: "we", code: 1,
			jobs: []*state.JobListStub{
				{ID: "web", Type: "service", Priority: 50, Status: "running"},
				{ID: "web-2", Type: "batch", Priority: 40, Status: "pending"},
			},
			stderr: lines(
				"Prefix matched multiple jobs",
				"",
				"ID     Type     Priority  Status   Submit Date",
				"web    service  50        running  <none>",
				"web-2  batch    40        pending  <none>",
			),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("GET", "/v1/jobs", reply(5, tc.jobs))
			f.on("GET", "/v1/job/web", reply(5, &state.Job{ID: "web", Version: 4}))
			r := runCLI(t, f, runOpts{}, "job", "inspect", tc.arg)
			if r.code != tc.code {
				t.Fatalf("code = %d, want %d (%+v)", r.code, tc.code, r)
			}
			if tc.stderr != r.stderr {
				t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, tc.stderr)
			}
			if got := f.only("GET /v1/jobs").Query.Get("prefix"); got != tc.arg {
				t.Errorf("prefix = %q, want %q", got, tc.arg)
			}
			reads := f.requests("GET /v1/job/web")
			if (tc.wantID != "") != (len(reads) == 1) {
				t.Errorf("job reads = %d, want the job read only on a match", len(reads))
			}
		})
	}
}

func TestJobStatusReadErrors(t *testing.T) {
	job := &state.Job{ID: "web", Type: "service"}
	for _, path := range []string{"/v1/job/web", "/v1/job/web/summary", "/v1/job/web/deployment", "/v1/job/web/allocations"} {
		t.Run(path, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("GET", path, fail(http.StatusInternalServerError, "boom"))
			f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "web"}}))
			f.on("GET", "/v1/job/web", reply(5, job))
			f.on("GET", "/v1/job/web/summary", reply(5, &state.JobSummary{}))
			f.on("GET", "/v1/job/web/deployment", reply(5, nil))
			f.on("GET", "/v1/job/web/allocations", reply(5, []*state.Allocation{}))
			r := runCLI(t, f, runOpts{}, "job", "status", "web")
			if r.code != 1 || !strings.Contains(r.stderr, "Unexpected response code: 500 (boom)") {
				t.Fatalf("got %+v", r)
			}
		})
	}
}
