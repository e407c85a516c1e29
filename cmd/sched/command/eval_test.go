package command

import (
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const (
	e1 = "e1e1e1e1-0000-4000-8000-000000000001"
	e2 = "e1e1e1e1-0000-4000-8000-000000000002"
)

func TestEvalStatusList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/evaluations", reply(9, []*state.Evaluation{
		{ID: e1, Priority: 50, TriggeredBy: "job-register", JobID: "web", Namespace: "default", Status: "complete", CreateIndex: 5},
		{ID: e2, Priority: 70, TriggeredBy: "node-update", JobID: "logs", Namespace: "ops", NodeID: n1, Status: "blocked", CreateIndex: 8,
			FailedTGAllocs: map[string]*state.AllocMetric{"logs": {}}},
	}))
	r := runCLI(t, f, runOpts{}, "eval", "status", "-job", "web")
	r.check(t, 0, lines(
		"ID        Priority  Triggered By  Job ID  Namespace  Node ID   Status    Placement Failures",
		"e1e1e1e1  70        node-update   logs    ops        11111111  blocked   true",
		"e1e1e1e1  50        job-register  web     default    <none>    complete  false",
	), "")
	q := f.only("GET /v1/evaluations").Query
	if q.Get("namespace") != "*" || q.Get("job") != "web" {
		t.Errorf("query %v: want every namespace and the job", q)
	}
}

func TestEvalStatusDetail(t *testing.T) {
	f := newFakeAPI(t)
	ev := &state.Evaluation{
		ID: e1, Priority: 50, Type: "service", TriggeredBy: "job-register", JobID: "web", Namespace: "prod", Status: "complete",
		CreateTime: testNow.Add(-time.Minute).UnixNano(), ModifyTime: testNow.UnixNano(), BlockedEval: e2,
		FailedTGAllocs: map[string]*state.AllocMetric{"web": {NodesEvaluated: 2, CoalescedFailures: 2, NodesExhausted: 2,
			DimensionExhausted: map[string]int{"memory": 2}}},
	}
	f.on("GET", "/v1/evaluations", reply(9, []*state.Evaluation{ev}))
	f.on("GET", "/v1/evaluation/"+e1+"/allocations", reply(9, []*state.AllocListStub{
		{ID: "a1a1a1a1-full", NodeID: n1, TaskGroup: "web", DesiredStatus: "run", ClientStatus: "pending"},
	}))
	r := runCLI(t, f, runOpts{}, "eval", "status", "e1e1e1e1-0000-4000-8000-000000000001")
	r.check(t, 0, lines(
		"ID                 = e1e1e1e1",
		"Create Time        = 2025-03-01T11:59:00Z",
		"Modify Time        = 2025-03-01T12:00:00Z",
		"Status             = complete",
		"Status Description = <none>",
		"Type               = service",
		"TriggeredBy        = job-register",
		"Job ID             = web",
		"Namespace          = prod",
		"Priority           = 50",
		"Placement Failures = true",
		"Blocked Eval       = e1e1e1e1",
		"",
		"Failed Placements",
		`Task Group "web" (failed to place 3 allocation(s)):`,
		"  * Resources exhausted on 2 nodes",
		`  * Dimension "memory" exhausted on 2 nodes`,
		"",
		`Evaluation "e1e1e1e1" waiting for additional capacity to place remainder`,
		"",
		"Placed Allocations",
		"ID        Node ID   Task Group  Desired  Status",
		"a1a1a1a1  11111111  web         run      pending",
	), "")
	if got := f.only("GET /v1/evaluation/" + e1 + "/allocations").Query.Get("namespace"); got != "prod" {
		t.Errorf("allocations read in namespace %q, want the eval's", got)
	}
}

func TestEvalStatusLookupFailures(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/evaluations", reply(9, []*state.Evaluation{}), reply(9, []*state.Evaluation{
		{ID: e1, Priority: 50, TriggeredBy: "job-register", JobID: "web", Namespace: "default", Status: "complete"},
		{ID: e2, Priority: 50, TriggeredBy: "job-register", JobID: "web", Namespace: "default", Status: "complete"},
	}))
	runCLI(t, f, runOpts{}, "eval", "status", "ffff").check(t, 1, "", "No evaluation(s) with prefix or ID \"ffff\" found\n")
	r := runCLI(t, f, runOpts{}, "eval", "status", "e1e1")
	if r.code != 1 || r.stdout != "" || r.stderr[:len("Prefix matched multiple evaluations")] != "Prefix matched multiple evaluations" {
		t.Errorf("ambiguous prefix: %+v", r)
	}
}

