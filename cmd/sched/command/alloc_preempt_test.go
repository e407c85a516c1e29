package command

import (
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestAllocStatusShowsPreemption(t *testing.T) {
	const victim, preemptor = "a1a1a1a1-0000-4000-8000-000000000001", "b2b2b2b2-0000-4000-8000-000000000002"
	f := newFakeAPI(t)
	f.on("GET", "/v1/allocations", reply(9, []*state.AllocListStub{{ID: victim, Namespace: "default"}}), reply(9, []*state.AllocListStub{{ID: preemptor, Namespace: "default"}}))
	f.on("GET", "/v1/allocation/"+victim, reply(9, &state.Allocation{ID: victim, Name: "low.g[0]", Namespace: "default", JobID: "low", TaskGroup: "g",
		DesiredStatus: state.AllocDesiredStatusEvict, DesiredDescription: "Preempted by alloc ID " + preemptor, PreemptedByAllocation: preemptor}))
	f.on("GET", "/v1/allocation/"+preemptor, reply(9, &state.Allocation{ID: preemptor, Name: "high.g[0]", Namespace: "default", JobID: "high", TaskGroup: "g",
		DesiredStatus: "run", PreemptedAllocations: []string{victim}}))
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	r := runCLI(t, f, runOpts{}, "alloc", "status", "a1a1")
	if out := squeeze(r.stdout); r.code != 0 || !strings.Contains(out, "Desired Status = evict") || !strings.Contains(out, "Preempted By = b2b2b2b2") {
		t.Errorf("victim: code %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, f, runOpts{}, "alloc", "status", "b2b2")
	if r.code != 0 || !strings.Contains(squeeze(r.stdout), "Preempted Allocations = a1a1a1a1") {
		t.Errorf("preemptor: code %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
