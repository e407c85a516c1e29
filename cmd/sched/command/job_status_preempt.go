package command

import (
	"fmt"
	"io"
	"slices"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// maxPreemptionLookups bounds how many other allocations `job status`
// reads to name their jobs in its Preemptions table; past it the table
// names the allocation only.
const maxPreemptionLookups = 20

// writePreemptions prints, when any of allocs was evicted to make room for
// another or evicted others, one row per such pair: the job's allocation,
// "evicted by" or "evicted", the other allocation and its job. It reads
// the other allocations (at most maxPreemptionLookups) to name their jobs;
// one it cannot read shows "-".
func (c *jobCLI) writePreemptions(w io.Writer, client *api.Client, allocs []*state.AllocListStub, verbose bool) {
	type row struct{ own, event, other string }
	var rows []row
	for _, a := range allocs {
		if a.PreemptedByAllocation != "" {
			rows = append(rows, row{a.ID, "evicted by", a.PreemptedByAllocation})
		}
		for _, v := range a.PreemptedAllocations {
			rows = append(rows, row{a.ID, "evicted", v})
		}
	}
	if len(rows) == 0 {
		return
	}
	jobs := map[string]string{}
	for _, r := range rows {
		if _, ok := jobs[r.other]; ok || len(jobs) >= maxPreemptionLookups {
			continue
		}
		jobs[r.other] = "-"
		other, _, err := client.Allocations().Info(c.ctx, r.other, &api.QueryOptions{Namespace: "*"})
		if err == nil && other != nil {
			jobs[r.other] = other.JobID
			if other.Namespace != "" && other.Namespace != allocNamespace(allocs) {
				jobs[r.other] = other.Namespace + "/" + other.JobID
			}
		}
	}
	fmt.Fprintln(w, "\nPreemptions")
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		job, ok := jobs[r.other]
		if !ok {
			job = "-"
		}
		out = append(out, []string{shortID(r.own, verbose), r.event, shortID(r.other, verbose), job})
	}
	slices.SortStableFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	writeTable(w, []string{"Allocation", "Preemption", "Other Allocation", "Other Job"}, out)
}

// allocNamespace is the namespace of a job's allocations.
func allocNamespace(allocs []*state.AllocListStub) string {
	if len(allocs) == 0 {
		return ""
	}
	return allocs[0].Namespace
}
