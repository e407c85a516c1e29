package scheduler_test

import (
	"fmt"
	"slices"
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
	c2mNodes(h)
	cfg := h.Config()
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

// c2mNodes registers c2m's 10,000 simulated nodes with h and returns
// them.
func c2mNodes(h *schedtest.Harness) []*state.Node { return bigNodes(h, "c2m", 10000) }

// bigNodes registers count nodes named prefix-00000 upwards, each of
// 16 GHz, 32 GB and 200 GB of disk with nothing reserved, with h and
// returns them.
func bigNodes(h *schedtest.Harness, prefix string, count int) []*state.Node {
	nodes := make([]*state.Node, 0, count)
	for i := range count {
		n := MockNode(fmt.Sprintf("%s-%05d", prefix, i))
		n.NodeResources = &state.NodeResources{CPU: 16000, MemoryMB: 32768, DiskMB: 200000}
		n.ReservedResources = nil
		n.ComputedClass = ComputeClass(n)
		nodes = append(nodes, n)
	}
	h.UpsertNodes(nodes...)
	return nodes
}

// c2mJob is a job of c2m's shape: 1,000 allocations of 20 MHz and 16 MB,
// no ports.
func c2mJob(id string) *state.Job {
	j := MockJob(id)
	j.TaskGroups[0].Count = 1000
	j.TaskGroups[0].Networks = nil
	j.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: 20, MemoryMB: 16}
	return j
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkServiceScheduleC2MRetry measures what a c2m evaluation's plan
// made again costs the scheduler: its job has 1,000 allocations, of which
// the applier refused those on 4 nodes, and the attempt against the
// refreshed state (a fresh snapshot holding the rest) places the refused
// ones again. It reads the job's ~990 allocations and their nodes, the
// ready nodes and their usage, and ranks for a handful of placements, on
// 10,000 nodes holding -allocs earlier allocations. Late in a c2m run,
// when nodes fill and concurrent plans collide, many evaluations make
// such attempts.
func BenchmarkServiceScheduleC2MRetry(b *testing.B) {
	h := schedtest.NewHarness(b)
	c2mNodes(h)
	cfg := h.Config()
	filled := 0
	for _, target := range []int{20_000, 200_000} {
		for ; filled < target; filled += 1000 {
			job := h.UpsertJob(c2mJob(fmt.Sprintf("fill-%d", filled/1000)))
			if err := h.Process(NewServiceScheduler, h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
				b.Fatal(err)
			}
		}
		job := h.UpsertJob(c2mJob(fmt.Sprintf("measured-%d", target)))
		eval := h.NewEval(job, state.EvalTriggerJobRegister)
		// Commit all but the placements on the plan's first 4 nodes (in
		// ID order), as the applier does when they filled.
		refused := 0
		h.PlanFilter = func(p *Plan) *PlanResult {
			ids := make([]string, 0, len(p.NodeAllocation))
			for id := range p.NodeAllocation {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			res := &PlanResult{NodeAllocation: map[string][]*state.Allocation{}}
			for i, id := range ids {
				if i < 4 {
					refused += len(p.NodeAllocation[id])
					continue
				}
				res.NodeAllocation[id] = p.NodeAllocation[id]
			}
			return res
		}
		snap, err := h.Store.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		// One attempt, partly committed through the harness; the
		// refreshed state is what the measured attempts run on.
		if _, _, err := h.SubmitPlan(firstPlan(b, cfg, snap, eval, &RecordingPlanner{})); err != nil {
			b.Fatal(err)
		}
		h.PlanFilter = nil
		if refused == 0 {
			b.Fatal("nothing refused")
		}
		if snap, err = h.Store.Snapshot(); err != nil {
			b.Fatal(err)
		}
		// nodesets=on shares the ready nodes across the attempts, as the
		// leader's workers do (Config.NodeSets).
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("allocs=%dk/nodesets=%s", target/1000, map[bool]string{false: "off", true: "on"}[cached]), func(b *testing.B) {
				cfg := cfg
				if cached {
					cfg.NodeSets = NewNodeSets()
				}
				cpu := processCPU(b)
				benchScheduleWhole(b, cfg, snap, eval, refused)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/attempt")
				b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/attempt")
			})
		}
	}
}

// firstPlan is the plan the service scheduler makes for eval on snap.
func firstPlan(b *testing.B, cfg Config, snap State, eval *state.Evaluation, p *RecordingPlanner) *Plan {
	b.Helper()
	if err := NewServiceScheduler(cfg, snap, p).Process(eval); err != nil {
		b.Fatal(err)
	}
	return p.LastPlan()
}

// BenchmarkServiceScheduleC2MFull places one c2m job (1,000 allocations
// of 20 MHz) on c2m's 10,000 nodes when -full of them have no room left,
// as late in a c2m run under bin-packing: a placement's walk passes a
// few full nodes for each one it ranks, and counts them exhausted.
// nodesets=on shares the ready nodes across evaluations, as the
// leader's workers do (Config.NodeSets).
func BenchmarkServiceScheduleC2MFull(b *testing.B) {
	for _, pct := range []int{0, 25, 50} {
		h := schedtest.NewHarness(b)
		nodes := c2mNodes(h)
		filler := h.UpsertJob(MockJob("filler"))
		var fill []*state.Allocation
		for i, n := range nodes {
			if i%100 >= pct {
				continue
			}
			a := FitAlloc(fmt.Sprintf("00000000-0000-4000-8000-%012d", i), 15990, 16, 0)
			a.NodeID, a.Job, a.JobID, a.Namespace, a.TaskGroup, a.Name = n.ID, filler, filler.ID, filler.Namespace, "web", fmt.Sprintf("filler.web[%d]", i)
			fill = append(fill, a)
		}
		if len(fill) > 0 {
			h.UpsertAllocs(fill...)
		}
		job := h.UpsertJob(c2mJob("measured"))
		eval := h.NewEval(job, state.EvalTriggerJobRegister)
		snap, err := h.Store.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("full=%d%%/nodesets=%s", pct, map[bool]string{false: "off", true: "on"}[cached]), func(b *testing.B) {
				cfg := h.Config()
				if cached {
					cfg.NodeSets = NewNodeSets()
				}
				cpu := processCPU(b)
				benchScheduleWhole(b, cfg, snap, eval, 1000)
				b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N*1000), "cpu-ns/placement")
			})
		}
	}
}
