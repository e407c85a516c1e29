package scheduler

import (
	"fmt"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestComputeClass(t *testing.T) {
	base := MockNode("a")
	for _, c := range []struct {
		name   string
		change func(n *state.Node)
		same   bool
	}{
		{"other name and ID", func(n *state.Node) { n.ID, n.Name = "other", "other" }, true},
		{"unique attribute", func(n *state.Node) { n.Attributes["unique.hostname"] = "zzz" }, true},
		{"unique meta", func(n *state.Node) { n.Meta["unique.serial"] = "42" }, true},
		{"status and eligibility", func(n *state.Node) { n.Status, n.SchedulingEligibility = "down", "ineligible" }, true},
		{"resources", func(n *state.Node) { n.NodeResources.CPU = 1 }, true},
		{"unhealthy driver added", func(n *state.Node) { n.Drivers["docker"] = &state.DriverInfo{Detected: true} }, true},
		{"datacenter", func(n *state.Node) { n.Datacenter = "dc2" }, false},
		{"pool", func(n *state.Node) { n.NodePool = "gpu" }, false},
		{"class", func(n *state.Node) { n.NodeClass = "big" }, false},
		{"attribute", func(n *state.Node) { n.Attributes["kernel.name"] = "darwin" }, false},
		{"meta", func(n *state.Node) { n.Meta["rack"] = "r2" }, false},
		{"driver unhealthy", func(n *state.Node) { n.Drivers["mock"] = &state.DriverInfo{Detected: true} }, false},
		// Keys and values must not run together: "ab"+"c" vs "a"+"bc".
		{"key/value boundary", func(n *state.Node) { n.Meta["ab"] = "c" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := base.Copy()
			c.change(n)
			if got := ComputeClass(n) == ComputeClass(base); got != c.same {
				t.Fatalf("same class = %v, want %v", got, c.same)
			}
		})
	}
	a, b := base.Copy(), base.Copy()
	a.Meta = map[string]string{"a": "bc"}
	b.Meta = map[string]string{"ab": "c"}
	if ComputeClass(a) == ComputeClass(b) {
		t.Fatal("meta a=bc and ab=c must not share a class")
	}
}

// TestClassMemoization proves that feasibility runs once per computed
// class, not once per node, unless a constraint looks at a unique
// property.
func TestClassMemoization(t *testing.T) {
	for _, c := range []struct {
		name        string
		constraints []*state.Constraint
		wantChecks  int
		wantEscaped bool
		wantPlaced  int
	}{
		// 2 classes: a job-level check each, and a group-level check for
		// r1, the class that passed the job's.
		{"by class", []*state.Constraint{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1"}}, 3, false, 10},
		// The escaped constraint runs per node on top of the memoized ones.
		{"escaped", []*state.Constraint{{LTarget: "${attr.unique.hostname}", Operand: "regexp", RTarget: "^n-1"}}, 4, true, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness(t)
			for i := range 100 {
				n := MockNode(fmt.Sprintf("n-%d", i))
				n.Meta["rack"] = []string{"r1", "r2"}[i%2]
				n.ComputedClass = ComputeClass(n)
				h.UpsertNodes(n)
			}
			job := MockJob("web")
			job.Constraints = c.constraints
			job = h.UpsertJob(job)
			snap, _ := h.Store.Snapshot()
			s := NewServiceScheduler(h.Config(), snap, h).(*genericScheduler)
			if err := s.Process(h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
				t.Fatal(err)
			}
			if s.ctx.checks != c.wantChecks {
				t.Errorf("feasibility checks = %d, want %d", s.ctx.checks, c.wantChecks)
			}
			if s.ctx.elig.escaped != c.wantEscaped {
				t.Errorf("escaped = %v, want %v", s.ctx.elig.escaped, c.wantEscaped)
			}
			if got := len(h.LiveAllocs(job.Namespace, job.ID)); got != c.wantPlaced {
				t.Errorf("placed %d, want %d", got, c.wantPlaced)
			}
		})
	}
}
