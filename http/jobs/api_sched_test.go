package jobs

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	schedapi "github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

// TestAPIClientAgainstServer drives the scheduler endpoints with the Go
// client over a real listener, so the client's copies of the server's
// types (list entries, plan answers) are checked against what the server
// sends.
func TestAPIClientAgainstServer(t *testing.T) {
	h, fl := newSchedHarness(t)
	ts := httptest.NewServer(h.srv.Handler())
	defer ts.Close()
	c, err := schedapi.NewClient(schedapi.Config{Address: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	n := apitest.TestNode(1)
	n.SecretID = "5ec0e700-0000-4000-8000-000000000001"
	reg, _, err := c.Nodes().Register(ctx, n, nil)
	if err != nil || reg.HeartbeatTTL != apitest.TTL || reg.Index == 0 {
		t.Fatalf("register: %+v, %v", reg, err)
	}
	if got := h.Node(n.ID); !got.SecretMatches(n.SecretID) || got.SecretID != "" {
		t.Errorf("stored secret %q (hash %q), want only the client's hashed", got.SecretID, got.SecretHash)
	}
	if _, _, err := c.Nodes().Heartbeat(ctx, n.ID, nil); err != nil || len(fl.Beats()) != 2 {
		t.Errorf("heartbeat: %v, %v", err, fl.Beats())
	}
	nodes, qm, err := c.Nodes().List(ctx, &schedapi.QueryOptions{Params: map[string]string{"resources": "true"}})
	if err != nil || len(nodes) != 1 || nodes[0].ID != n.ID || nodes[0].NodeResources.CPU != 4000 || nodes[0].Drivers["raw_exec"] == nil || qm.LastIndex == 0 {
		t.Fatalf("nodes: %+v, %v", nodes, err)
	}
	if _, _, err := c.Nodes().ToggleEligibility(ctx, n.ID, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Nodes().UpdateDrain(ctx, n.ID, &state.DrainSpec{Deadline: time.Hour}, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Nodes().UpdateDrain(ctx, n.ID, nil, true, nil); err != nil {
		t.Fatal(err)
	}
	if got := h.Node(n.ID); got.Drain || got.SchedulingEligibility != state.NodeSchedulingEligible {
		t.Errorf("after drain cancel: %+v", got)
	}

	plan, _, err := c.Jobs().Plan(ctx, apitest.TestJob("web"), true, false, nil)
	if err != nil || plan.Annotations.DesiredTGUpdates["web"].Place != 2 || plan.Diff.Type != state.DiffTypeAdded {
		t.Fatalf("plan: %+v, %v", plan, err)
	}
	h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	id := h.PlaceAlloc(1, job, n.ID, "")
	allocs, _, err := c.Nodes().Allocations(ctx, n.ID, nil)
	if err != nil || len(allocs) != 1 || allocs[0].Job == nil {
		t.Fatalf("node allocations: %+v, %v", allocs, err)
	}
	rep, _, err := c.Nodes().UpdateAllocs(ctx, n.ID, []*state.AllocClientUpdate{{ID: id, ClientStatus: "failed"}}, nil)
	if err != nil || len(rep.EvalIDs) != 1 {
		t.Fatalf("report: %+v, %v", rep, err)
	}
	stubs, _, err := c.Allocations().List(ctx, nil)
	if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "failed" || stubs[0].JobType != "service" {
		t.Fatalf("allocations: %+v, %v", stubs, err)
	}
	ev, _, err := c.Jobs().Evaluate(ctx, "web", state.EvalOptions{ForceReschedule: true}, nil)
	if err != nil || ev.EvalID == "" {
		t.Fatalf("evaluate: %+v, %v", ev, err)
	}
	e, _, err := c.Evaluations().Info(ctx, ev.EvalID, nil)
	if err != nil || !e.ForceReschedule {
		t.Fatalf("eval: %+v, %v", e, err)
	}
	evals, _, err := c.Evaluations().List(ctx, &schedapi.QueryOptions{Params: map[string]string{"job": "web"}})
	if err != nil || len(evals) != 3 {
		t.Errorf("evals of web: %d, %v", len(evals), err)
	}
	if _, err := c.NodePools().Register(ctx, &state.NodePool{Name: "gpu"}, nil); err != nil {
		t.Fatal(err)
	}
	if pools, _, err := c.NodePools().List(ctx, nil); err != nil || len(pools) != 3 {
		t.Errorf("pools: %v, %v", pools, err)
	}
	if _, err := c.NodePools().Delete(ctx, "gpu", nil); err != nil {
		t.Error(err)
	}
	if _, err := c.System().GarbageCollect(ctx, nil); err != nil || fl.GCs() != 1 {
		t.Errorf("gc: %v, %d", err, fl.GCs())
	}
	if _, _, err := c.Nodes().Info(ctx, "ffff", nil); !schedapi.IsNotFound(err) {
		t.Errorf("unknown node: %v", err)
	}
}
