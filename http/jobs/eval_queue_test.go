package jobs

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// /v1/evaluations and /v1/job/:job_id/evaluations show a blocked
// evaluation's place in the queue (priority first, then age) and what it
// waits for; other evaluations carry none of it.
func TestEvaluationsShowQueuePosition(t *testing.T) {
	h := newHarness(t)
	blocked := func(id, job string, prio int) *state.Evaluation {
		return &state.Evaluation{ID: id, Namespace: "default", JobID: job, Priority: prio, Type: "service",
			Status: state.EvalStatusBlocked, TriggeredBy: state.EvalTriggerQueuedAllocs, QueuedAllocations: map[string]int{"web": 2}}
	}
	quota := blocked("e3", "c", 50)
	quota.QuotaLimitReached = "team"
	h.Apply(store.EvalUpdateRequestType, &store.EvalUpdateRequest{Evals: []*state.Evaluation{
		blocked("e1", "a", 50), blocked("e2", "b", 90), quota,
		{ID: "e4", Namespace: "default", JobID: "d", Priority: 99, Type: "service", Status: state.EvalStatusPending},
	}})
	var list []*state.Evaluation
	h.OK(http.MethodGet, "/v1/evaluations", nil, &list)
	got := map[string]*state.Evaluation{}
	for _, e := range list {
		got[e.ID] = e
	}
	for id, want := range map[string]int{"e2": 1, "e1": 2, "e3": 3, "e4": 0} {
		e := got[id]
		if e == nil || e.QueuePosition != want || (want > 0) != (e.QueueLength == 3) {
			t.Errorf("%s: %+v, want position %d of 3", id, e, want)
		}
	}
	if r := got["e3"].WaitReason; !strings.Contains(r, `quota "team"`) {
		t.Errorf("quota-blocked reason %q", r)
	}
	if r := got["e1"].WaitReason; r != "waiting for capacity: 2 allocation(s) queued" {
		t.Errorf("capacity-blocked reason %q", r)
	}
	var byJob []*state.Evaluation
	h.OK(http.MethodGet, "/v1/job/a/evaluations", nil, &byJob)
	if len(byJob) != 1 || byJob[0].QueuePosition != 2 {
		t.Fatalf("job a's evaluations: %+v", byJob)
	}
	if stored, _ := h.Store.EvalByID(nil, "e1"); stored.QueuePosition != 0 {
		t.Fatalf("the stored evaluation was changed: %+v", stored)
	}
}
