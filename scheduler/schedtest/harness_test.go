package schedtest_test

import (
	"testing"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// TestLogAppliesAtConsecutiveIndexes: each command takes the next index,
// a refused one too, as a committed log entry does.
func TestLogAppliesAtConsecutiveIndexes(t *testing.T) {
	l := schedtest.NewLog(t)
	start := l.Index()
	_, i1, err := l.Apply(store.NodeRegisterRequestType, &store.NodeRegisterRequest{Node: scheduler.MockNode("n0")})
	if err != nil || i1 != start+1 {
		t.Fatalf("first command at %d (%v), want %d", i1, err, start+1)
	}
	_, i2, err := l.Apply(store.NodeUpdateStatusRequestType, &store.NodeUpdateStatusRequest{NodeID: "missing", Status: state.NodeStatusDown})
	if err == nil || i2 != start+2 || l.Index() != i2 {
		t.Fatalf("refused command at %d (%v), index %d: want an error at %d", i2, err, l.Index(), start+2)
	}
}

// TestHarnessCommitsPlans: a scheduler run on the harness commits its
// plan and closes its eval, and the same run on a second harness makes
// the same IDs and placements.
func TestHarnessCommitsPlans(t *testing.T) {
	run := func() map[string]string {
		h := schedtest.NewHarness(t)
		h.UpsertNodes(scheduler.MockNode("n0"), scheduler.MockNode("n1"))
		job := scheduler.MockJob("web")
		job.TaskGroups[0].Count = 3
		job = h.UpsertJob(job)
		if err := h.Process(scheduler.BuiltinSchedulers[job.Type], h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
			t.Fatal(err)
		}
		if ev := h.LastEval(); ev.Status != state.EvalStatusComplete || len(h.Plans) != 1 {
			t.Fatalf("eval %s after %d plans, want complete after 1", ev.Status, len(h.Plans))
		}
		placed := map[string]string{}
		for _, a := range h.LiveAllocs(job.Namespace, job.ID) {
			placed[a.ID] = a.NodeID
		}
		if len(placed) != 3 {
			t.Fatalf("%d live allocations, want 3", len(placed))
		}
		return placed
	}
	first, second := run(), run()
	for id, node := range first {
		if second[id] != node {
			t.Fatalf("allocation %s on %s, then on %q: runs differ", id, node, second[id])
		}
	}
}

func TestIDsAreSequential(t *testing.T) {
	var ids schedtest.IDs
	if a, b := ids.Next(), ids.Next(); a != "00000000-0000-4000-8000-000000000001" || b != "00000000-0000-4000-8000-000000000002" {
		t.Fatalf("ids %s, %s", a, b)
	}
}
