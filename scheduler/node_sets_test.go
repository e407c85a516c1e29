package scheduler_test

import (
	"fmt"
	"maps"
	"testing"
	"unsafe"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// TestNodeSetsFollowNodeWrites: the ready nodes are read once while the
// nodes are unchanged, and read again after any write of a node.
func TestNodeSetsFollowNodeWrites(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(MockNode("a"), MockNode("b"), MockNode("c"))
	job := h.UpsertJob(MockJob("web"))
	sets := NewNodeSets()
	read := func() []*state.Node {
		t.Helper()
		snap, err := h.Store.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		ready, byDC, err := CachedReadyNodes(sets, snap, job)
		if err != nil {
			t.Fatal(err)
		}
		if n := byDC["dc1"]; n != len(ready) {
			t.Fatalf("NodesAvailable %v for %d ready nodes", byDC, len(ready))
		}
		byDC["dc1"] = -1 // each read has its own map
		return ready
	}
	first := read()
	if len(first) != 3 {
		t.Fatalf("%d ready nodes, want 3", len(first))
	}
	// A write that changes no node (an allocation) keeps the answer.
	other := h.UpsertJob(MockJob("other"))
	a := FitAlloc("00000000-0000-4000-8000-000000000001", 100, 100, 0)
	a.NodeID, a.Job, a.JobID, a.Namespace, a.TaskGroup, a.Name = first[0].ID, other, other.ID, other.Namespace, "web", "other.web[0]"
	h.UpsertAllocs(a)
	if again := read(); unsafe.SliceData(again) != unsafe.SliceData(first) {
		t.Fatal("ready nodes read again though no node changed")
	}
	h.SetNodeStatus(first[1].ID, state.NodeStatusDown)
	after := read()
	if len(after) != 2 {
		t.Fatalf("%d ready nodes after one went down, want 2", len(after))
	}
	for _, n := range after {
		if n.ID == first[1].ID {
			t.Fatalf("node %s is down and still ready", n.ID)
		}
	}
	// Another datacenter list is another answer.
	job2 := job.Copy()
	job2.Datacenters = []string{"elsewhere"}
	snap, err := h.Store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if ready, _, err := CachedReadyNodes(sets, snap, job2); err != nil || len(ready) != 0 {
		t.Fatalf("%d ready nodes in another datacenter (%v), want 0", len(ready), err)
	}
}

// TestNodeSetsPlaceAsWithout: an evaluation places its allocations on
// the same nodes with the ready nodes cached (read fresh, then from the
// cache) as without, and a node gone down between two evaluations gets
// nothing from the second.
func TestNodeSetsPlaceAsWithout(t *testing.T) {
	h := schedtest.NewHarness(t)
	for i := range 40 {
		n := MockNode(fmt.Sprintf("n%02d", i))
		if i%3 == 0 {
			n.Datacenter = "dc2"
		}
		h.UpsertNodes(n)
	}
	job := MockJob("web")
	job.Datacenters = []string{"dc1", "dc2"}
	job.TaskGroups[0].Count = 30
	job = h.UpsertJob(job)
	eval := h.NewEval(job, state.EvalTriggerJobRegister)
	snap, err := h.Store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	placed := func(sets *NodeSets) map[string]string {
		t.Helper()
		cfg := h.Config()
		cfg.NodeSets = sets
		p := &RecordingPlanner{}
		if err := NewServiceScheduler(cfg, snap, p).Process(eval.Copy()); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for node, list := range p.LastPlan().NodeAllocation {
			for _, a := range list {
				out[a.Name] = node
			}
		}
		return out
	}
	want := placed(nil)
	if len(want) != 30 {
		t.Fatalf("placed %d, want 30", len(want))
	}
	sets := NewNodeSets()
	for _, run := range []string{"fresh", "cached"} {
		if got := placed(sets); !maps.Equal(got, want) {
			t.Fatalf("%s: placed %v, want %v", run, got, want)
		}
	}

	// The cache is warm; the node holding the most goes down.
	count := map[string]int{}
	for _, node := range want {
		count[node]++
	}
	down := ""
	for node, n := range count {
		if down == "" || n > count[down] || n == count[down] && node < down {
			down = node
		}
	}
	h.SetNodeStatus(down, state.NodeStatusDown)
	job2 := job.Copy()
	job2.ID, job2.Name = "web2", "web2"
	job2 = h.UpsertJob(job2)
	cfg := h.Config()
	cfg.NodeSets = sets
	factory := func(_ Config, st State, p Planner) Scheduler { return NewServiceScheduler(cfg, st, p) }
	if err := h.Process(factory, h.NewEval(job2, state.EvalTriggerJobRegister)); err != nil {
		t.Fatal(err)
	}
	live := h.LiveAllocs(job2.Namespace, job2.ID)
	if len(live) != 30 {
		t.Fatalf("placed %d of web2, want 30", len(live))
	}
	for _, a := range live {
		if a.NodeID == down {
			t.Fatalf("%s placed on %s, which is down", a.Name, down)
		}
	}
}
