package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// pointReads is a State that cannot list node usage
// (NodeUsageScanner): its scheduler reads each node's usage alone.
type pointReads struct{ State }

// splitScan lists its state's node usage in reverse order and in two
// parts each, as NodeUsageScanner allows.
type splitScan struct{ State }

func (s splitScan) EachNodeUsage(fn func(u *state.NodeUsage)) error {
	var rows []state.NodeUsage
	err := s.State.(NodeUsageScanner).EachNodeUsage(func(u *state.NodeUsage) { rows = append(rows, *u) })
	if err != nil {
		return err
	}
	for i := len(rows) - 1; i >= 0; i-- {
		u := rows[i]
		half := state.NodeUsage{NodeID: u.NodeID, CPU: u.CPU / 2, MemoryMB: u.MemoryMB / 2, DiskMB: u.DiskMB / 2}
		rest := state.NodeUsage{NodeID: u.NodeID, CPU: u.CPU - half.CPU, MemoryMB: u.MemoryMB - half.MemoryMB, DiskMB: u.DiskMB - half.DiskMB}
		fn(&half)
		fn(&rest)
	}
	return nil
}

// TestNodeUsageScanPlansAsPointReads: a job that ranks most of the
// cluster reads every node's usage in one pass, and plans exactly what
// it plans with a read per node: the same node for every allocation, the
// same scores, on nodes whose usage differs (earlier jobs of several
// sizes) and with a stop in the plan; and the same again when the
// usage comes in another order and in parts.
func TestNodeUsageScanPlansAsPointReads(t *testing.T) {
	h := schedtest.NewHarness(t)
	var nodes []*state.Node
	for i := range 200 {
		n := MockNode(fmt.Sprintf("n-%03d", i))
		n.ComputedClass = ComputeClass(n)
		nodes = append(nodes, n)
	}
	h.UpsertNodes(nodes...)
	for i, size := range []int{300, 150, 75} {
		job := MockJob(fmt.Sprintf("fill-%d", i))
		job.TaskGroups[0].Count = 40
		job.TaskGroups[0].Networks = nil
		job.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: size, MemoryMB: size}
		job = h.UpsertJob(job)
		if err := h.Process(NewServiceScheduler, h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
			t.Fatal(err)
		}
	}
	// The measured job had 10 allocations of a smaller size: one stays
	// (its node holds it in the state), the others are replaced.
	job := MockJob("measured")
	job.TaskGroups[0].Count = 10
	job.TaskGroups[0].Networks = nil
	job.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: 50, MemoryMB: 50}
	job = h.UpsertJob(job)
	if err := h.Process(NewServiceScheduler, h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
		t.Fatal(err)
	}
	job = job.Copy()
	job.TaskGroups[0].Count = 150
	job.TaskGroups[0].Tasks[0].Resources = &state.Resources{CPU: 120, MemoryMB: 64}
	job = h.UpsertJob(job)
	eval := h.NewEval(job, state.EvalTriggerJobRegister)
	snap, err := h.Store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	plan := func(st State) (map[string]string, map[string]float64, bool) {
		p := &RecordingPlanner{}
		s := NewServiceScheduler(h.Config(), st, p)
		if err := s.Process(eval); err != nil {
			t.Fatal(err)
		}
		where, scores := map[string]string{}, map[string]float64{}
		for _, list := range p.LastPlan().NodeAllocation {
			for _, a := range list {
				where[a.Name] = a.NodeID
				a.Metrics.Scores.Each(func(node, component string, v float64) bool {
					scores[a.Name+"/"+node+"/"+component] = v
					return true
				})
			}
		}
		return where, scores, UsageScanned(s)
	}
	scanWhere, scanScores, scanned := plan(snap)
	pointWhere, pointScores, pointScanned := plan(pointReads{snap})
	if !scanned || pointScanned {
		t.Fatalf("usage scanned: %v with the snapshot, %v with point reads; want true, false", scanned, pointScanned)
	}
	if len(scanWhere) < 140 {
		t.Fatalf("placed %d allocations, want at least the 140 new ones", len(scanWhere))
	}
	if !maps.Equal(scanWhere, pointWhere) {
		for _, name := range slices.Sorted(maps.Keys(scanWhere)) {
			if scanWhere[name] != pointWhere[name] {
				t.Errorf("%s: on %s with the scan, %s with point reads", name, scanWhere[name], pointWhere[name])
			}
		}
	}
	if len(scanScores) == 0 || !maps.Equal(scanScores, pointScores) {
		t.Errorf("scores differ: %d with the scan, %d with point reads", len(scanScores), len(pointScores))
	}
	splitWhere, splitScores, splitScanned := plan(splitScan{snap})
	if !splitScanned || !maps.Equal(splitWhere, pointWhere) || !maps.Equal(splitScores, pointScores) {
		t.Errorf("usage listed in reverse and in parts: scanned %v, same placements %v, same scores %v",
			splitScanned, maps.Equal(splitWhere, pointWhere), maps.Equal(splitScores, pointScores))
	}
}
