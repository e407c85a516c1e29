package scheduler

import (
	"fmt"
	"testing"

	"github.com/schedhq/sched/state"
)

// BenchmarkServiceSchedule1000On5000 measures the scheduler alone: one
// eval placing 1,000 allocations of a service job (with a dynamic port)
// on 5,000 nodes of 10 classes in 4 datacenters. The planner records the
// plan and commits nothing, so every iteration schedules the same work.
func BenchmarkServiceSchedule1000On5000(b *testing.B) {
	h := benchCluster(b, 5000)
	job := MockJob("web")
	job.TaskGroups[0].Count = 1000
	job = h.UpsertJob(job)
	eval := h.NewEval(job, state.EvalTriggerJobRegister)
	snap, err := h.Store.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	cfg := h.Config()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := &recordingPlanner{}
		if err := NewServiceScheduler(cfg, snap, p).Process(eval); err != nil {
			b.Fatal(err)
		}
		if placed, _, _ := (&PlanResult{NodeAllocation: p.plan.NodeAllocation}).FullCommit(p.plan); !placed {
			b.Fatal("plan not whole")
		}
		n := 0
		for _, list := range p.plan.NodeAllocation {
			n += len(list)
		}
		if n != 1000 {
			b.Fatalf("placed %d, want 1000", n)
		}
	}
}

// BenchmarkSystemScheduleOn5000 measures one eval of a system job placing
// one allocation on each of 5,000 nodes.
func BenchmarkSystemScheduleOn5000(b *testing.B) {
	h := benchCluster(b, 5000)
	job := h.UpsertJob(MockSystemJob("sys"))
	eval := h.NewEval(job, state.EvalTriggerJobRegister)
	snap, err := h.Store.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	cfg := h.Config()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := &recordingPlanner{}
		if err := NewSystemScheduler(cfg, snap, p).Process(eval); err != nil {
			b.Fatal(err)
		}
		if len(p.plan.NodeAllocation) != 5000 {
			b.Fatalf("placed on %d nodes, want 5000", len(p.plan.NodeAllocation))
		}
	}
}

// benchCluster registers n nodes of 10 classes in 4 datacenters.
func benchCluster(b *testing.B, n int) *Harness {
	h := NewHarness(b)
	nodes := make([]*state.Node, 0, n)
	for i := range n {
		node := MockNode(fmt.Sprintf("node-%d", i))
		node.Datacenter = fmt.Sprintf("dc%d", i%4)
		node.NodeClass = fmt.Sprintf("class-%d", i%10)
		node.ComputedClass = ComputeClass(node)
		nodes = append(nodes, node)
	}
	h.UpsertNodes(nodes...)
	return h
}
