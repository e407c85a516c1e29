package scheduler

import (
	"math"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestSpreadShareScore(t *testing.T) {
	for _, c := range []struct {
		desired float64
		used    int
		want    float64
	}{
		{10, 0, 1}, {10, 5, 0.5}, {10, 10, 0}, {10, 15, -0.5}, {10, 40, -1}, {0, 0, -1}, {2.5, 1, 0.6},
	} {
		if got := shareScore(c.desired, c.used); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("shareScore(%v, %d) = %v, want %v", c.desired, c.used, got, c.want)
		}
	}
}

func TestSpreadScoreMath(t *testing.T) {
	node := func(dc, rack string) *state.Node {
		n := MockNode(dc + rack)
		n.Datacenter = dc
		if rack != "" {
			n.Meta["rack"] = rack
		}
		return n
	}
	ready := []*state.Node{node("dc1", "r1"), node("dc2", "r2"), node("dc3", "")}
	for _, c := range []struct {
		name    string
		spreads []*state.Spread
		counts  []map[string]int // per spread
		node    *state.Node
		want    float64
	}{
		{"target under share", []*state.Spread{{Attribute: "${node.datacenter}", Weight: 100,
			SpreadTarget: []*state.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}},
			[]map[string]int{{"dc1": 2}}, ready[0], (7.0 - 2) / 7},
		{"target over share", []*state.Spread{{Attribute: "${node.datacenter}", Weight: 100,
			SpreadTarget: []*state.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}},
			[]map[string]int{{"dc2": 6}}, ready[1], -1},
		{"unlisted values share the rest", []*state.Spread{{Attribute: "${node.datacenter}", Weight: 100,
			SpreadTarget: []*state.SpreadTarget{{Value: "dc1", Percent: 60}}}},
			[]map[string]int{{"dc1": 3, "dc2": 1}}, ready[2], (4.0 - 1) / 4},
		{"no share left", []*state.Spread{{Attribute: "${node.datacenter}", Weight: 100,
			SpreadTarget: []*state.SpreadTarget{{Value: "dc1", Percent: 100}}}},
			nil, ready[1], -1},
		{"even over seen values", []*state.Spread{{Attribute: "${node.datacenter}", Weight: 100}},
			[]map[string]int{{"dc1": 1, "dc3": 4}}, ready[0], (10.0/3 - 1) / (10.0 / 3)},
		{"missing attribute", []*state.Spread{{Attribute: "${meta.rack}", Weight: 100}},
			nil, ready[2], -1},
		{"weighted mean", []*state.Spread{
			{Attribute: "${node.datacenter}", Weight: 75},
			{Attribute: "${meta.rack}", Weight: 25}},
			[]map[string]int{{}, {}}, ready[2], (75*1.0 + 25*-1.0) / 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := MockJob("j")
			job.TaskGroups[0].Spreads = c.spreads
			s := newSpreadScorer(nil, job, job.TaskGroups[0], ready)
			for i, st := range s.spreads {
				st.counts = map[string]int{}
				if i < len(c.counts) {
					st.counts = c.counts[i]
				}
			}
			if got := s.score(c.node); math.Abs(got-c.want) > 1e-9 {
				t.Fatalf("score = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAffinityScoreMath(t *testing.T) {
	n := MockNode("n")
	n.NodeClass = "big"
	for _, c := range []struct {
		name string
		affs []*state.Affinity
		want float64
	}{
		{"match", []*state.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "big", Weight: 50}}, 1},
		{"no match", []*state.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "small", Weight: 50}}, 0},
		{"anti-affinity", []*state.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "big", Weight: -80}}, -1},
		{"normalized", []*state.Affinity{
			{LTarget: "${node.class}", Operand: "=", RTarget: "big", Weight: 60},
			{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "windows", Weight: 20},
			{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: -20}}, (60.0 - 20) / 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := MockJob("j")
			job.Affinities = c.affs
			ctx := newEvalContext(nil, &Plan{}, nil, testEpoch, 1)
			if got := newAffinityScorer(ctx, job, job.TaskGroups[0]).score(n); math.Abs(got-c.want) > 1e-9 {
				t.Fatalf("score = %v, want %v", got, c.want)
			}
		})
	}
	if newAffinityScorer(nil, MockJob("j"), MockJob("j").TaskGroups[0]) != nil {
		t.Fatal("a job without affinities needs no scorer")
	}
}
