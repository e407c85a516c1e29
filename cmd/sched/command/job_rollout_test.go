package command

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

const ts = "2025-03-01T12:00:00Z"

// webListed answers the job lookup of "web" with one job in namespace
// prod.
func webListed(f *fakeAPI) {
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{{ID: "web", Namespace: "prod", Type: "service"}}))
}

// A job that cannot be placed: job run reports the reasons and exits 2
// as soon as the evaluation is done, without waiting on the deployment
// (which would wait out its progress deadline).
func TestJobRunBlockedExitsAtOnce(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PUT", "/v1/jobs", reply(9, state.JobRegisterResponse{EvalID: "e1", JobModifyIndex: 9}))
	f.on("GET", "/v1/job/web/evaluations", reply(12, []*state.Evaluation{{
		ID: "e1", Status: "complete", TriggeredBy: "job-register", BlockedEval: "b1",
		FailedTGAllocs: map[string]*state.AllocMetric{"cache": {
			NodesEvaluated: 1, ConstraintFiltered: map[string]int{`missing drivers`: 1},
		}},
	}}))
	f.on("GET", "/v1/job/web/allocations", reply(12, []*state.Allocation{}))
	f.on("GET", "/v1/job/web/deployment", reply(12, &state.Deployment{ID: "d1", JobID: "web", JobModifyIndex: 9,
		Status: state.DeploymentStatusRunning, StatusDescription: "Deployment is running"}))
	// Following the deployment would read it again, blocking: that
	// request must not happen.
	f.on("GET", "/v1/deployment/d1", func(w http.ResponseWriter, r *http.Request) {
		t.Error("job run followed the deployment of an unplaceable job")
		<-r.Context().Done()
	})
	r := runCLI(t, f, runOpts{}, "job", "run", writeFile(t, "web.json", `{"ID":"web"}`))
	r.check(t, exitPlacementFailed, lines(
		"Job registration successful",
		"Evaluation ID: e1",
		"Job Modify Index: 9",
		"",
		`==> `+ts+`: Monitoring evaluation "e1"`,
		`    `+ts+`: Evaluation triggered by job "web"`,
		`==> `+ts+`: Evaluation "e1" finished with status "complete" but failed to place all allocations:`,
		`    Task Group "cache" (failed to place 1 allocation(s)):`,
		`      * Constraint "missing drivers": 1 nodes excluded by filter`,
		`    Evaluation "b1" waiting for additional capacity to place remainder`,
		`    Deployment "d1" goes on with what was placed: follow it with 'sched deployment status -monitor d1'`,
	), "")
}

// deployment status -monitor follows the deployment by blocking reads
// until it ends: 0 when it succeeds, 2 when it fails.
func TestDeploymentStatusMonitor(t *testing.T) {
	for _, tc := range []struct {
		end  string
		code int
	}{{state.DeploymentStatusSuccessful, 0}, {state.DeploymentStatusFailed, exitPlacementFailed}} {
		t.Run(tc.end, func(t *testing.T) {
			f := newFakeAPI(t)
			d := func(status, desc string, healthy, index uint64) *state.Deployment {
				return &state.Deployment{ID: "d1d1d1d1-full", Namespace: "prod", JobID: "web", Status: status, StatusDescription: desc,
					ModifyIndex: index, TaskGroups: map[string]*state.DeploymentState{"cache": {DesiredTotal: 2, PlacedAllocs: 2, HealthyAllocs: int(healthy)}}}
			}
			f.on("GET", "/v1/deployments", reply(7, []*state.Deployment{d("running", "Deployment is running", 0, 7)}))
			f.on("GET", "/v1/deployment/d1d1d1d1-full",
				reply(8, d("running", "Deployment is running", 1, 8)),
				reply(9, d("running", "Deployment is running", 1, 8)), // no change: printed once
				reply(10, d(tc.end, "done", 2, 10)))
			r := runCLI(t, f, runOpts{}, "deployment", "status", "-monitor", "d1d1")
			table := func(healthy string) []string {
				return []string{
					"Task Group  Auto Revert  Desired  Placed  Healthy  Unhealthy  Progress Deadline",
					"cache       false        2        2       " + healthy + "        0          <none>",
				}
			}
			want := []string{"", `==> ` + ts + `: Monitoring deployment "d1d1d1d1"`, "  " + ts + ": running (Deployment is running)"}
			want = append(want, table("0")...)
			want = append(want, "  "+ts+": running (Deployment is running)")
			want = append(want, table("1")...)
			want = append(want, "  "+ts+": "+tc.end+" (done)")
			want = append(want, table("2")...)
			r.check(t, tc.code, lines(want...), "")
			var indexes []string
			for _, req := range f.requests("GET /v1/deployment/d1d1d1d1-full") {
				indexes = append(indexes, req.Query.Get("index")+"/"+req.Query.Get("namespace"))
			}
			if got := strings.Join(indexes, " "); got != "7/prod 8/prod 9/prod" {
				t.Errorf("blocking reads (index/namespace) = %s, want 7/prod 8/prod 9/prod", got)
			}
		})
	}
}

