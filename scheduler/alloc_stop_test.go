package scheduler_test

import (
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// An operator's stop (POST /v1/allocation/:id/stop) marks the allocation
// to migrate and evaluates its job with TriggeredBy alloc-stop: that
// evaluation replaces it wherever it runs. A stale mark does not move an
// allocation off a node that is not draining in any other evaluation.
func TestAllocStopMigratesOnlyInItsEvaluation(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(MockNode("n0"), MockNode("n1"))
	job := MockJob("web")
	job.TaskGroups[0].Count = 2
	if got := step(t, h, "default", "web", job, state.EvalTriggerJobRegister); got.Place != 2 {
		t.Fatalf("placed %d", got.Place)
	}
	live := h.LiveAllocs("default", "web")
	yes := true
	marked := live[0].CopySkipJob()
	marked.DesiredTransition.Migrate = &yes
	h.UpsertAllocs(marked)

	if got := step(t, h, "default", "web", nil, state.EvalTriggerJobRegister); *got != (state.DesiredUpdates{Ignore: 2}) {
		t.Errorf("another trigger: %+v, want the marked allocation left alone", *got)
	}
	if got := step(t, h, "default", "web", nil, state.EvalTriggerAllocStop); *got != (state.DesiredUpdates{Migrate: 1, Ignore: 1}) {
		t.Errorf("alloc-stop: %+v, want one migration", *got)
	}
	now := h.LiveAllocs("default", "web")
	if len(now) != 2 {
		t.Fatalf("%d live allocations after the stop, want 2", len(now))
	}
	var replaced bool
	for _, a := range now {
		if a.ID == marked.ID {
			t.Errorf("the stopped allocation %s is still live", a.ID)
		}
		replaced = replaced || a.PreviousAllocation == marked.ID
	}
	if !replaced {
		t.Error("no replacement names the stopped allocation as its previous one")
	}
}
