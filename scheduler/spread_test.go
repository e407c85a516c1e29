package scheduler_test

import (
	"fmt"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// TestSpreadPlacement checks where spreads put a group's allocations.
func TestSpreadPlacement(t *testing.T) {
	for _, c := range []struct {
		name    string
		dcs     []string
		count   int
		targets []*state.SpreadTarget
		want    map[string]int
	}{
		{"targets 70/30", []string{"dc1", "dc2"}, 10,
			[]*state.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}},
			map[string]int{"dc1": 7, "dc2": 3}},
		{"even over three", []string{"dc1", "dc2", "dc3"}, 9, nil,
			map[string]int{"dc1": 3, "dc2": 3, "dc3": 3}},
		{"target with remainder", []string{"dc1", "dc2", "dc3"}, 8,
			[]*state.SpreadTarget{{Value: "dc1", Percent: 50}},
			map[string]int{"dc1": 4, "dc2": 2, "dc3": 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			for _, dc := range c.dcs {
				for i := range 3 {
					n := MockNode(fmt.Sprintf("%s-%d", dc, i))
					n.Datacenter = dc
					n.ComputedClass = ComputeClass(n)
					h.UpsertNodes(n)
				}
			}
			job := MockJob("web")
			job.TaskGroups[0].Count = c.count
			job.TaskGroups[0].Spreads = []*state.Spread{{Attribute: "${node.datacenter}", Weight: 100, SpreadTarget: c.targets}}
			runEval(t, h, job)
			got := map[string]int{}
			for _, a := range h.LiveAllocs(job.Namespace, job.ID) {
				n, _ := h.Store.NodeByID(nil, a.NodeID)
				got[n.Datacenter]++
			}
			for dc, want := range c.want {
				if got[dc] != want {
					t.Fatalf("allocations per datacenter %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestAffinityPlacement(t *testing.T) {
	for _, c := range []struct {
		name   string
		weight int8
		want   string
	}{{"affinity", 100, "big"}, {"anti-affinity", -100, "small"}} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			for i := range 4 {
				n := MockNode(fmt.Sprintf("n%d", i))
				n.NodeClass = []string{"big", "small"}[i%2]
				n.ComputedClass = ComputeClass(n)
				h.UpsertNodes(n)
			}
			job := MockJob("web")
			job.TaskGroups[0].Count = 6
			job.TaskGroups[0].Affinities = []*state.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "big", Weight: c.weight}}
			runEval(t, h, job)
			for _, a := range h.LiveAllocs(job.Namespace, job.ID) {
				n, _ := h.Store.NodeByID(nil, a.NodeID)
				if n.NodeClass != c.want {
					t.Fatalf("%s placed on a %s node, want only %s", a.Name, n.NodeClass, c.want)
				}
			}
		})
	}
}
