package scheduler_test

import (
	"fmt"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

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
			h := schedtest.NewHarness(t)
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
			s := NewServiceScheduler(h.Config(), snap, h)
			if err := s.Process(h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
				t.Fatal(err)
			}
			checks, _, escaped := EvalCounters(s)
			if checks != c.wantChecks {
				t.Errorf("feasibility checks = %d, want %d", checks, c.wantChecks)
			}
			if escaped != c.wantEscaped {
				t.Errorf("escaped = %v, want %v", escaped, c.wantEscaped)
			}
			if got := len(h.LiveAllocs(job.Namespace, job.ID)); got != c.wantPlaced {
				t.Errorf("placed %d, want %d", got, c.wantPlaced)
			}
		})
	}
}
