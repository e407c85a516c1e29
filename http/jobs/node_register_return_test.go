package jobs

import (
	"slices"
	"testing"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// A node marked down that comes back by registering again (not by a
// heartbeat or status update) gets no second evaluation for a job whose
// node-update evaluation is held, as a heartbeat bringing it back does;
// the answer lists only the evaluations written.
func TestNodeBackByRegisterJoinsHeldEval(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	job := apitest.TestJob("web")
	h.register(job)
	web := h.Registered(job)
	h.register(apitest.SystemJob("logs"))
	h.PlaceAlloc(1, web, n.ID, state.AllocClientStatusRunning)
	held := &state.Evaluation{
		ID: apitest.SourceID(900), Namespace: web.Namespace, JobID: web.ID, Type: web.Type, Priority: web.Priority,
		TriggeredBy: state.EvalTriggerNodeUpdate, Status: state.EvalStatusPending, NodeID: n.ID,
		WaitUntil: apitest.Now.Add(time.Minute),
	}
	h.Apply(store.NodeUpdateStatusRequestType, &store.NodeUpdateStatusRequest{
		NodeID: n.ID, Status: state.NodeStatusDown, Evals: []*state.Evaluation{held},
	})
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
