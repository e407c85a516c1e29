package leader

import (
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// An evaluation blocked by a quota ignores capacity changes, and is
// unblocked when the quota's usage falls; a rise does not unblock it.
func TestBlockedEvalsQuotaUnblocksOnUsageFall(t *testing.T) {
	r := rtNewMemRaft(t)
	node := rtClassNode("n", "class-a")
	r.registerNode(t, node)
	r.must(t, store.QuotaUpsertRequestType, &store.QuotaUpsertRequest{Quotas: []*state.QuotaSpec{{Name: "team",
		Limits: []*state.QuotaLimit{{Region: state.DefaultRegion, RegionLimit: &state.QuotaResources{Allocations: 2}}}}}})
	r.must(t, store.NamespaceUpsertRequestType, &store.NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod", Quota: "team"}}})
	job := scheduler.MockJob("web")
	job.Namespace = "prod"
	r.registerJob(t, job)
	stored, _ := r.store.JobByID(nil, "prod", "web")
	alloc := func(id string) *state.Allocation {
		return &state.Allocation{ID: id, Namespace: "prod", JobID: "web", TaskGroup: "web", NodeID: node.ID,
			EvalID: "x", DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusRunning}
	}
	r.must(t, store.PlanApplyRequestType, &store.PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{alloc("a1")}})

	rt := rtStartFeed(t, r)
	blocked := rtBlockedEval("b1", "other", r.index, map[string]bool{"class-a": true})
	blocked.Namespace = "prod"
	blocked.QuotaLimitReached = "team"
	r.putEvals(t, blocked)
	rtWaitTracked(t, rt, "b1", true)

	// Capacity appears, and the quota's usage rises: still blocked.
	idx := r.registerNode(t, rtClassNode("more", "class-a"))
	rtWaitUnblockSeen(t, rt, "class-a", idx)
	idx = r.must(t, store.PlanApplyRequestType, &store.PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{alloc("a2")}})
	rtWaitQuotaSeen(t, rt, idx)
	if !rt.Blocked.Tracked("b1") {
		t.Fatal("capacity or a rise of the quota's usage unblocked a quota-blocked evaluation")
	}
	// An allocation of the quota's namespace completes: unblocked.
	r.must(t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: []*state.Allocation{
		{ID: "a1", ClientStatus: state.AllocClientStatusComplete}}})
	rtWaitTracked(t, rt, "b1", false)
	// Ready: the job's register evaluation and b1.
	rtWaitBroker(t, rt.Broker, "b1 re-enqueued", func(st *BrokerStats) bool { return st.TotalReady == 2 })
}

// rtWaitQuotaSeen waits until the quota watcher has passed over the quota
// tables at index or later.
func rtWaitQuotaSeen(t *testing.T, rt *Runtime, index uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		changed := rt.Blocked.Changed()
		rt.Blocked.mu.Lock()
		seen := rt.Blocked.quotaPassed
		rt.Blocked.mu.Unlock()
		if seen >= index {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("quota pass at %d not seen (at %d)", index, seen)
		}
		rtWaitUnblockChange(changed, deadline)
	}
}
