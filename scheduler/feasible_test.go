package scheduler

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// operandNode is the node testdata/operands.txt is written against.
func operandNode() *state.Node {
	n := MockNode("web-1")
	n.NodeClass = "large"
	n.Attributes = map[string]string{
		"kernel.name":     "linux",
		"cpu.numcores":    "8",
		"os.version":      "22.04",
		"nomad.version":   "1.7.3",
		"app.version":     "1.3.0-beta.1",
		"unique.hostname": "web-1",
	}
	n.Meta = map[string]string{"rack": "r1", "zone": "us-east-1a", "tags": "a, b,c"}
	return n
}

func TestFeasibleOperands(t *testing.T) {
	f, err := os.Open("testdata/operands.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	node := operandNode()
	ctx := newEvalContext(nil, &Plan{}, nil, harnessEpoch, 1)
	seen := map[string]map[bool]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "|")
		if len(fields) != 4 {
			t.Fatalf("operands.txt:%d: want 4 fields, got %d", line, len(fields))
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		want, err := strconv.ParseBool(fields[3])
		if err != nil {
			t.Fatalf("operands.txt:%d: %v", line, err)
		}
		op, l, r := fields[0], fields[1], fields[2]
		if got := ctx.meets(op, l, r, node); got != want {
			t.Errorf("operands.txt:%d: %s %s %s = %v, want %v", line, l, op, r, got, want)
		}
		if seen[op] == nil {
			seen[op] = map[bool]bool{}
		}
		seen[op][want] = true
	}
	// Every operand is covered both ways.
	for _, op := range []string{"=", "==", "is", "!=", "not", "<", "<=", ">", ">=", "regexp",
		"set_contains", "set_contains_all", "set_contains_any", "version", "semver", "is_set", "is_not_set"} {
		if !seen[op][true] || !seen[op][false] {
			t.Errorf("operand %q lacks a true or a false case", op)
		}
	}
	if len(ctx.regexps) != 2 {
		t.Errorf("compiled %d regexps, want 2 (each pattern once)", len(ctx.regexps))
	}
}

func TestFeasibleDatacenterGlobs(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		dc       string
		want     bool
	}{
		{nil, "dc1", true},
		{[]string{"*"}, "anything", true},
		{[]string{"dc1"}, "dc1", true},
		{[]string{"dc1"}, "dc10", false},
		{[]string{"dc*"}, "dc10", true},
		{[]string{"dc*"}, "eu-dc1", false},
		{[]string{"*-1"}, "eu-west-1", true},
		{[]string{"*-1"}, "eu-west-2", false},
		{[]string{"eu-*-1"}, "eu-west-1", true},
		{[]string{"eu-*-1"}, "us-west-1", false},
		{[]string{"a*b*c"}, "abc", true},
		{[]string{"a*b*c"}, "aXbYc", true},
		{[]string{"a*b*c"}, "acb", false},
		{[]string{"us-*", "dc2"}, "dc2", true},
	} {
		if got := datacenterMatches(c.patterns, c.dc); got != c.want {
			t.Errorf("datacenterMatches(%q, %q) = %v, want %v", c.patterns, c.dc, got, c.want)
		}
	}
}

func TestFeasibleReadyNodes(t *testing.T) {
	h := NewHarness(t)
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
		nodes, byDC, inPool, err := readyNodes(h.Store, job)
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
	}
}

func TestFeasibleDrivers(t *testing.T) {
	for _, c := range []struct {
		name    string
		drivers map[string]*state.DriverInfo
		want    bool
	}{
		{"healthy", map[string]*state.DriverInfo{"mock": {Detected: true, Healthy: true}}, true},
		{"unhealthy", map[string]*state.DriverInfo{"mock": {Detected: true, Healthy: false}}, false},
		{"undetected", map[string]*state.DriverInfo{"mock": {Detected: false, Healthy: true}}, false},
		{"absent", map[string]*state.DriverInfo{"docker": {Detected: true, Healthy: true}}, false},
		{"none", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := MockNode("n")
			n.Drivers = c.drivers
			n.ComputedClass = ComputeClass(n)
			job := MockJob("j")
			ctx := newEvalContext(nil, &Plan{}, nil, harnessEpoch, 1)
			g := newGroupChecker(ctx, job, job.TaskGroups[0])
			m := &state.AllocMetric{}
			if got := g.feasible(n, m); got != c.want {
				t.Fatalf("feasible = %v, want %v", got, c.want)
			}
			if !c.want && m.ConstraintFiltered[reasonMissingDrivers] != 1 {
				t.Fatalf("ConstraintFiltered = %v, want %q counted", m.ConstraintFiltered, reasonMissingDrivers)
			}
		})
	}
}

func TestFeasibleFilterMetrics(t *testing.T) {
	n := MockNode("n")
	n.NodeClass = "small"
	n.ComputedClass = ComputeClass(n)
	job := MockJob("j")
	job.Constraints = []*state.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "windows"}}
	ctx := newEvalContext(nil, &Plan{}, nil, harnessEpoch, 1)
	g := newGroupChecker(ctx, job, job.TaskGroups[0])
	m := &state.AllocMetric{}
	for range 3 {
		g.feasible(n, m)
	}
	if m.NodesFiltered != 3 || m.ClassFiltered["small"] != 3 || m.ConstraintFiltered["${attr.kernel.name} = windows"] != 3 {
		t.Fatalf("metric = %+v, want 3 filtered by class small and the constraint", m)
	}
	if ctx.checks != 1 {
		t.Fatalf("checks = %d, want 1: the class's answer is remembered", ctx.checks)
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
			h := NewHarness(t)
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