func TestAllocStatus(t *testing.T) {
	f := newFakeAPI(t)
	const a1 = "a1a1a1a1-0000-4000-8000-000000000001"
	f.on("GET", "/v1/allocations", reply(9, []*state.AllocListStub{{ID: a1, Namespace: "prod"}}))
	started := testNow.Add(-2 * time.Minute)
	alloc := &state.Allocation{
		ID: a1, EvalID: e1, Name: "web.web[0]", Namespace: "prod", NodeID: n1, NodeName: "node-1", JobID: "web", TaskGroup: "web",
		Job:           &state.Job{ID: "web", Version: 3, TaskGroups: []*state.TaskGroup{{Name: "web", Tasks: []*state.Task{{Name: "server"}, {Name: "sidecar"}}}}},
		DesiredStatus: "run", ClientStatus: "running", CreateTime: testNow.Add(-3 * time.Minute).UnixNano(), ModifyTime: started.UnixNano(),
		RescheduleTracker: &state.RescheduleTracker{Events: []*state.RescheduleEvent{{PrevAllocID: "a0"}}}, PreviousAllocation: "a0a0a0a0-full",
		AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"server": {CPU: 100, MemoryMB: 256}}},
		TaskStates: map[string]*state.TaskState{"server": {
			State: "running", Restarts: 1, StartedAt: started,
			Events: []*state.TaskEvent{
				{Type: "Received", Time: testNow.Add(-3 * time.Minute).UnixNano()},
				{Type: "Terminated", Time: testNow.Add(-150 * time.Second).UnixNano(), ExitCode: 2, Message: "oops"},
				{Type: "Restarting", Time: testNow.Add(-149 * time.Second).UnixNano(), RestartReason: "Restart within policy", StartDelay: int64(15 * time.Second)},
				{Type: "Started", Time: started.UnixNano()},
			},
		}},
	}
	f.on("GET", "/v1/allocation/"+a1, reply(9, alloc))
	r := runCLI(t, f, runOpts{}, "alloc", "status", "a1a1")
	r.check(t, 0, lines(
		"ID                  = a1a1a1a1",
		"Eval ID             = e1e1e1e1",
		"Name                = web.web[0]",
		"Namespace           = prod",
		"Node ID             = 11111111",
		"Node Name           = node-1",
		"Job ID              = web",
		"Job Version         = 3",
		"Client Status       = running",
		"Client Description  = <none>",
		"Desired Status      = run",
		"Desired Description = <none>",
		"Created             = 3m ago",
		"Modified            = 2m ago",
		"Reschedule Attempts = 1",
		"Replacement Of      = a0a0a0a0",
		"",
		`Task "server" is "running"`,
		"CPU      Memory",
		"100 MHz  256 MiB",
		"",
		"Task Events:",
		"Started At     = 2025-03-01T11:58:00Z",
		"Finished At    = N/A",
		"Total Restarts = 1",
		"Last Restart   = N/A",
		"",
		"Recent Events:",
		"Time                  Type        Description",
		"2025-03-01T11:58:00Z  Started     Task started by client",
		"2025-03-01T11:57:31Z  Restarting  Restart within policy - Task restarting in 15s",
		`2025-03-01T11:57:30Z  Terminated  Exit Code: 2, Exit Message: "oops"`,
		"2025-03-01T11:57:00Z  Received    Task received by client",
		"",
		`Task "sidecar" is "pending"`,
	), "")
	q := f.only("GET /v1/allocations").Query
	if q.Get("namespace") != "*" || q.Get("prefix") != "a1a1" {
		t.Errorf("lookup query %v", q)
	}
	if got := f.only("GET /v1/allocation/" + a1).Query.Get("namespace"); got != "prod" {
		t.Errorf("read in namespace %q, want the allocation's", got)
	}

	none := newFakeAPI(t)
	none.on("GET", "/v1/allocations", reply(9, []*state.AllocListStub{}))
	runCLI(t, none, runOpts{env: map[string]string{api.EnvNamespace: "dev"}}, "alloc", "status", "ffff").
		check(t, 1, "", "No allocation(s) with prefix or ID \"ffff\" found\n")
	if got := none.only("GET /v1/allocations").Query.Get("namespace"); got != "dev" {
		t.Errorf("with a namespace set, the lookup used %q", got)
	}
}
