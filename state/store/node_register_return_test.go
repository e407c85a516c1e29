package store

import (
	"slices"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// A node that was marked down, with a job's node-update evaluation held,
// and comes back by registering again (its client restarted, or the
// servers answered its heartbeat 404) gets the treatment of a status
// update back to ready: no second evaluation for the held job, the system
// job's kept, and the answer lists what was written. A register command
// without Returning (written before the flag existed) writes everything
// it carries, as it did when first applied.
func TestNodeReturnByRegisterJoinsHeldEvaluation(t *testing.T) {
	for _, returning := range []bool{true, false} {
		s, base, svc, sys, other, nodeEval := stHeldEvalSetup(t)
		stApply(t, s, 20, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "n0", Status: state.NodeStatusDown, UpdatedAt: base.Unix(),
			Evals: []*state.Evaluation{nodeEval("down-svc", svc, true)}, CoalesceAfter: base.Add(500 * time.Millisecond).UnixNano()})

		n := stNode("n0")
		n.SecretID = ""
		resp := stApply(t, s, 21, NodeUpsertRequestType, &NodeUpsertRequest{Node: n, UpdatedAt: base.Unix() + 5, Returning: returning,
			Evals: []*state.Evaluation{nodeEval("up-svc", svc, false), nodeEval("up-sys", sys, false), nodeEval("up-other", other, false)}})

		want := []string{"up-sys", "up-other"}
		if !returning {
			want = []string{"up-svc", "up-sys", "up-other"}
		}
		if got, _ := resp.(*NodeEvalsResponse); got == nil || !slices.Equal(got.EvalIDs, want) {
			t.Errorf("returning=%v: apply answered %#v, want EvalIDs %v", returning, resp, want)
		}
		perJob := map[string]int{}
		for _, j := range []*state.Job{svc, sys, other} {
			evals := stMust[[]*state.Evaluation](t)(s.EvalsByJob(nil, j.Namespace, j.ID))
			perJob[j.ID] = len(evals)
		}
		wantSvc := 1
		if !returning {
			wantSvc = 2
		}
		if perJob["svc"] != wantSvc || perJob["sys"] != 1 || perJob["other"] != 1 {
			t.Errorf("returning=%v: evaluations per job %v, want svc %d, sys 1, other 1", returning, perJob, wantSvc)
		}
		for _, id := range want {
			if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, id)); e == nil || e.NodeModifyIndex != 21 {
				t.Errorf("returning=%v: evaluation %s: %+v, want stored with NodeModifyIndex 21", returning, id, e)
			}
		}
		if got := stMust[*state.Node](t)(s.NodeByID(nil, "n0")); got.Status != state.NodeStatusReady {
			t.Fatalf("returning=%v: node is %s, want ready", returning, got.Status)
		}
	}
}
