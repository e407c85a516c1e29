package jobs

import (
	"net/http"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestJobEvaluate(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.registerNode(testNode(1))
	reg := h.register(testJob("web"))
	job := h.registered(testJob("web"))
	failed := h.placeAlloc(1, job, nodeID(1), state.AllocClientStatusFailed)
	running := h.placeAlloc(2, job, nodeID(1), state.AllocClientStatusRunning)

	// The deprecated form: no body, no options.
	var out state.JobEvaluateResponse
	rec := h.ok(http.MethodPost, "/v1/job/web/evaluate", nil, &out)
	e := h.eval(out.EvalID)
	if e.TriggeredBy != state.EvalTriggerJobEvaluate || e.JobID != "web" || e.ForceReschedule || e.CreateIndex != out.EvalCreateIndex ||
		out.JobModifyIndex != reg.JobModifyIndex || e.JobModifyIndex != reg.JobModifyIndex || headerIndex(t, rec) != out.Index {
		t.Errorf("eval %+v, answer %+v", e, out)
	}
	if a := h.alloc(failed); a.DesiredTransition.ForceReschedule != nil {
		t.Errorf("evaluate without options marked %s", failed)
	}

	h.ok(http.MethodPut, "/v1/job/web/evaluate", map[string]any{"JobID": "web", "EvalOptions": map[string]any{"ForceReschedule": true}}, &out)
	e = h.eval(out.EvalID)
	if !e.ForceReschedule || e.CreateIndex != out.Index {
		t.Errorf("forced eval %+v", e)
	}
	if a := h.alloc(failed); a.DesiredTransition.ForceReschedule == nil || !*a.DesiredTransition.ForceReschedule || a.ModifyIndex != out.Index {
		t.Errorf("failed alloc transition %+v at %d, want ForceReschedule at %d", a.DesiredTransition, a.ModifyIndex, out.Index)
	}
	if a := h.alloc(running); a.DesiredTransition.ForceReschedule != nil {
		t.Errorf("running alloc marked: %+v", a.DesiredTransition)
	}
	// An empty JSON body is the deprecated form too.
	h.ok(http.MethodPost, "/v1/job/web/evaluate", "  \n", nil)

	h.register(periodicJob("nightly"))
	h.register(parameterizedJob("render"))
	before := h.writes()
	h.fail(http.MethodPost, "/v1/job/web/evaluate", map[string]any{"EvalOptions": map[string]any{}}, http.StatusBadRequest, "JobID: required")
	h.fail(http.MethodPost, "/v1/job/web/evaluate", map[string]any{"JobID": "api"}, http.StatusBadRequest, "JobID", "api", "web")
	h.fail(http.MethodPost, "/v1/job/web/evaluate", `{"JobID": 5}`, http.StatusBadRequest, "JobID")
	h.fail(http.MethodPost, "/v1/job/nope/evaluate", map[string]any{"JobID": "nope"}, http.StatusNotFound, "nope")
	h.fail(http.MethodPost, "/v1/job/web/evaluate?namespace=other", nil, http.StatusNotFound)
	h.fail(http.MethodPost, "/v1/job/nightly/evaluate", map[string]any{"JobID": "nightly"}, http.StatusBadRequest, "periodic")
	h.fail(http.MethodPost, "/v1/job/render/evaluate", nil, http.StatusBadRequest, "parameterized")
	if h.writes() != before {
		t.Error("refused evaluates wrote")
	}
}

func TestSystemGC(t *testing.T) {
	h, fl := newSchedHarness(t)
	rec := h.ok(http.MethodPut, "/v1/system/gc", nil, nil)
	h.ok(http.MethodPost, "/v1/system/gc", nil, nil)
	if fl.gcs != 2 || headerIndex(t, rec) == 0 {
		t.Errorf("ForceGC calls = %d", fl.gcs)
	}
	h.fail(http.MethodGet, "/v1/system/gc", nil, http.StatusMethodNotAllowed)
}
