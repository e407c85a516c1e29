package jobs

import (
	"slices"
	"testing"

	"github.com/schedhq/sched/state"
)

// A node marked down that comes back by registering again (not by a
// heartbeat or status update) gets no second evaluation for a job whose
// node-update evaluation is held, as a heartbeat bringing it back does;
// the answer lists only the evaluations written.
func TestNodeBackByRegisterJoinsHeldEval(t *testing.T) {
	h, n := nodeDownWithHeldEval(t)
	evalsBefore := evalCount(t, h)

	out := h.RegisterNode(n)
	if got := h.Node(n.ID).Status; got != state.NodeStatusReady {
		t.Fatalf("node %s after registering again, want ready", got)
	}
	if jobs := evalsOfAnswer(t, h, out); !slices.Equal(jobs, []string{"logs"}) {
		t.Errorf("answer lists evals of %v, want only logs (web's is held)", jobs)
	}
	if n := evalCount(t, h) - evalsBefore; n != len(out.EvalIDs) {
		t.Errorf("%d evals written, the answer lists %d", n, len(out.EvalIDs))
	}
}
