package command

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// restartAPI is a fake API with job web (groups web: tasks server and
// sidecar; db: task pg) and its allocations: three running, one failed,
// one running but being stopped.
func restartAPI(t *testing.T) *fakeAPI {
	f := newFakeAPI(t)
	webListed(f)
	f.on("GET", "/v1/job/web", reply(5, &state.Job{ID: "web", Namespace: "prod", Type: "service", TaskGroups: []*state.TaskGroup{
		{Name: "web", Tasks: []*state.Task{{Name: "server"}, {Name: "sidecar"}}},
		{Name: "db", Tasks: []*state.Task{{Name: "pg"}}},
	}}))
	f.on("GET", "/v1/job/web/allocations", reply(5, []*state.AllocListStub{
		{ID: "a3", Namespace: "prod", TaskGroup: "db", DesiredStatus: "run", ClientStatus: "running", CreateIndex: 3},
		{ID: "a1", Namespace: "prod", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "running", CreateIndex: 1},
		{ID: "a2", Namespace: "prod", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "running", CreateIndex: 2},
		{ID: "a4", Namespace: "prod", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "failed", CreateIndex: 4},
		{ID: "a5", Namespace: "prod", TaskGroup: "web", DesiredStatus: "stop", ClientStatus: "running", CreateIndex: 5},
	}))
	for _, id := range []string{"a1", "a2", "a3"} {
		f.on("POST", "/v1/client/allocation/"+id+"/restart", reply(6, struct{}{}))
	}
	return f
}

