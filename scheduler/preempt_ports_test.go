package scheduler_test

import (
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// portJob is pjob asking for the static host port.
func portJob(id string, prio, count, cpu, port int) *state.Job {
	j := pjob(id, prio, count, cpu)
	j.TaskGroups[0].Networks = []*state.NetworkResource{{ReservedPorts: []state.Port{{Label: "http", Value: port}}}}
	j.Canonicalize()
	return j
}

// TestPreemptionFreesReservedPort: the node has CPU and memory to spare,
// but the port the high-priority job needs is held by a low-priority
// allocation. Evicting it is the only way to place, so it is evicted
// (and nothing else), and the placement gets the port.
func TestPreemptionFreesReservedPort(t *testing.T) {
	h, _ := preemptHarness(t, true)
	place(t, h, pjob("other", 20, 2, 500))
	place(t, h, portJob("low", 20, 1, 500, 8080)) // 1500 of 3900 MHz taken
	high := portJob("high", 80, 1, 500, 8080)
	e := runEval(t, h, high)
	live := h.LiveAllocs(high.Namespace, high.ID)
	if len(live) != 1 || len(e.FailedTGAllocs) != 0 {
		t.Fatalf("high: %d placed, failed %v; want it placed by evicting the port's holder", len(live), e.FailedTGAllocs)
	}
	if got := live[0].AllocatedResources.Shared.Ports; len(got) != 1 || got[0].Value != 8080 {
		t.Fatalf("placed with ports %+v, want 8080", got)
	}
	if l, o := evicted(t, h, "low"), evicted(t, h, "other"); len(l) != 1 || len(o) != 0 {
		t.Fatalf("evicted %d of low and %d of other, want only the port's holder", len(l), len(o))
	}
}

// TestPreemptionPortHeldByHigherPriority: the port is held by work the
// job may not evict (priority too close), so nothing is evicted, even
// though evicting other allocations would be possible.
func TestPreemptionPortHeldByHigherPriority(t *testing.T) {
	h, _ := preemptHarness(t, true)
	place(t, h, pjob("other", 20, 6, 500))
	place(t, h, portJob("close", 75, 1, 500, 8080)) // 3500 taken
	e := runEval(t, h, portJob("high", 80, 1, 500, 8080))
	if len(e.FailedTGAllocs) == 0 || e.BlockedEval == "" {
		t.Fatalf("eval %+v: want the placement failed and blocked", e)
	}
	if o, c := evicted(t, h, "other"), evicted(t, h, "close"); len(o)+len(c) != 0 {
		t.Fatalf("evicted %d of other and %d of close, want none", len(o), len(c))
	}
}

// TestPreemptionPortAndCPU: the port's holder must go, and it alone does
// not free enough CPU: one more victim is chosen, the holder is not given
// back.
func TestPreemptionPortAndCPU(t *testing.T) {
	h, _ := preemptHarness(t, true)
	place(t, h, pjob("other", 20, 6, 500))
	place(t, h, portJob("low", 30, 1, 300, 8080)) // 3300 of 3900 taken
	high := portJob("high", 80, 1, 1000, 8080)    // 600 free, +300 from low: 100 short
	runEval(t, h, high)
	if got := len(h.LiveAllocs(high.Namespace, high.ID)); got != 1 {
		t.Fatalf("high placed %d, want 1", got)
	}
	if l, o := evicted(t, h, "low"), evicted(t, h, "other"); len(l) != 1 || len(o) != 1 {
		t.Fatalf("evicted %d of low and %d of other, want one each", len(l), len(o))
	}
}

// TestPreemptionFreesDynamicPorts: a node whose dynamic range is used up
// by low-priority work: a job asking for a dynamic port evicts one holder.
func TestPreemptionFreesDynamicPorts(t *testing.T) {
	h, n := preemptHarness(t, true)
	n = n.Copy()
	n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 20000, 20001
	h.UpsertNodes(n)
	low := pjob("low", 20, 2, 500)
	low.TaskGroups[0].Networks = []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "http"}}}}
	place(t, h, low)
	high := pjob("high", 80, 1, 500)
	high.TaskGroups[0].Networks = []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "http"}}}}
	e := runEval(t, h, high)
	if got := len(h.LiveAllocs(high.Namespace, high.ID)); got != 1 {
		t.Fatalf("high placed %d (failed %v), want 1 by evicting a dynamic port's holder", got, e.FailedTGAllocs)
	}
	if got := len(evicted(t, h, "low")); got != 1 {
		t.Fatalf("evicted %d, want 1", got)
	}
}

// TestPlanApplierPreemptionFreesPort: the applier counts a victim's ports
// as freed: a placement taking the victim's port is accepted with the
// eviction and refused without it.
func TestPlanApplierPreemptionFreesPort(t *testing.T) {
	h, n := preemptHarness(t, true)
	place(t, h, portJob("low", 20, 1, 500, 8080))
	victim := h.LiveAllocs(state.DefaultNamespace, "low")[0]
	high := h.UpsertJob(portJob("high", 80, 1, 500, 8080))
	placed := &state.Allocation{ID: "00000000-0000-4000-8000-00000000beef", Namespace: high.Namespace, JobID: high.ID, Job: high,
		TaskGroup: "web", NodeID: n.ID, DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending,
		AllocatedResources: &state.AllocatedResources{
			Tasks:  map[string]*state.AllocatedTaskResources{"web": {CPU: 500, MemoryMB: 256}},
			Shared: state.AllocatedSharedResources{Ports: []state.AllocatedPort{{Label: "http", Value: 8080}}},
		}}
	plan := &Plan{Job: high, NodeAllocation: map[string][]*state.Allocation{n.ID: {placed}}}
	if _, rejected, err := EvaluatePlan(h.Store, nil, plan); err != nil || len(rejected) != 1 {
		t.Fatalf("without the eviction: rejected %v, err %v; want the node refused", rejected, err)
	}
	ev := victim.CopySkipJob()
	ev.DesiredStatus, ev.PreemptedByAllocation = state.AllocDesiredStatusEvict, placed.ID
	plan.NodePreemptions = map[string][]*state.Allocation{n.ID: {ev}}
	if _, rejected, err := EvaluatePlan(h.Store, nil, plan); err != nil || len(rejected) != 0 {
		t.Fatalf("with the eviction: rejected %v, err %v; want the node accepted", rejected, err)
	}
}

// TestPreemptionSystemJobFreesPort: a system job (preemption on by
// default) whose static port a low-priority allocation holds on the node
// evicts it.
func TestPreemptionSystemJobFreesPort(t *testing.T) {
	h, _ := preemptHarness(t, false)
	place(t, h, portJob("low", 20, 1, 500, 9100))
	sys := MockSystemJob("agent")
	sys.Priority = 90
	sys.TaskGroups[0].Networks = []*state.NetworkResource{{ReservedPorts: []state.Port{{Label: "metrics", Value: 9100}}}}
	sys.Canonicalize()
	runEval(t, h, sys)
	if got := len(h.LiveAllocs(sys.Namespace, sys.ID)); got != 1 {
		t.Fatalf("system job placed %d, want 1 by evicting the port's holder", got)
	}
	if got := len(evicted(t, h, "low")); got != 1 {
		t.Fatalf("evicted %d, want 1", got)
	}
}
