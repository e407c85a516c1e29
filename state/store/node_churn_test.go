package store

import (
	"fmt"
	"slices"
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

// stHeldEvalSetup returns a store holding node n0 and three jobs:
// the service jobs svc and other and the system job sys, with base, the
// time the tests mark the node down at, and nodeEval, which makes a
// node-update evaluation of a job for n0, held until a minute after base
// when held is set.
func stHeldEvalSetup(t *testing.T) (s *Store, base time.Time, svc, sys, other *state.Job, nodeEval func(id string, j *state.Job, held bool) *state.Evaluation) {
	t.Helper()
	s = stStore(t, Config{})
	base = time.Unix(1000, 0)
	stApply(t, s, 1, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n0")})
	svc, sys, other = stJob("svc"), stJob("sys"), stJob("other")
	sys.Type = state.JobTypeSystem
	stRegister(t, s, 10, svc, nil)
	stRegister(t, s, 11, sys, nil)
	stRegister(t, s, 12, other, nil)
	nodeEval = func(id string, j *state.Job, held bool) *state.Evaluation {
		e := stEval(id, j)
		e.TriggeredBy = state.EvalTriggerNodeUpdate
		e.NodeID = "n0"
		if held {
			e.WaitUntil = base.Add(time.Minute)
		}
		return e
	}
	return s, base, svc, sys, other, nodeEval
}

// A node coming back while a job's node-update evaluation is still held
// adds none for that job: the held one finds the job's allocations on the
// returned node as they are (never marked lost, nothing to replace). A
// system job's evaluation is kept: the returned node may need its
// allocation now.
func TestNodeReturnJoinsHeldEvaluation(t *testing.T) {
	s, base, svc, sys, other, nodeEval := stHeldEvalSetup(t)
	stApply(t, s, 20, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "n0", Status: state.NodeStatusDown, UpdatedAt: base.Unix(),
		Evals: []*state.Evaluation{nodeEval("down-svc", svc, true), nodeEval("down-sys", sys, true)}, CoalesceAfter: base.Add(500 * time.Millisecond).UnixNano()})
	resp := stApply(t, s, 21, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "n0", Status: state.NodeStatusReady, UpdatedAt: base.Unix() + 5,
		Evals: []*state.Evaluation{nodeEval("up-svc", svc, false), nodeEval("up-sys", sys, false), nodeEval("up-other", other, false)}})
	// The answer lists what was written (the node endpoints answer with
	// it), not what was proposed.
	if got, _ := resp.(*NodeEvalsResponse); got == nil || !slices.Equal(got.EvalIDs, []string{"up-sys", "up-other"}) {
		t.Errorf("apply answered %#v, want EvalIDs [up-sys up-other]", resp)
	}
	for id, want := range map[string]bool{"up-svc": false, "up-sys": true, "up-other": true} {
		if got := stMust[*state.Evaluation](t)(s.EvalByID(nil, id)) != nil; got != want {
			t.Errorf("evaluation %s stored: %v, want %v", id, got, want)
		}
	}
	if n := stMust[*state.Node](t)(s.NodeByID(nil, "n0")); n.Status != state.NodeStatusReady {
		t.Fatalf("node is %s, want ready", n.Status)
	}
}
