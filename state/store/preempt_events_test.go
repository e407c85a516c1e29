package store

import (
	"testing"

	"github.com/schedhq/sched/state"
)

// TestEvictionEvents: a plan's eviction reaches the event stream as an
// AllocationUpdated event of the evicted allocation, with DesiredStatus
// evict and PreemptedByAllocation, and is stored so.
func TestEvictionEvents(t *testing.T) {
	s := stDeploymentFixture(t) // index 11: deployment d1, allocs a1 a2
	stApply(t, s, 12, PlanApplyRequestType, &PlanApplyRequest{Stops: []*state.Allocation{{
		ID: "a1", Namespace: state.DefaultNamespace, JobID: "web", DesiredStatus: state.AllocDesiredStatusEvict,
		DesiredDescription: "Preempted by alloc ID b1", PreemptedByAllocation: "b1",
	}}, Now: 12})
	got, _ := s.Events().After(11, 0)
	found := false
	for _, b := range got {
		for _, e := range b.Events {
			a, ok := e.Object.(*state.Allocation)
			if e.Type == "AllocationUpdated" && ok && a.ID == "a1" {
				found = true
				if a.DesiredStatus != state.AllocDesiredStatusEvict || a.PreemptedByAllocation != "b1" {
					t.Errorf("event carries %s / %q", a.DesiredStatus, a.PreemptedByAllocation)
				}
			}
		}
	}
	if !found {
		t.Fatalf("no AllocationUpdated event of a1 among %v", eventSummary(got))
	}
	if a, _ := s.AllocByID(nil, "a1"); a.PreemptedByAllocation != "b1" || a.DesiredStatus != state.AllocDesiredStatusEvict {
		t.Errorf("stored as %s / %q", a.DesiredStatus, a.PreemptedByAllocation)
	}
}
