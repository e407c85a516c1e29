package scheduler

import (
	"testing"

	"github.com/schedhq/sched/state"
)

func TestRankLimit(t *testing.T) {
	service, batch := MockJob("s"), MockBatchJob("b")
	spread := MockJob("sp")
	spread.Spreads = []*state.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
	for _, c := range []struct {
		job  *state.Job
		n    int
		want int
	}{
		{service, 1, 2}, {service, 4, 2}, {service, 5, 3}, {service, 5000, 13},
		{batch, 5000, 2}, {spread, 5000, 5000},
	} {
		if got := rankLimit(c.job, c.job.TaskGroups[0], c.n); got != c.want {
			t.Errorf("%s job on %d nodes: limit %d, want %d", c.job.Type, c.n, got, c.want)
		}
	}
}

func allocGroupKey(a *state.Allocation) string { return groupKey(a.Namespace, a.JobID, a.TaskGroup) }

// TestInGroupAsTheKey: inGroup agrees with comparing allocGroupKey, for
// names that differ, that share prefixes, and that hold the separator.
func TestInGroupAsTheKey(t *testing.T) {
	names := []string{"", "a", "ab", "a\x00", "\x00b", "web", "we", "b"}
	for _, ns := range names {
		for _, job := range names {
			for _, g := range names {
				a := &state.Allocation{Namespace: ns, JobID: job, TaskGroup: g}
				for _, kns := range names {
					for _, kjob := range names {
						for _, kg := range names {
							key := groupKey(kns, kjob, kg)
							if got, want := inGroup(a, key), allocGroupKey(a) == key; got != want {
								t.Fatalf("inGroup(%q/%q/%q, %q) = %v, want %v", ns, job, g, key, got, want)
							}
						}
					}
				}
			}
		}
	}
}
