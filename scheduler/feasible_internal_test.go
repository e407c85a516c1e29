package scheduler

import (
	"bufio"
	"os"
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
	ctx := newEvalContext(nil, &Plan{}, nil, testEpoch, 1)
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
		{[]string{"**"}, "", true},
		{[]string{"a*"}, "a", true},
		{[]string{"*a*a"}, "a", false},
		{[]string{"*a*a"}, "aa", true},
		{[]string{"a*a"}, "a", false},
	} {
		if got := datacenterMatches(c.patterns, c.dc); got != c.want {
			t.Errorf("datacenterMatches(%q, %q) = %v, want %v", c.patterns, c.dc, got, c.want)
		}
	}
	// Every node of the cluster is matched once per evaluation.
	if n := testing.AllocsPerRun(100, func() { datacenterMatches([]string{"dc1", "eu-*-1"}, "eu-west-1") }); n != 0 {
		t.Errorf("a datacenter match allocates %v times, want none", n)
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
			ctx := newEvalContext(nil, &Plan{}, nil, testEpoch, 1)
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
	ctx := newEvalContext(nil, &Plan{}, nil, testEpoch, 1)
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
