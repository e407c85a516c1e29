package jobs

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// seedReads registers two jobs in two namespaces with an eval each, two
// allocations and a deployment, and returns the IDs.
func seedReads(h *harness) (evalDefault, evalProd, allocDefault, allocProd, deployment string) {
	h.T.Helper()
	h.CreateNamespace("prod")
	h.RegisterNode(apitest.TestNode(1))
	web := h.register(apitest.TestJob("web"))
	api := apitest.TestJob("api")
	api.Namespace = "prod"
	apiResp := h.register(api)
	webJob, apiJob := h.Registered(apitest.TestJob("web")), h.Registered(api)
	a1 := h.PlaceAlloc(1, webJob, apitest.NodeID(1), state.AllocClientStatusRunning)
	a2 := h.PlaceAlloc(2, apiJob, apitest.NodeID(1), "")
	d := &state.Deployment{ID: "d0000000-0000-4000-8000-000000000001", Namespace: "default", JobID: "web", Status: state.DeploymentStatusRunning,
		JobCreateIndex: webJob.CreateIndex}
	h.Apply(store.DeploymentUpsertRequestType, &store.DeploymentUpsertRequest{Deployments: []*state.Deployment{d}})
	a := h.Alloc(a1).Copy()
	a.DeploymentID = d.ID
	a.TaskStates = map[string]*state.TaskState{"server": {State: "running"}}
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{a}})
	h.Apply(store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: []*state.Allocation{{
		ID: a1, ClientStatus: "running", TaskStates: map[string]*state.TaskState{"server": {State: "running"}}}}})
	return web.EvalID, apiResp.EvalID, a1, a2, d.ID
}

