package scheduler_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

func TestFeasibleReadyNodes(t *testing.T) {
	h := schedtest.NewHarness(t)
	type nodeCase struct {
		name, dc, pool, status, elig string
		drain                        bool
	}
	cases := []nodeCase{
		{"ok-dc1", "dc1", "default", "ready", "eligible", false},
		{"ok-dc2", "dc2", "default", "ready", "eligible", false},
		{"other-dc", "eu1", "default", "ready", "eligible", false},
		{"gpu-pool", "dc1", "gpu", "ready", "eligible", false},
		{"down", "dc1", "default", "down", "eligible", false},
		{"init", "dc1", "default", "initializing", "eligible", false},
		{"ineligible", "dc1", "default", "ready", "ineligible", false},
	}
	for _, c := range cases {
		n := MockNode(c.name)
		n.Datacenter, n.NodePool, n.Status, n.SchedulingEligibility, n.Drain = c.dc, c.pool, c.status, c.elig, c.drain
		h.UpsertNodes(n)
	}
	drained := MockNode("draining")
	drained.Drain = true
	h.UpsertNodes(drained)
	for _, c := range []struct {
		pool        string
		dcs         []string
		wantNames   []string
		wantInPool  int
		wantByDCLen int
	}{
		{"default", []string{"dc*"}, []string{"ok-dc1", "ok-dc2"}, 7, 2},
		{"default", []string{"dc1"}, []string{"ok-dc1"}, 7, 1},
		{"gpu", []string{"*"}, []string{"gpu-pool"}, 1, 1},
		{"all", []string{"dc1"}, []string{"gpu-pool", "ok-dc1"}, 8, 1},
		{"", []string{"*"}, []string{"ok-dc1", "ok-dc2", "other-dc"}, 7, 3},
	} {
		job := MockJob("j")
		job.NodePool, job.Datacenters = c.pool, c.dcs
		nodes, byDC, inPool, total, err := ReadyNodes(h.Store, job)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		slices.Sort(names)
		if strings.Join(names, ",") != strings.Join(c.wantNames, ",") {
			t.Errorf("pool %s dcs %v: ready %v, want %v", c.pool, c.dcs, names, c.wantNames)
		}
		if inPool != c.wantInPool || len(byDC) != c.wantByDCLen {
			t.Errorf("pool %s dcs %v: in pool %d, by DC %v; want %d and %d DCs", c.pool, c.dcs, inPool, byDC, c.wantInPool, c.wantByDCLen)
		}
		if total != len(cases)+1 {
			t.Errorf("pool %s dcs %v: %d nodes in all, want %d", c.pool, c.dcs, total, len(cases)+1)
		}
	}
}

func TestFeasibleDistinct(t *testing.T) {
	hosts := &state.Constraint{Operand: state.ConstraintDistinctHosts}
	rack := func(limit string) *state.Constraint {
		return &state.Constraint{LTarget: "${meta.rack}", Operand: state.ConstraintDistinctProperty, RTarget: limit}
	}
	for _, c := range []struct {
		name       string
		jobCons    []*state.Constraint
		groupCons  []*state.Constraint
		groups     int
		count      int
		wantPlaced int
		wantFilter string
	}{
		{"distinct_hosts job", []*state.Constraint{hosts}, nil, 1, 5, 4, "distinct_hosts"},
		{"distinct_hosts job across groups", []*state.Constraint{hosts}, nil, 2, 3, 4, "distinct_hosts"},
		{"distinct_hosts group", nil, []*state.Constraint{hosts}, 2, 4, 8, ""},
		{"distinct_property default limit", nil, []*state.Constraint{rack("")}, 1, 3, 2, "${meta.rack} distinct_property"},
		{"distinct_property limit 2", nil, []*state.Constraint{rack("2")}, 1, 5, 4, "${meta.rack} distinct_property 2"},
		{"distinct_property job across groups", []*state.Constraint{rack("1")}, nil, 2, 2, 2, "${meta.rack} distinct_property 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			for i := range 4 {
				n := MockNode(fmt.Sprintf("n%d", i))
				n.Meta["rack"] = fmt.Sprintf("r%d", i%2)
				n.ComputedClass = ComputeClass(n)
				h.UpsertNodes(n)
			}
			job := MockJob("web")
			job.Constraints = c.jobCons
			job.TaskGroups[0].Count = c.count
			job.TaskGroups[0].Tasks[0].Resources.CPU = 100
			job.TaskGroups[0].Constraints = c.groupCons
			for g := 1; g < c.groups; g++ {
				tg := job.TaskGroups[0].Copy()
				tg.Name = fmt.Sprintf("g%d", g)
				job.TaskGroups = append(job.TaskGroups, tg)
			}
			ev := runEval(t, h, job)
			live := h.LiveAllocs(job.Namespace, job.ID)
			if len(live) != c.wantPlaced {
				t.Fatalf("placed %d, want %d", len(live), c.wantPlaced)
			}
			if c.wantFilter == "" {
				if len(ev.FailedTGAllocs) != 0 {
					t.Fatalf("unexpected failures %v", ev.FailedTGAllocs)
				}
				return
			}
			filtered := 0
			for _, m := range ev.FailedTGAllocs {
				filtered += m.ConstraintFiltered[c.wantFilter]
			}
			if filtered == 0 {
				t.Fatalf("failures %+v: want nodes filtered by %q", ev.FailedTGAllocs, c.wantFilter)
			}
		})
	}
}
