package scheduler_test

import (
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// step registers job (when not nil), processes an annotated eval of the
// stored job and returns the plan's annotations for group "web".
func step(t *testing.T, h *schedtest.Harness, ns, id string, job *state.Job, trigger string) *state.DesiredUpdates {
	t.Helper()
	if job != nil {
		h.UpsertJob(job)
	}
	stored, err := h.Store.JobByID(nil, ns, id)
	if err != nil || stored == nil {
		t.Fatalf("read job: %v", err)
	}
	e := h.NewEval(stored, trigger)
	e = e.Copy()
	e.AnnotatePlan = true
	before := len(h.Plans)
	if err := h.Process(BuiltinSchedulers[stored.Type], e); err != nil {
		t.Fatalf("process: %v", err)
	}
	if len(h.Plans) == before {
		t.Fatal("no plan submitted")
	}
	ann := h.LastPlan().Annotations
	if ann == nil || ann.DesiredTGUpdates["web"] == nil {
		return &state.DesiredUpdates{}
	}
	return ann.DesiredTGUpdates["web"]
}

// clientStatus reports a client status for allocations.
func clientStatus(h *schedtest.Harness, status string, allocs ...*state.Allocation) {
	var ups []*state.Allocation
	for _, a := range allocs {
		c := a.CopySkipJob()
		c.ClientStatus = status
		ups = append(ups, c)
	}
	h.ClientUpdate(ups...)
}
