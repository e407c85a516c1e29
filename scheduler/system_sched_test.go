package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// systemSetup registers three linux nodes and one windows node and runs a
// system job (or sysbatch) constrained to linux.
func systemSetup(t *testing.T, jobType string) (*schedtest.Harness, []*state.Node) {
	t.Helper()
	h := schedtest.NewHarness(t)
	var nodes []*state.Node
	for i := range 4 {
		n := MockNode(fmt.Sprintf("n%d", i))
		if i == 3 {
			n.Attributes["kernel.name"] = "windows"
			n.ComputedClass = ComputeClass(n)
		}
		nodes = append(nodes, n)
		h.UpsertNodes(n)
	}
	job := MockSystemJob("sys")
	job.Type = jobType
	job.TaskGroups[0].Name = "web"
	job.Constraints = []*state.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	got := step(t, h, "default", "sys", job, state.EvalTriggerJobRegister)
	if *got != (state.DesiredUpdates{Place: 3}) {
		t.Fatalf("first eval %+v, want 3 placements", *got)
	}
	return h, nodes
}

// nodeEval processes an eval of the system job for one node and returns
// its annotations and plan.
func nodeEval(t *testing.T, h *schedtest.Harness, nodeID string) (*state.DesiredUpdates, *Plan) {
	t.Helper()
	job, _ := h.Store.JobByID(nil, "default", "sys")
	e := h.NewEval(job, state.EvalTriggerNodeUpdate).Copy()
	e.NodeID = nodeID
	e.AnnotatePlan = true
	if err := h.Process(BuiltinSchedulers[job.Type], e); err != nil {
		t.Fatal(err)
	}
	p := h.LastPlan()
	du := p.Annotations.DesiredTGUpdates["web"]
	if du == nil {
		du = &state.DesiredUpdates{}
	}
	return du, p
}

func TestSystemOnePerFeasibleNode(t *testing.T) {
	h, nodes := systemSetup(t, state.JobTypeSystem)
	perNode := map[string]int{}
	for _, a := range h.LiveAllocs("default", "sys") {
		perNode[a.NodeID]++
		if a.Name != "sys.web[0]" {
			t.Errorf("name %q, want sys.web[0]", a.Name)
		}
	}
	for i, n := range nodes {
		want := 1
		if i == 3 {
			want = 0
		}
		if perNode[n.ID] != want {
			t.Errorf("node %s has %d allocations, want %d", n.Name, perNode[n.ID], want)
		}
	}
	ev := h.LastEval()
	if len(ev.FailedTGAllocs) != 0 || ev.BlockedEval != "" {
		t.Fatalf("a node that does not match is not a failure: %+v", ev)
	}
}

