package command

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/schedhq/sched/state"
)

// maxPreemptionRows is how many preempted allocations job plan lists one
// by one; beyond it, it counts them per job.
const maxPreemptionRows = 10

// writePreemptions prints the allocations a plan would evict, as Nomad's
// plan does: a table of allocation, job and group, or per-job counts when
// there are many.
func writePreemptions(w io.Writer, allocs []*state.AllocListStub) {
	fmt.Fprintln(w, "Preemptions:")
	fmt.Fprintln(w)
	if len(allocs) <= maxPreemptionRows {
		rows := make([][]string, 0, len(allocs))
		for _, a := range allocs {
			rows = append(rows, []string{a.ID, a.JobID, a.TaskGroup, a.Namespace})
		}
		writeTable(w, []string{"Alloc ID", "Job ID", "Task Group", "Namespace"}, rows)
		return
	}
	type jobKey struct{ ns, id string }
	counts := map[jobKey]int{}
	for _, a := range allocs {
		counts[jobKey{a.Namespace, a.JobID}]++
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b jobKey) int {
		if a.ns != b.ns {
			return strings.Compare(a.ns, b.ns)
		}
		return strings.Compare(a.id, b.id)
	})
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, []string{k.id, k.ns, fmt.Sprint(counts[k])})
	}
	writeTable(w, []string{"Job ID", "Namespace", "Preempted Allocations"}, rows)
}
