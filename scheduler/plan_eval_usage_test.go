package scheduler_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// randomGrant is a portless grant of up to 1.4 GHz, 2.25 GiB and 1 GiB.
func randomGrant(rng *rand.Rand) *state.AllocatedResources {
	return &state.AllocatedResources{
		Tasks:  map[string]*state.AllocatedTaskResources{"web": {CPU: 100 * (1 + rng.IntN(14)), MemoryMB: 128 * (1 + rng.IntN(18))}},
		Shared: state.AllocatedSharedResources{DiskMB: 256 * rng.IntN(5)},
	}
}

// TestEvaluateNodePlanFromUsageAgrees: for plans without host ports, the
// check from the store's node usage (overlay and stops included) decides
// exactly as the walk over every allocation of the node does.
func TestEvaluateNodePlanFromUsageAgrees(t *testing.T) {
	decided := map[bool]int{}
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		h := schedtest.NewHarness(t)
		node, other := MockNode("n1"), MockNode("n2")
		h.UpsertNodes(node, other)
		job := h.UpsertJob(MockBatchJob(fmt.Sprintf("j%d", seed)))
		alloc := func(id, nodeID string) *state.Allocation {
			return &state.Allocation{ID: id, Namespace: job.Namespace, JobID: job.ID, Job: job, TaskGroup: "web",
				Name: job.ID + ".web[0]", NodeID: nodeID, EvalID: "e", DesiredStatus: state.AllocDesiredStatusRun,
				ClientStatus: state.AllocClientStatusPending, AllocatedResources: randomGrant(rng)}
		}
		var existing []*state.Allocation
		for i := range rng.IntN(8) {
			nodeID := node.ID
			if rng.IntN(4) == 0 {
				nodeID = other.ID
			}
			existing = append(existing, alloc(fmt.Sprintf("e%d", i), nodeID))
		}
		if len(existing) > 0 {
			h.UpsertAllocs(existing...)
			for _, a := range existing {
				if rng.IntN(4) == 0 {
					h.ClientUpdate(&state.Allocation{ID: a.ID, ClientStatus: state.AllocClientStatusComplete})
				}
			}
		}
		pick := func() string {
			if len(existing) > 0 && rng.IntN(2) == 0 {
				return existing[rng.IntN(len(existing))].ID
			}
			return fmt.Sprintf("p%d", rng.IntN(1000))
		}
		plan := &Plan{NodeUpdate: map[string][]*state.Allocation{}, NodeAllocation: map[string][]*state.Allocation{}}
		for range 1 + rng.IntN(3) {
			plan.NodeAllocation[node.ID] = append(plan.NodeAllocation[node.ID], alloc(pick(), node.ID))
		}
		for range rng.IntN(3) {
			stop := alloc(pick(), node.ID)
			stop.DesiredStatus = state.AllocDesiredStatusStop
			plan.NodeUpdate[node.ID] = append(plan.NodeUpdate[node.ID], stop)
		}
		overlay := map[string][]*state.Allocation{}
		for range rng.IntN(3) {
			o := alloc(pick(), node.ID)
			if rng.IntN(2) == 0 {
				o.DesiredStatus = state.AllocDesiredStatusStop
			}
			overlay[node.ID] = append(overlay[node.ID], o)
		}
		snap, err := h.Store.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		fit, reason, err := EvaluateNodePlan(snap, overlay, plan, node.ID)
		if err != nil {
			t.Fatal(err)
		}
		over := map[string]*state.Allocation{}
		for _, a := range overlay[node.ID] {
			over[a.ID] = a
		}
		leaving := map[string]bool{}
		for _, a := range append(plan.NodeUpdate[node.ID], plan.NodeAllocation[node.ID]...) {
			leaving[a.ID] = true
		}
		wantFit, wantReason, err := FitWithPorts(snap, over, leaving, plan.NodeAllocation[node.ID], node)
		if err != nil {
			t.Fatal(err)
		}
		if fit != wantFit || reason != wantReason {
			t.Fatalf("seed %d: from usage %v %q, from the allocations %v %q", seed, fit, reason, wantFit, wantReason)
		}
		decided[fit]++
	}
	if decided[true] == 0 || decided[false] == 0 {
		t.Fatalf("the cases never exercised both outcomes: %v", decided)
	}
}

// A canceled scheduler stops before its next placement and submits
// nothing: a leader that steps down or shuts down is not held up by a
// large evaluation.
func TestProcessStopsWhenCanceled(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(MockNode("n1"), MockNode("n2"))
	job := h.UpsertJob(MockBatchJob("big"))
	eval := h.NewEval(job, state.EvalTriggerJobRegister)
	snap, err := h.Store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.Config()
	canceled := make(chan struct{})
	close(canceled)
	cfg.Cancel = canceled
	if err := NewBatchScheduler(cfg, snap, h).Process(eval); !errors.Is(err, ErrCanceled) {
		t.Fatalf("Process with Cancel closed: %v, want ErrCanceled", err)
	}
	if len(h.Plans) != 0 {
		t.Errorf("%d plans submitted after the cancel", len(h.Plans))
	}
}