// restarted lists the restart requests in order, as ID[:task][+all].
func restarted(t *testing.T, f *fakeAPI) string {
	t.Helper()
	var out []string
	for _, r := range f.requests("") {
		if !strings.HasSuffix(r.Path, "/restart") {
			continue
		}
		var body state.AllocRestartRequest
		decodeBody(t, r, &body)
		s := strings.TrimSuffix(strings.TrimPrefix(r.Path, "/v1/client/allocation/"), "/restart")
		if body.TaskName != "" {
			s += ":" + body.TaskName
		}
		if body.AllTasks {
			s += "+all"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestJobRestartInBatches(t *testing.T) {
	f := restartAPI(t)
	r := runCLI(t, f, runOpts{}, "job", "restart", "-batch-size", "50%", "web")
	r.check(t, 0, lines(
		`==> `+ts+`: Restarting 3 allocation(s) of job "web", 2 at a time`,
		`    `+ts+`: Restarting running tasks in allocation "a1" of group "web"`,
		`    `+ts+`: Restarting running tasks in allocation "a2" of group "web"`,
		`    `+ts+`: Restarting running tasks in allocation "a3" of group "db"`,
		`==> `+ts+`: Finished job restart`,
		``,
		`All allocations restarted successfully!`,
	), "")
	if got := restarted(t, f); got != "a1 a2 a3" {
		t.Errorf("restarts %q, want oldest first: a1 a2 a3", got)
	}

	// -task restarts the named task where the group has it; -group
	// narrows the allocations; -all-tasks says so in the request.
	f = restartAPI(t)
	runCLI(t, f, runOpts{}, "job", "restart", "-task", "sidecar", "-task", "pg", "web")
	if got := restarted(t, f); got != "a1:sidecar a2:sidecar a3:pg" {
		t.Errorf("-task restarts %q", got)
	}
	f = restartAPI(t)
	runCLI(t, f, runOpts{}, "job", "restart", "-all-tasks", "-group", "db", "web")
	if got := restarted(t, f); got != "a3+all" {
		t.Errorf("-group db -all-tasks restarts %q", got)
	}
}

// Bad flags and targets are refused before anything is restarted, each
// reason named.
func TestJobRestartBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-batch-size", "0"}, `-batch-size "0": want a number of allocations`},
		{[]string{"-batch-size", "150%"}, `-batch-size "150%": a percentage must be above 0% and at most 100%`},
		{[]string{"-batch-wait", "soon"}, `-batch-wait "soon": want a duration such as 10s, or ask`},
		{[]string{"-on-error", "retry"}, `-on-error "retry": want ask or fail`},
		{[]string{"-task", "server", "-all-tasks"}, "-task and -all-tasks are exclusive"},
		{[]string{"-task", "server", "-reschedule"}, "-task and -reschedule are exclusive"},
		{[]string{"-group", "cache"}, `-group "cache": job "web" has no such task group`},
		{[]string{"-group", "db", "-task", "server"}, `-task "server": no task group restarted has such a task`},
	} {
		f := restartAPI(t)
		r := runCLI(t, f, runOpts{}, append(append([]string{"job", "restart"}, tc.args...), "web")...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 1 and %q", tc.args, r.code, r.stderr, tc.want)
		}
		if got := restarted(t, f); got != "" {
			t.Errorf("%v: restarted %q", tc.args, got)
		}
	}
}

// A failed batch stops the restart with -on-error=fail, asks with the
// default, and is ignored with -yes.
func TestJobRestartOnError(t *testing.T) {
	broken := func() *fakeAPI {
		f := newFakeAPI(t)
		webListed(f)
		f.on("GET", "/v1/job/web", reply(5, &state.Job{ID: "web", Type: "service", TaskGroups: []*state.TaskGroup{{Name: "web", Tasks: []*state.Task{{Name: "server"}}}}}))
		f.on("GET", "/v1/job/web/allocations", reply(5, []*state.AllocListStub{
			{ID: "a1", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "running", CreateIndex: 1},
			{ID: "a2", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "running", CreateIndex: 2},
		}))
		f.on("POST", "/v1/client/allocation/a1/restart", fail(http.StatusInternalServerError, "task not running"))
		f.on("POST", "/v1/client/allocation/a2/restart", reply(6, struct{}{}))
		return f
	}
	f := broken()
	r := runCLI(t, f, runOpts{}, "job", "restart", "-on-error", "fail", "web")
	if r.code != 1 || !strings.Contains(r.stderr, `restarting allocation "a1"`) || !strings.Contains(r.stdout, "-on-error=fail") {
		t.Errorf("-on-error=fail: %+v", r)
	}
	if got := restarted(t, f); got != "a1" {
		t.Errorf("-on-error=fail restarted %q, want a1 only", got)
	}

	f = broken()
	r = runCLI(t, f, runOpts{stdin: "n\n"}, "job", "restart", "web")
	if r.code != 1 || !strings.Contains(r.stdout, "Ignore the errors and go on? [y/N]") || restarted(t, f) != "a1" {
		t.Errorf("answer no: %+v, restarted %q", r, restarted(t, f))
	}
	f = broken()
	r = runCLI(t, f, runOpts{stdin: "y\n"}, "job", "restart", "web")
	if r.code != 1 || restarted(t, f) != "a1 a2" || !strings.Contains(r.stdout, "1 of 2 allocation(s) failed to restart") {
		t.Errorf("answer yes: %+v, restarted %q", r, restarted(t, f))
	}
	f = broken()
	r = runCLI(t, f, runOpts{}, "job", "restart", "-yes", "web")
	if r.code != 1 || restarted(t, f) != "a1 a2" || strings.Contains(r.stdout, "[y/N]") {
		t.Errorf("-yes: %+v, restarted %q", r, restarted(t, f))
	}
}

// -batch-wait ask asks between batches: no stops, a duration becomes the
// wait of the remaining batches.
func TestJobRestartBatchWaitAsk(t *testing.T) {
	f := restartAPI(t)
	r := runCLI(t, f, runOpts{stdin: "n\n"}, "job", "restart", "-batch-wait", "ask", "web")
	if r.code != 1 || restarted(t, f) != "a1" || !strings.Contains(r.stdout, "Proceed with the next batch? [Y/n/<duration>]") {
		t.Errorf("answer no: %+v, restarted %q", r, restarted(t, f))
	}
	f = restartAPI(t)
	r = runCLI(t, f, runOpts{stdin: "maybe\n1ms\n"}, "job", "restart", "-batch-wait", "ask", "web")
	if r.code != 0 || restarted(t, f) != "a1 a2 a3" || !strings.Contains(r.stdout, `Answer y, n or a duration such as 10s (got "maybe")`) ||
		strings.Count(r.stdout, "Proceed with the next batch?") != 2 || strings.Count(r.stdout, "Waiting 1ms before") != 2 {
		t.Errorf("answer a duration: %+v, restarted %q", r, restarted(t, f))
	}
	// -yes does not ask.
	f = restartAPI(t)
	r = runCLI(t, f, runOpts{}, "job", "restart", "-batch-wait", "ask", "-yes", "web")
	if r.code != 0 || restarted(t, f) != "a1 a2 a3" || strings.Contains(r.stdout, "Proceed") {
		t.Errorf("-yes: %+v", r)
	}
}

// -reschedule stops each allocation and waits until its replacement runs.
func TestJobRestartReschedule(t *testing.T) {
	f := newFakeAPI(t)
	webListed(f)
	f.on("GET", "/v1/job/web", reply(5, &state.Job{ID: "web", Type: "service", TaskGroups: []*state.TaskGroup{{Name: "web", Tasks: []*state.Task{{Name: "server"}}}}}))
	f.on("GET", "/v1/job/web/allocations", reply(5, []*state.AllocListStub{
		{ID: "a1", Namespace: "prod", TaskGroup: "web", DesiredStatus: "run", ClientStatus: "running", CreateIndex: 1},
	}))
	f.on("POST", "/v1/allocation/a1/stop", reply(6, state.AllocStopResponse{EvalID: "e1"}))
	f.on("GET", "/v1/allocation/a1",
		reply(6, &state.Allocation{ID: "a1", ClientStatus: "running"}),
		reply(7, &state.Allocation{ID: "a1", ClientStatus: "complete", NextAllocation: "b1"}))
	f.on("GET", "/v1/allocation/b1",
		reply(7, &state.Allocation{ID: "b1", ClientStatus: "pending"}),
		reply(8, &state.Allocation{ID: "b1", ClientStatus: "running"}))
	r := runCLI(t, f, runOpts{}, "job", "restart", "-reschedule", "web")
	r.check(t, 0, lines(
		`==> `+ts+`: Restarting 1 allocation(s) of job "web", 1 at a time`,
		`    `+ts+`: Rescheduling allocation "a1" of group "web"`,
		`    `+ts+`: Allocation "a1" replaced by "b1", waiting for it to run`,
		`==> `+ts+`: Finished job restart`,
		``,
		`All allocations restarted successfully!`,
	), "")
	if n := len(f.requests("GET /v1/allocation/b1")); n != 2 {
		t.Errorf("%d reads of the replacement, want 2", n)
	}
	if q := f.requests("GET /v1/allocation/b1")[1].Query; q.Get("index") != "7" {
		t.Errorf("second read of the replacement does not block from index 7: %v", q)
	}
}
