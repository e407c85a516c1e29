package jobs

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// evalCount is how many evaluations the store holds.
func evalCount(t *testing.T, h *harness) int {
	t.Helper()
	evals, err := h.Store.Evals(nil, "*", "")
	if err != nil {
		t.Fatal(err)
	}
	return len(evals)
}

// evalsOfAnswer reads back every evaluation a node write's answer lists
// (failing on one that does not exist) and returns their job IDs.
func evalsOfAnswer(t *testing.T, h *harness, out *state.NodeUpdateResponse) []string {
	t.Helper()
	jobs := []string{}
	for _, id := range out.EvalIDs {
		e := h.Eval(id)
		if e.CreateIndex != out.EvalCreateIndex {
			t.Errorf("eval %s created at %d, the answer says %d", id, e.CreateIndex, out.EvalCreateIndex)
		}
		jobs = append(jobs, e.JobID)
	}
	if len(out.EvalIDs) == 0 && out.EvalCreateIndex != 0 {
		t.Errorf("no evals, EvalCreateIndex %d", out.EvalCreateIndex)
	}
	return jobs
}

// nodeDownWithHeldEval returns a harness holding a node that runs an
// allocation of the service job "web" and was then marked down, as the
// leader's heartbeat timer marks it: web's node-update evaluation is held
// until a minute from now, and the system job "logs" has none yet.
func nodeDownWithHeldEval(t *testing.T) (*harness, *state.Node) {
	t.Helper()
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
	return h, n
}

// A node that comes back ready while a job's node-update evaluation is
// held (its nodes went down within the churn window) gets no second one
// for that job: the store drops it in the apply. The answer lists only
// the evaluations that were written, by heartbeat and by status update.
func TestNodeBackReadyListsOnlyAppliedEvals(t *testing.T) {
	for _, via := range []string{"heartbeat", "status"} {
		t.Run(via, func(t *testing.T) {
			h, n := nodeDownWithHeldEval(t)
			evalsBefore := evalCount(t, h)

			var out state.NodeUpdateResponse
			if via == "heartbeat" {
				h.OK(http.MethodPut, "/v1/node/"+n.ID+"/heartbeat", nil, &out)
			} else {
				h.OK(http.MethodPut, "/v1/node/"+n.ID+"/status", map[string]any{"Status": "ready"}, &out)
			}
			if got := h.Node(n.ID).Status; got != state.NodeStatusReady {
				t.Fatalf("node %s after the %s, want ready", got, via)
			}
			if jobs := evalsOfAnswer(t, h, &out); !slices.Equal(jobs, []string{"logs"}) {
				t.Errorf("answer lists evals of %v, want only logs (web's is held)", jobs)
			}
			if n := evalCount(t, h) - evalsBefore; n != len(out.EvalIDs) {
				t.Errorf("%d evals written, the answer lists %d", n, len(out.EvalIDs))
			}
		})
	}
}

// The other node writes write every evaluation they propose: their
// answers' IDs all read back.
func TestNodeWritesListEvalsThatExist(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.register(apitest.SystemJob("logs"))
	n := apitest.TestNode(1)
	reg := h.RegisterNode(n)
	if jobs := evalsOfAnswer(t, h, reg); !slices.Equal(jobs, []string{"logs"}) {
		t.Errorf("register: evals of %v, want logs", jobs)
	}
	url := "/v1/node/" + n.ID
	var out state.NodeUpdateResponse
	h.OK(http.MethodPut, url+"/eligibility", map[string]any{"Eligibility": "ineligible"}, &out)
	if jobs := evalsOfAnswer(t, h, &out); len(jobs) != 0 {
		t.Errorf("ineligible: evals of %v, want none", jobs)
	}
	h.OK(http.MethodPut, url+"/eligibility", map[string]any{"Eligibility": "eligible"}, &out)
	if jobs := evalsOfAnswer(t, h, &out); !slices.Equal(jobs, []string{"logs"}) {
		t.Errorf("eligible: evals of %v, want logs", jobs)
	}
	h.OK(http.MethodPut, url+"/drain", map[string]any{"DrainSpec": map[string]any{"Deadline": 0}}, &out)
	if jobs := evalsOfAnswer(t, h, &out); len(jobs) != 0 {
		t.Errorf("drain: evals of %v, want none", jobs)
	}
	h.OK(http.MethodPut, url+"/drain", map[string]any{"DrainSpec": nil, "MarkEligible": true}, &out)
	if jobs := evalsOfAnswer(t, h, &out); !slices.Equal(jobs, []string{"logs"}) {
		t.Errorf("drain cancelled, eligible: evals of %v, want logs", jobs)
	}
	h.OK(http.MethodPut, url+"/status", map[string]any{"Status": "down"}, &out)
	evalsOfAnswer(t, h, &out)
}