func TestEvaluationReads(t *testing.T) {
	h, _ := newSchedHarness(t)
	evalDefault, evalProd, a1, _, _ := seedReads(h)

	var evals []*state.Evaluation
	rec := h.OK(http.MethodGet, "/v1/evaluations", nil, &evals)
	if len(evals) != 1 || evals[0].ID != evalDefault || apitest.HeaderIndexOf(t, rec) != h.Store.Index(store.TableEvals) {
		t.Fatalf("default namespace evals %v, index %s", evals, rec.Header().Get(schedhttp.HeaderIndex))
	}
	h.OK(http.MethodGet, "/v1/evaluations?namespace=*", nil, &evals)
	if len(evals) != 2 {
		t.Errorf("all namespaces: %d evals", len(evals))
	}
	h.OK(http.MethodGet, "/v1/evaluations?namespace=*&filter="+urlEscape(`Namespace == "prod"`), nil, &evals)
	if len(evals) != 1 || evals[0].ID != evalProd {
		t.Errorf("filtered evals %v", evals)
	}
	h.OK(http.MethodGet, "/v1/evaluations?namespace=*&job=api", nil, &evals)
	if len(evals) != 1 || evals[0].JobID != "api" {
		t.Errorf("job=api evals %v", evals)
	}
	h.OK(http.MethodGet, "/v1/evaluations?namespace=*&status=complete", nil, &evals)
	if len(evals) != 0 {
		t.Errorf("status=complete evals %v", evals)
	}
	rec = h.OK(http.MethodGet, "/v1/evaluations?namespace=*&per_page=1", nil, &evals)
	next := rec.Header().Get(schedhttp.HeaderNextToken)
	var rest []*state.Evaluation
	h.OK(http.MethodGet, "/v1/evaluations?namespace=*&per_page=1&next_token="+next, nil, &rest)
	if len(evals) != 1 || len(rest) != 1 || next == "" || rest[0].ID != next || evals[0].ID == next {
		t.Errorf("pages %v then %v, token %q", evals, rest, next)
	}
	h.OK(http.MethodGet, "/v1/evaluations?prefix="+evalDefault[:30], nil, &evals)
	if len(evals) != 1 {
		t.Errorf("prefix: %d evals", len(evals))
	}

	var e state.Evaluation
	h.OK(http.MethodGet, "/v1/evaluation/"+evalDefault, nil, &e)
	if e.ID != evalDefault || e.JobID != "web" {
		t.Errorf("eval %+v", e)
	}
	h.Fail(http.MethodGet, "/v1/evaluation/nope", nil, http.StatusNotFound, "nope")
	// Another namespace's eval is not found in this one.
	h.Fail(http.MethodGet, "/v1/evaluation/"+evalProd, nil, http.StatusNotFound)
	h.OK(http.MethodGet, "/v1/evaluation/"+evalProd+"?namespace=prod", nil, &e)

	// The store finds an evaluation's allocations through the
	// evaluation's job: none while it is not stored.
	var stubs []*state.AllocListStub
	h.OK(http.MethodGet, "/v1/evaluation/e-"+a1+"/allocations", nil, &stubs)
	if len(stubs) != 0 {
		t.Errorf("allocations of an evaluation not stored %+v", stubs)
	}
	h.Apply(store.EvalUpdateRequestType, &store.EvalUpdateRequest{Evals: []*state.Evaluation{{
		ID: "e-" + a1, Namespace: "default", JobID: "web", Type: "service", Status: state.EvalStatusComplete}}})
	h.OK(http.MethodGet, "/v1/evaluation/e-"+a1+"/allocations", nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != a1 || stubs[0].JobType != "service" {
		t.Errorf("eval allocations %+v", stubs)
	}
	h.OK(http.MethodGet, "/v1/evaluation/unknown/allocations", nil, &stubs)
	if stubs == nil || len(stubs) != 0 {
		t.Errorf("unknown eval's allocations = %#v, want []", stubs)
	}
}

func TestAllocationReads(t *testing.T) {
	h, _ := newSchedHarness(t)
	_, _, a1, a2, _ := seedReads(h)

	var stubs []*state.AllocListStub
	rec := h.OK(http.MethodGet, "/v1/allocations", nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != a1 || apitest.HeaderIndexOf(t, rec) != h.Store.Index(store.TableAllocs) {
		t.Fatalf("default allocs %+v", stubs)
	}
	s := stubs[0]
	if s.JobID != "web" || s.NodeID != apitest.NodeID(1) || s.ClientStatus != "running" || s.TaskStates["server"] == nil ||
		s.AllocatedResources != nil || s.Name != "web.web[1]" {
		t.Errorf("stub %+v", s)
	}
	if raw := rec.Body.String(); strings.Contains(raw, `"Job":`) {
		t.Errorf("list entries carry the job: %s", raw)
	}
	h.OK(http.MethodGet, "/v1/allocations?task_states=false", nil, &stubs)
	if stubs[0].TaskStates != nil {
		t.Errorf("task_states=false kept %v", stubs[0].TaskStates)
	}
	h.OK(http.MethodGet, "/v1/allocations?namespace=*", nil, &stubs)
	if len(stubs) != 2 {
		t.Errorf("all namespaces: %d", len(stubs))
	}
	h.OK(http.MethodGet, "/v1/allocations?namespace=*&filter="+urlEscape(`ClientStatus == "pending"`), nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != a2 {
		t.Errorf("filter %+v", stubs)
	}
	h.OK(http.MethodGet, "/v1/allocations?namespace=*&prefix="+a2[:35], nil, &stubs)
	if len(stubs) != 2 {
		t.Errorf("shared prefix: %d allocations, want both", len(stubs))
	}
	h.OK(http.MethodGet, "/v1/allocations?namespace=*&prefix="+a2, nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != a2 {
		t.Errorf("prefix %+v", stubs)
	}
	h.Fail(http.MethodGet, "/v1/allocations?task_states=maybe", nil, http.StatusBadRequest, "task_states")

	var a state.Allocation
	h.OK(http.MethodGet, "/v1/allocation/"+a1, nil, &a)
	if a.ID != a1 || a.Job == nil || a.Job.ID != "web" {
		t.Errorf("alloc %+v", a)
	}
	h.Fail(http.MethodGet, "/v1/allocation/"+apitest.AllocID(99), nil, http.StatusNotFound, apitest.AllocID(99))
	h.Fail(http.MethodGet, "/v1/allocation/"+a2, nil, http.StatusNotFound)
	h.OK(http.MethodGet, "/v1/allocation/"+a2+"?namespace=prod", nil, &a)
}

func TestDeploymentReads(t *testing.T) {
	h, _ := newSchedHarness(t)
	_, _, a1, _, d := seedReads(h)

	var ds []*state.Deployment
	rec := h.OK(http.MethodGet, "/v1/deployments", nil, &ds)
	if len(ds) != 1 || ds[0].ID != d || apitest.HeaderIndexOf(t, rec) != h.Store.Index(store.TableDeployment) {
		t.Fatalf("deployments %v", ds)
	}
	h.OK(http.MethodGet, "/v1/deployments?namespace=prod", nil, &ds)
	if len(ds) != 0 {
		t.Errorf("prod deployments %v", ds)
	}
	h.OK(http.MethodGet, "/v1/deployments?prefix=d0", nil, &ds)
	if len(ds) != 1 {
		t.Errorf("prefix: %v", ds)
	}
	var got state.Deployment
	h.OK(http.MethodGet, "/v1/deployment/"+d, nil, &got)
	if got.ID != d || got.JobID != "web" {
		t.Errorf("deployment %+v", got)
	}
	h.Fail(http.MethodGet, "/v1/deployment/nope", nil, http.StatusNotFound, "nope")
	h.Fail(http.MethodGet, "/v1/deployment/"+d+"?namespace=prod", nil, http.StatusNotFound)
	var stubs []*state.AllocListStub
	h.OK(http.MethodGet, "/v1/deployment/allocations/"+d, nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != a1 {
		t.Errorf("deployment allocations %+v", stubs)
	}
	h.OK(http.MethodGet, "/v1/deployment/allocations/nope", nil, &stubs)
	if stubs == nil || len(stubs) != 0 {
		t.Errorf("unknown deployment's allocations %#v", stubs)
	}
}

// TestSchedulerReadsBlock checks each list and read blocks until its
// table changes.
func TestSchedulerReadsBlock(t *testing.T) {
	h, _ := newSchedHarness(t)
	evalDefault, _, a1, _, d := seedReads(h)
	for _, target := range []string{
		"/v1/evaluations", "/v1/evaluation/" + evalDefault, "/v1/allocations", "/v1/allocation/" + a1,
		"/v1/deployments", "/v1/deployment/" + d, "/v1/nodes", "/v1/node/" + apitest.NodeID(1), "/v1/node/pools",
		"/v1/evaluation/" + evalDefault + "/allocations", "/v1/deployment/allocations/" + d,
	} {
		rec := h.OK(http.MethodGet, target, nil, nil)
		index := apitest.HeaderIndexOf(t, rec)
		rec = h.OK(http.MethodGet, target+"?index="+strconv.FormatUint(index, 10)+"&wait=10ms", nil, nil)
		if got := apitest.HeaderIndexOf(t, rec); got != index {
			t.Errorf("%s: blocking read with nothing new returned index %d, want %d", target, got, index)
		}
	}
}
