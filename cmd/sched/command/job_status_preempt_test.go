package command

import (
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

// TestJobStatusShowsPreemptions: a job with an evicted allocation names
// the allocation (and its job) that took its room; a job whose allocation
// evicted others lists them.
func TestJobStatusShowsPreemptions(t *testing.T) {
	const victim, preemptor, other = "a1a1a1a1-0000-4000-8000-000000000001", "b2b2b2b2-0000-4000-8000-000000000002", "c3c3c3c3-0000-4000-8000-000000000003"
	low := &state.Job{ID: "low", Name: "low", Namespace: "default", Type: "service", Priority: 20, Status: "running"}
	f := statusFake(t, low, nil, []*state.Allocation{
		{ID: victim, Namespace: "default", JobID: "low", NodeID: "n1n1n1n1-0000", TaskGroup: "web", Job: &state.Job{Type: "service"},
			DesiredStatus: state.AllocDesiredStatusEvict, ClientStatus: "complete", PreemptedByAllocation: preemptor},
	})
	f.on("GET", "/v1/allocation/"+preemptor, reply(9, &state.Allocation{ID: preemptor, Namespace: "default", JobID: "high"}))
	r := runCLI(t, f, runOpts{}, "job", "status", "low")
	want := lines(
		"Preemptions",
		"Allocation  Preemption  Other Allocation  Other Job",
		"a1a1a1a1    evicted by  b2b2b2b2          high",
	)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\n\n"+want) || !strings.Contains(r.stdout, "evict ") {
		t.Fatalf("code %d, stdout:\n%s\nwant it to end with:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	if q := f.only("GET /v1/allocation/" + preemptor).Query.Get("namespace"); q != "*" {
		t.Errorf("preemptor read in namespace %q, want *", q)
	}

	high := &state.Job{ID: "high", Name: "high", Namespace: "default", Type: "service", Priority: 80, Status: "running"}
	f = statusFake(t, high, nil, []*state.Allocation{
		{ID: preemptor, Namespace: "default", JobID: "high", NodeID: "n1n1n1n1-0000", TaskGroup: "web", Job: &state.Job{Type: "service"},
			DesiredStatus: "run", ClientStatus: "running", PreemptedAllocations: []string{victim, other}},
	})
	f.on("GET", "/v1/allocation/"+victim, reply(9, &state.Allocation{ID: victim, Namespace: "default", JobID: "low"}))
	f.on("GET", "/v1/allocation/"+other, reply(9, &state.Allocation{ID: other, Namespace: "batch", JobID: "etl"}))
	r = runCLI(t, f, runOpts{}, "job", "status", "high")
	want = lines(
		"Preemptions",
		"Allocation  Preemption  Other Allocation  Other Job",
		"b2b2b2b2    evicted     a1a1a1a1          low",
		"b2b2b2b2    evicted     c3c3c3c3          batch/etl",
	)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\n\n"+want) {
		t.Fatalf("code %d, stdout:\n%s\nwant it to end with:\n%s", r.code, r.stdout, want)
	}

	// Without preemptions there is no table and nothing is read.
	f = statusFake(t, high, nil, []*state.Allocation{{ID: preemptor, Namespace: "default", JobID: "high", TaskGroup: "web", DesiredStatus: "run"}})
	r = runCLI(t, f, runOpts{}, "job", "status", "high")
	if r.code != 0 || strings.Contains(r.stdout, "Preemptions") || len(f.requests("GET /v1/allocation/"+victim)) != 0 {
		t.Fatalf("code %d, stdout:\n%s", r.code, r.stdout)
	}
}
