package scheduler_test

import (
	"strings"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// quotaHarness is a harness with quota "team" (memory 1024 MB) named by
// namespace "prod", and nodes with room for far more.
func quotaHarness(t *testing.T, limit state.QuotaResources) *schedtest.Harness {
	h := schedtest.NewHarness(t)
	n0, n1 := MockNode("n0"), MockNode("n1")
	n0.ID, n1.ID = "n0", "n1"
	h.UpsertNodes(n0, n1)
	h.Apply(store.QuotaUpsertRequestType, &store.QuotaUpsertRequest{Quotas: []*state.QuotaSpec{{
		Name: "team", Limits: []*state.QuotaLimit{{Region: state.DefaultRegion, RegionLimit: &limit}},
	}}})
	h.Apply(store.NamespaceUpsertRequestType, &store.NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod", Quota: "team"}}})
	return h
}

// A job whose placements would take its namespace over quota places what
// fits; the rest is blocked with the quota's name and a reason naming the
// dimension, and placed once the quota's usage falls.
func TestQuotaLimitsPlacements(t *testing.T) {
	h := quotaHarness(t, state.QuotaResources{MemoryMB: 1024})
	job := MockJob("web") // 10 × 256 MB
	job.Namespace = "prod"
	job = h.UpsertJob(job)
	if err := h.Process(NewServiceScheduler, h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
		t.Fatal(err)
	}
	if live := h.LiveAllocs("prod", "web"); len(live) != 4 {
		t.Fatalf("%d allocations placed under a 1024 MB quota of 256 MB ones, want 4", len(live))
	}
	done := h.LastEval()
	m := done.FailedTGAllocs["web"]
	if m == nil || len(m.QuotaExhausted) != 1 || m.QuotaExhausted[0] != "quota exceeded: memory 1024/1024 MB" {
		t.Fatalf("failed placements' metric: %+v", m)
	}
	if m.CoalescedFailures != 5 || done.QueuedAllocations["web"] != 6 {
		t.Errorf("coalesced %d, queued %d; want 5 and 6", m.CoalescedFailures, done.QueuedAllocations["web"])
	}
	var blocked *state.Evaluation
	for _, e := range h.CreatedEvals {
		if e.Status == state.EvalStatusBlocked {
			blocked = e
		}
	}
	if blocked == nil || blocked.QuotaLimitReached != "team" {
		t.Fatalf("blocked eval %+v, want one naming quota team", blocked)
	}

	// Two allocations stop: their room is placed again, and no more.
	live := h.LiveAllocs("prod", "web")
	stopped := make([]*state.Allocation, 2)
	for i := range stopped {
		stopped[i] = &state.Allocation{ID: live[i].ID, ClientStatus: state.AllocClientStatusFailed}
	}
	h.ClientUpdate(stopped...)
	stored, err := h.Store.EvalByID(nil, blocked.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Process(NewServiceScheduler, stored); err != nil {
		t.Fatal(err)
	}
	if got := len(h.LiveAllocs("prod", "web")); got != 4 {
		t.Fatalf("%d live after two stopped and the blocked eval ran, want 4", got)
	}
}

// Namespaces without a quota, and a quota without a limit for the job's
// region, place everything.
func TestQuotaOtherRegionOrNamespaceUnlimited(t *testing.T) {
	h := quotaHarness(t, state.QuotaResources{MemoryMB: 256})
	for _, ns := range []string{"default", "prod"} {
		job := MockJob("web")
		job.TaskGroups[0].Count = 3
		job.Namespace = ns
		if ns == "prod" {
			job.Region = "elsewhere"
		}
		job = h.UpsertJob(job)
		if err := h.Process(NewServiceScheduler, h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
			t.Fatal(err)
		}
		if got := len(h.LiveAllocs(ns, "web")); got != 3 {
			t.Errorf("namespace %s: %d placed, want 3", ns, got)
		}
	}
}

// The plan applier's check: a plan that would go over quota (its
// scheduler saw less usage than there is) is cut node by node, with the
// quota's reason, and its stops still go through.
func TestEvaluatePlanEnforcesQuota(t *testing.T) {
	h := quotaHarness(t, state.QuotaResources{Allocations: 3})
	job := MockJob("web")
	job.Namespace = "prod"
	job = h.UpsertJob(job)
	mk := func(id, node string) *state.Allocation {
		return &state.Allocation{ID: id, Namespace: "prod", JobID: "web", Job: job, TaskGroup: "web", NodeID: node,
			DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending,
			AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"web": {CPU: 10, MemoryMB: 10}}}}
	}
	h.UpsertAllocs(mk("a0", "n0"), mk("a1", "n0"))
	plan := &Plan{Job: job, NodeAllocation: map[string][]*state.Allocation{
		"n0": {mk("b0", "n0")},
		"n1": {mk("b1", "n1")},
	}}
	result, rejected, err := EvaluatePlan(h.Store, nil, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(result.NodeAllocation["n0"]) != 1 || len(result.NodeAllocation["n1"]) != 0 || result.RefreshIndex == 0 {
		t.Fatalf("accepted %v (refresh %d, rejected %+v), want only n0's placement", result.NodeAllocation, result.RefreshIndex, rejected)
	}
	if len(rejected) != 1 || rejected[0].Node != "n1" || !strings.Contains(rejected[0].Reason, "quota exceeded: allocations 3/3") {
		t.Fatalf("rejections %+v", rejected)
	}
	// With a stop of a0 in the plan, both fit.
	stop := mk("a0", "n0")
	stop.DesiredStatus = state.AllocDesiredStatusStop
	plan.NodeUpdate = map[string][]*state.Allocation{"n0": {stop}}
	result, rejected, err = EvaluatePlan(h.Store, nil, plan)
	if err != nil || len(rejected) != 0 || len(result.NodeAllocation) != 2 || len(result.NodeUpdate["n0"]) != 1 {
		t.Fatalf("with a stop: %v %+v %v", result.NodeAllocation, rejected, err)
	}
	// What this batch already committed (the overlay) counts too.
	plan.NodeUpdate = nil
	overlay := map[string][]*state.Allocation{"n1": {mk("c0", "n1")}}
	if _, rejected, err = EvaluatePlan(h.Store, overlay, plan); err != nil || len(rejected) != 2 {
		t.Fatalf("over an overlay holding the last slot: %+v %v, want both nodes refused", rejected, err)
	}
}

// System and sysbatch jobs are held to their namespace's quota as service
// and batch jobs are: the nodes past the limit are failed placements with
// the quota's reason, and the blocked evaluation names the quota.
func TestQuotaLimitsSystemJobs(t *testing.T) {
	for _, c := range []struct {
		typ   string
		limit state.QuotaResources
		why   string
	}{
		{state.JobTypeSystem, state.QuotaResources{Allocations: 1}, "quota exceeded: allocations 1/1"},
		{state.JobTypeSysBatch, state.QuotaResources{MemoryMB: 512}, "quota exceeded: memory 512/512 MB"},
	} {
		t.Run(c.typ, func(t *testing.T) {
			h := quotaHarness(t, c.limit)
			n2 := MockNode("n2")
			n2.ID = "n2"
			h.UpsertNodes(n2)
			job := MockSystemJob("agent") // 256 MB on each of 3 nodes
			job.Type = c.typ
			job.Namespace = "prod"
			job = h.UpsertJob(job)
			if err := h.Process(BuiltinSchedulers[c.typ], h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
				t.Fatal(err)
			}
			want := 1
			if c.typ == state.JobTypeSysBatch {
				want = 2
			}
			if got := len(h.LiveAllocs("prod", "agent")); got != want {
				t.Fatalf("%d placed under the quota, want %d", got, want)
			}
			done := h.LastEval()
			m := done.FailedTGAllocs["web"]
			if m == nil || len(m.QuotaExhausted) != 1 || m.QuotaExhausted[0] != c.why {
				t.Fatalf("failed placements' metric: %+v, want reason %q", m, c.why)
			}
			if done.QueuedAllocations["web"] != 3-want {
				t.Errorf("queued %d, want %d", done.QueuedAllocations["web"], 3-want)
			}
			var blocked *state.Evaluation
			for _, e := range h.CreatedEvals {
				if e.Status == state.EvalStatusBlocked {
					blocked = e
				}
			}
			if blocked == nil || blocked.QuotaLimitReached != "team" {
				t.Fatalf("blocked eval %+v, want one naming quota team", blocked)
			}
		})
	}
}
