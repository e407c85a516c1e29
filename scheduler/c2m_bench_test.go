package scheduler_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// BenchmarkServiceScheduleC2M places one job of sched-bench's c2m shape
// (1,000 allocations of 20 MHz and 16 MB, no ports) on c2m's 10,000
// simulated nodes, of which -allocs are already placed by earlier jobs:
// the scheduler's share of a c2m placement, without Raft or the applier.
// Each of its placements ranks ceil(log2(10,000)) = 14 nodes, so one
// evaluation reads the usage of nearly every node once.
func BenchmarkServiceScheduleC2M(b *testing.B) {
	h := schedtest.NewHarness(b)
	nodes := make([]*state.Node, 0, 10000)
	for i := range 10000 {
		n := MockNode(fmt.Sprintf("c2m-%05d", i))
		n.NodeResources = &state.NodeResources{CPU: 16000, MemoryMB: 32768, DiskMB: 200000}
		n.ReservedResources = nil
		n.ComputedClass = ComputeClass(n)
		nodes = append(nodes, n)
	}
	h.UpsertNodes(nodes...)
	cfg := h.Config()
	c2mJob := func(id string) *state.Job {
		j := MockJob(id)
		j.TaskGroups[0].Count = 1000
		j.TaskGroups[0].Networks = nil
		j.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: 20, MemoryMB: 16}
		return j
	}
	filled := 0
	for _, target := range []int{20_000} {
		for ; filled < target; filled += 1000 {
			job := h.UpsertJob(c2mJob(fmt.Sprintf("fill-%d", filled/1000)))
			if err := h.Process(NewServiceScheduler, h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("allocs=%dk", target/1000), func(b *testing.B) {
			job := h.UpsertJob(c2mJob("measured"))
			eval := h.NewEval(job, state.EvalTriggerJobRegister)
			snap, err := h.Store.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			cpu := processCPU(b)
			benchScheduleWhole(b, cfg, snap, eval, 1000)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/placement")
			// The process's CPU time (the collector's included), which a
			// loaded machine moves less than the elapsed time.
			b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N*1000), "cpu-ns/placement")
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