// job promote promotes the job's latest deployment, follows the
// evaluation, then the rollout to its end.
func TestJobPromoteFollowsRollout(t *testing.T) {
	f := newFakeAPI(t)
	webListed(f)
	running := &state.Deployment{ID: "d1", Namespace: "prod", JobID: "web", Status: "running", ModifyIndex: 20,
		TaskGroups: map[string]*state.DeploymentState{"cache": {DesiredTotal: 2, DesiredCanaries: 1, HealthyAllocs: 1, PlacedAllocs: 1}}}
	f.on("GET", "/v1/job/web/deployment", reply(20, running))
	f.on("PUT", "/v1/deployment/promote/d1", reply(21, state.DeploymentUpdateResponse{EvalID: "e2", DeploymentModifyIndex: 21}))
	f.on("GET", "/v1/job/web/evaluations", reply(22, []*state.Evaluation{{ID: "e2", Status: "complete", TriggeredBy: "deployment-watcher", DeploymentID: "d1"}}))
	f.on("GET", "/v1/job/web/allocations", reply(22, []*state.Allocation{}))
	promoted := *running
	promoted.TaskGroups = map[string]*state.DeploymentState{"cache": {DesiredTotal: 2, DesiredCanaries: 1, Promoted: true, HealthyAllocs: 1, PlacedAllocs: 2}}
	done := promoted
	done.Status, done.StatusDescription, done.ModifyIndex = "successful", "Deployment completed successfully", 30
	f.on("GET", "/v1/deployment/d1", reply(22, &promoted), reply(30, &done))
	r := runCLI(t, f, runOpts{}, "job", "promote", "-group", "cache", "web")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{`Deployment "d1" promoted`, `Monitoring evaluation "e2"`, `Monitoring deployment "d1"`,
		"successful (Deployment completed successfully)"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	var body struct {
		All    bool
		Groups []string
	}
	decodeBody(t, f.only("PUT /v1/deployment/promote/d1"), &body)
	if body.All || len(body.Groups) != 1 || body.Groups[0] != "cache" {
		t.Errorf("promote body %+v, want group cache only", body)
	}

	// A job whose latest deployment is over has nothing to promote.
	g := newFakeAPI(t)
	webListed(g)
	g.on("GET", "/v1/job/web/deployment", reply(20, &state.Deployment{ID: "d1", JobID: "web", Status: "successful"}))
	r = runCLI(t, g, runOpts{}, "job", "promote", "web")
	r.check(t, 1, "", "Error: the latest deployment of job \"web\" (d1) is successful: there is nothing to promote\n")
	if len(g.requests("PUT /v1/deployment/promote/d1")) != 0 {
		t.Error("promoted a finished deployment")
	}
}

// deployment promote -detach returns after the write, as before.
func TestDeploymentPromoteDetach(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/deployments", reply(7, []*state.Deployment{{ID: "d1", JobID: "web", Status: "running"}}))
	f.on("PUT", "/v1/deployment/promote/d1", reply(21, state.DeploymentUpdateResponse{EvalID: "e2"}))
	runCLI(t, f, runOpts{}, "deployment", "promote", "-detach", "d1").check(t, 0, lines(`Deployment "d1" promoted`, "Evaluation ID: e2"), "")
}

func TestJobAllocsAndDeployments(t *testing.T) {
	f := newFakeAPI(t)
	webListed(f)
	f.on("GET", "/v1/job/web/allocations", reply(9, []*state.AllocListStub{
		{ID: "a1a1a1a1-full", NodeID: "n1n1n1n1-full", TaskGroup: "cache", JobType: "service", JobVersion: 1, DesiredStatus: "run", ClientStatus: "running", CreateIndex: 5,
			CreateTime: testNow.Add(-5 * time.Minute).UnixNano(), ModifyTime: testNow.Add(-time.Minute).UnixNano()},
	}))
	f.on("GET", "/v1/job/web/deployments", reply(9, []*state.Deployment{
		{ID: "d1d1d1d1-old", JobID: "web", JobVersion: 0, Status: "successful", StatusDescription: "done", CreateIndex: 3},
		{ID: "d2d2d2d2-new", JobID: "web", JobVersion: 1, Status: "running", StatusDescription: "going", CreateIndex: 8},
	}))
	r := runCLI(t, f, runOpts{}, "job", "allocs", "-all", "web")
	r.check(t, 0, lines(
		"ID        Node ID   Task Group  Version  Desired  Status   Created  Modified",
		"a1a1a1a1  n1n1n1n1  cache       1        run      running  5m ago   1m ago",
	), "")
	if q := f.only("GET /v1/job/web/allocations").Query; q.Get("all") != "true" || q.Get("namespace") != "prod" {
		t.Errorf("allocations query %v", q)
	}
	r = runCLI(t, f, runOpts{}, "job", "deployments", "web")
	r.check(t, 0, lines(
		"ID        Job ID  Job Version  Status      Description",
		"d2d2d2d2  web     1            running     going",
		"d1d1d1d1  web     0            successful  done",
	), "")
}

// job eval creates an evaluation with the options given; -detach prints
// its ID and returns.
func TestJobEval(t *testing.T) {
	f := newFakeAPI(t)
	webListed(f)
	f.on("PUT", "/v1/job/web/evaluate", reply(11, state.JobEvaluateResponse{EvalID: "e9e9e9e9-full"}))
	runCLI(t, f, runOpts{}, "job", "eval", "-force-reschedule", "-detach", "web").check(t, 0, "Created eval ID: \"e9e9e9e9\"\n", "")
	var body struct {
		JobID       string
		EvalOptions state.EvalOptions
	}
	req := f.only("PUT /v1/job/web/evaluate")
	decodeBody(t, req, &body)
	if body.JobID != "web" || !body.EvalOptions.ForceReschedule || req.Query.Get("namespace") != "prod" {
		t.Errorf("evaluate body %+v query %v", body, req.Query)
	}
}

// alloc logs -job reads the log of the job's newest running allocation.
func TestAllocLogsByJob(t *testing.T) {
	f := newFakeAPI(t)
	webListed(f)
	f.on("GET", "/v1/job/web/allocations", reply(9, []*state.AllocListStub{
		{ID: "old-running", Namespace: "prod", TaskGroup: "web", ClientStatus: "running", CreateIndex: 3},
		{ID: "new-running", Namespace: "prod", TaskGroup: "web", ClientStatus: "running", CreateIndex: 5},
		{ID: "newest-failed", Namespace: "prod", TaskGroup: "web", ClientStatus: "failed", CreateIndex: 7},
	}))
	f.on("GET", "/v1/client/fs/logs/new-running", logReply(3, "hi\n"))
	runCLI(t, f, runOpts{}, "alloc", "logs", "-job", "web", "server").check(t, 0, "hi\n", "")
	if q := f.only("GET /v1/client/fs/logs/new-running").Query; q.Get("task") != "server" || q.Get("namespace") != "prod" {
		t.Errorf("logs query %v", q)
	}
}

// job status -children=false leaves the children of periodic and
// parameterized jobs out of the list.
func TestJobStatusListWithoutChildren(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/jobs", reply(5, []*state.JobListStub{
		{ID: "cron", Type: "batch", Periodic: true, Priority: 50, Status: "running"},
		{ID: "cron/periodic-1", ParentID: "cron", Type: "batch", Priority: 50, Status: "dead"},
		{ID: "web", Type: "service", Priority: 50, Status: "running"},
	}))
	r := runCLI(t, f, runOpts{}, "job", "status", "-children=false", "-t", "{{range .}}{{.ID}} {{end}}")
	r.check(t, 0, "cron web ", "")
	r = runCLI(t, f, runOpts{}, "job", "status", "-t", "{{range .}}{{.ID}} {{end}}")
	r.check(t, 0, "cron cron/periodic-1 web ", "")
}
