package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// Nodes going down one after another within the window add no
// evaluation for a job that already has a node-update one held: one per
// job per window. An evaluation about to be due, or a command without
// CoalesceAfter, is not joined.
func TestNodeChurnCoalescesEvaluations(t *testing.T) {
	s := stStore(t, Config{})
	base := time.Unix(1000, 0)
	for i := range 4 {
		stApply(t, s, uint64(1+i), NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(fmt.Sprintf("n%d", i))})
	}
	jobs := []*state.Job{stJob("a"), stJob("b")}
	stRegister(t, s, 10, jobs[0], nil)
	stRegister(t, s, 11, jobs[1], nil)
	down := func(index uint64, node string, now time.Time, coalesce bool, jobs ...*state.Job) {
		var evals []*state.Evaluation
		for _, j := range jobs {
			e := stEval(fmt.Sprintf("e-%d-%s", index, j.ID), j)
			e.TriggeredBy = state.EvalTriggerNodeUpdate
			e.WaitUntil = now.Add(2 * time.Second)
			evals = append(evals, e)
		}
		req := &NodeUpdateStatusRequest{NodeID: node, Status: state.NodeStatusDown, UpdatedAt: now.Unix(), Evals: evals}
		if coalesce {
			req.CoalesceAfter = now.Add(500 * time.Millisecond).UnixNano()
		}
		stApply(t, s, index, NodeUpdateStatusRequestType, req)
	}
	count := func(j *state.Job) int {
		return len(stMust[[]*state.Evaluation](t)(s.EvalsByJob(nil, j.Namespace, j.ID)))
	}
	down(20, "n0", base, true, jobs[0])
	down(21, "n1", base.Add(time.Second), true, jobs[0], jobs[1])
	if count(jobs[0]) != 1 || count(jobs[1]) != 1 {
		t.Fatalf("within the window: job a has %d evaluations, b %d; want 1 each", count(jobs[0]), count(jobs[1]))
	}
	// a's held evaluation is due in under the margin: not joined.
	down(22, "n2", base.Add(1800*time.Millisecond), true, jobs[0])
	if count(jobs[0]) != 2 {
		t.Fatalf("near the end of the window: job a has %d evaluations, want 2", count(jobs[0]))
	}
	down(23, "n3", base.Add(time.Second), false, jobs[1])
	if count(jobs[1]) != 2 {
		t.Fatalf("without CoalesceAfter: job b has %d evaluations, want 2", count(jobs[1]))
	}
	if n := stMust[*state.Node](t)(s.NodeByID(nil, "n1")); n.Status != state.NodeStatusDown {
		t.Fatalf("coalescing lost the node's status: %s", n.Status)
	}
}
