package jobs

import (
	"net/http"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

func TestJobEvaluate(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	reg := h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	failed := h.PlaceAlloc(1, job, apitest.NodeID(1), state.AllocClientStatusFailed)
	running := h.PlaceAlloc(2, job, apitest.NodeID(1), state.AllocClientStatusRunning)

	// The deprecated form: no body, no options.
	var out state.JobEvaluateResponse
	rec := h.OK(http.MethodPost, "/v1/job/web/evaluate", nil, &out)
	e := h.Eval(out.EvalID)
	if e.TriggeredBy != state.EvalTriggerJobEvaluate || e.JobID != "web" || e.ForceReschedule || e.CreateIndex != out.EvalCreateIndex ||
		out.JobModifyIndex != reg.JobModifyIndex || e.JobModifyIndex != reg.JobModifyIndex || apitest.HeaderIndexOf(t, rec) != out.Index {
		t.Errorf("eval %+v, answer %+v", e, out)
	}
	if a := h.Alloc(failed); a.DesiredTransition.ForceReschedule != nil {
		t.Errorf("evaluate without options marked %s", failed)
	}

	h.OK(http.MethodPut, "/v1/job/web/evaluate", map[string]any{"JobID": "web", "EvalOptions": map[string]any{"ForceReschedule": true}}, &out)
	e = h.Eval(out.EvalID)
	if !e.ForceReschedule || e.CreateIndex != out.Index {
		t.Errorf("forced eval %+v", e)
	}
	if a := h.Alloc(failed); a.DesiredTransition.ForceReschedule == nil || !*a.DesiredTransition.ForceReschedule || a.ModifyIndex != out.Index {
		t.Errorf("failed alloc transition %+v at %d, want ForceReschedule at %d", a.DesiredTransition, a.ModifyIndex, out.Index)
	}
	if a := h.Alloc(running); a.DesiredTransition.ForceReschedule != nil {
		t.Errorf("running alloc marked: %+v", a.DesiredTransition)
	}
	// An empty JSON body is the deprecated form too.
	h.OK(http.MethodPost, "/v1/job/web/evaluate", "  \n", nil)

	h.register(apitest.PeriodicJob("nightly"))
	h.register(apitest.ParameterizedJob("render"))
	before := h.Writes()
	h.Fail(http.MethodPost, "/v1/job/web/evaluate", map[string]any{"EvalOptions": map[string]any{}}, http.StatusBadRequest, "JobID: required")
	h.Fail(http.MethodPost, "/v1/job/web/evaluate", map[string]any{"JobID": "api"}, http.StatusBadRequest, "JobID", "api", "web")
	h.Fail(http.MethodPost, "/v1/job/web/evaluate", `{"JobID": 5}`, http.StatusBadRequest, "JobID")
	h.Fail(http.MethodPost, "/v1/job/nope/evaluate", map[string]any{"JobID": "nope"}, http.StatusNotFound, "nope")
	h.Fail(http.MethodPost, "/v1/job/web/evaluate?namespace=other", nil, http.StatusNotFound)
	h.Fail(http.MethodPost, "/v1/job/nightly/evaluate", map[string]any{"JobID": "nightly"}, http.StatusBadRequest, "periodic")
	h.Fail(http.MethodPost, "/v1/job/render/evaluate", nil, http.StatusBadRequest, "parameterized")
	if h.Writes() != before {
		t.Error("refused evaluates wrote")
	}
}

func TestSystemGC(t *testing.T) {
	h, fl := newSchedHarness(t)
	rec := h.OK(http.MethodPut, "/v1/system/gc", nil, nil)
	h.OK(http.MethodPost, "/v1/system/gc", nil, nil)
	if fl.GCs() != 2 || apitest.HeaderIndexOf(t, rec) == 0 {
		t.Errorf("ForceGC calls = %d", fl.GCs())
	}
	h.Fail(http.MethodGet, "/v1/system/gc", nil, http.StatusMethodNotAllowed)
}