func TestSystemNodeEvents(t *testing.T) {
	for _, c := range []struct {
		name  string
		event func(h *schedtest.Harness, nodes []*state.Node) string // returns the eval's node
		want  state.DesiredUpdates
		check func(t *testing.T, h *schedtest.Harness, nodes []*state.Node, p *Plan)
	}{
		{"node joins", func(h *schedtest.Harness, _ []*state.Node) string {
			n := MockNode("late")
			h.UpsertNodes(n)
			return n.ID
		}, state.DesiredUpdates{Place: 1}, func(t *testing.T, h *schedtest.Harness, _ []*state.Node, p *Plan) {
			late := MockNode("late").ID
			if len(p.NodeAllocation) != 1 || len(p.NodeAllocation[late]) != 1 || len(p.NodeUpdate) != 0 {
				t.Fatalf("plan touches %v / %v, want one placement on the new node only", p.NodeAllocation, p.NodeUpdate)
			}
		}},
		{"unchanged node", func(h *schedtest.Harness, nodes []*state.Node) string { return nodes[0].ID },
			state.DesiredUpdates{Ignore: 1}, nil},
		{"node no longer matches", func(h *schedtest.Harness, nodes []*state.Node) string {
			n := nodes[1].Copy()
			n.Attributes["kernel.name"] = "windows"
			n.ComputedClass = ComputeClass(n)
			h.UpsertNodes(n)
			return n.ID
		}, state.DesiredUpdates{Stop: 1}, func(t *testing.T, h *schedtest.Harness, nodes []*state.Node, _ *Plan) {
			for _, a := range h.LiveAllocs("default", "sys") {
				if a.NodeID == nodes[1].ID {
					t.Fatal("allocation left on the infeasible node")
				}
			}
		}},
		{"node down", func(h *schedtest.Harness, nodes []*state.Node) string {
			h.SetNodeStatus(nodes[2].ID, state.NodeStatusDown)
			return nodes[2].ID
		}, state.DesiredUpdates{Stop: 1}, func(t *testing.T, h *schedtest.Harness, nodes []*state.Node, p *Plan) {
			stop := p.NodeUpdate[nodes[2].ID]
			if len(stop) != 1 || stop[0].ClientStatus != state.AllocClientStatusLost || len(p.NodeAllocation) != 0 {
				t.Fatalf("plan %+v: want the allocation marked lost and nothing placed", p)
			}
		}},
		{"node without room", func(h *schedtest.Harness, _ []*state.Node) string {
			n := MockNode("tiny")
			n.NodeResources.MemoryMB = 300
			h.UpsertNodes(n)
			return n.ID
		}, state.DesiredUpdates{}, func(t *testing.T, h *schedtest.Harness, _ []*state.Node, _ *Plan) {
			ev := h.LastEval()
			m := ev.FailedTGAllocs["web"]
			if m == nil || m.NodesExhausted != 1 || m.DimensionExhausted[DimensionMemory] != 1 || ev.QueuedAllocations["web"] != 1 || ev.BlockedEval == "" {
				t.Fatalf("eval %+v: want a memory failure, one queued, a blocked eval", ev)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, nodes := systemSetup(t, state.JobTypeSystem)
			du, p := nodeEval(t, h, c.event(h, nodes))
			if *du != c.want {
				t.Errorf("annotations %+v, want %+v", *du, c.want)
			}
			if c.check != nil {
				c.check(t, h, nodes, p)
			}
		})
	}
}

func TestSystemJobChanges(t *testing.T) {
	for _, c := range []struct {
		name    string
		jobType string
		before  func(h *schedtest.Harness)
		change  func(j *state.Job)
		want    state.DesiredUpdates
	}{
		{"destructive update on the same nodes", state.JobTypeSystem, nil,
			func(j *state.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"} },
			state.DesiredUpdates{DestructiveUpdate: 3}},
		{"in-place update", state.JobTypeSystem, nil,
			func(j *state.Job) { j.TaskGroups[0].RestartPolicy.Attempts = 7 },
			state.DesiredUpdates{InPlaceUpdate: 3}},
		{"stop", state.JobTypeSystem, nil, func(j *state.Job) { j.Stop = true }, state.DesiredUpdates{Stop: 3}},
		{"failed system alloc is replaced", state.JobTypeSystem, func(h *schedtest.Harness) {
			clientStatus(h, state.AllocClientStatusFailed, h.LiveAllocs("default", "sys")[0])
		}, nil, state.DesiredUpdates{Place: 1, Ignore: 2}},
		{"sysbatch completion is never re-run", state.JobTypeSysBatch, func(h *schedtest.Harness) {
			clientStatus(h, state.AllocClientStatusComplete, h.LiveAllocs("default", "sys")...)
		}, func(j *state.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"} }, state.DesiredUpdates{Ignore: 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := systemSetup(t, c.jobType)
			before := map[string]string{}
			for _, a := range h.LiveAllocs("default", "sys") {
				before[a.ID] = a.NodeID
			}
			if c.before != nil {
				c.before(h)
			}
			var next *state.Job
			if c.change != nil {
				next, _ = h.Store.JobByID(nil, "default", "sys")
				next = next.Copy()
				c.change(next)
			}
			got := step(t, h, "default", "sys", next, state.EvalTriggerJobRegister)
			if *got != c.want {
				t.Fatalf("annotations %+v, want %+v", *got, c.want)
			}
			if c.want.DestructiveUpdate > 0 {
				for _, a := range h.LiveAllocs("default", "sys") {
					if before[a.PreviousAllocation] != a.NodeID {
						t.Fatalf("replacement %s on %s, want the node of %s", a.ID, a.NodeID, a.PreviousAllocation)
					}
				}
			}
		})
	}
}

// TestSystemRollingUpdateStagger checks a system job's rolling update: with
// max_parallel = 1 and stagger = 30s, each eval replaces one allocation and
// leaves a rolling-update eval due 30s later, until all three are done;
// without an update block everything is replaced at once (TestSystemJobChanges).
func TestSystemRollingUpdateStagger(t *testing.T) {
	h, _ := systemSetup(t, state.JobTypeSystem)
	job, _ := h.Store.JobByID(nil, "default", "sys")
	v1 := job.Copy()
	v1.TaskGroups[0].Update = &state.UpdateStrategy{MaxParallel: 1, Stagger: 30 * time.Second}
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"}

	next, trigger := v1, state.EvalTriggerJobRegister
	for batch := range 3 {
		evals := len(h.CreatedEvals)
		got := step(t, h, "default", "sys", next, trigger)
		if want := (state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 2}); *got != want {
			t.Fatalf("batch %d: annotations %+v, want %+v", batch, *got, want)
		}
		created := h.CreatedEvals[evals:]
		if batch == 2 {
			if len(created) != 0 {
				t.Fatalf("last batch created %d evals, want none", len(created))
			}
			break
		}
		if len(created) != 1 || created[0].TriggeredBy != state.EvalTriggerRollingUpdate ||
			!created[0].WaitUntil.Equal(h.Now.Add(30*time.Second)) {
			t.Fatalf("batch %d: follow-up evals %+v, want one rolling-update eval due in 30s", batch, created)
		}
		next, trigger = nil, state.EvalTriggerRollingUpdate
	}
	for _, a := range h.LiveAllocs("default", "sys") {
		if a.Job.TaskGroups[0].Tasks[0].Env["V"] != "2" {
			t.Fatalf("allocation %s still runs the old version", a.ID)
		}
	}
}
