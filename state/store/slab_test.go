package store

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/schedhq/sched/state"
)

// The slab's sizes (packed's slabAllocs and slabBytes): how many
// allocations one block holds, and the bytes of a block of strings.
const (
	slabAllocs = 32
	slabBytes  = 8 << 10
)

// TestPackedPlanAllocationsShareBlocks: the allocations of a packed plan,
// their metrics and their own strings are stored side by side in blocks
// (packed's slab), not as objects of their own, and the compactor keeps the
// decoded metric rather than copying it (issue 19: objects per stored
// allocation are what the garbage collector's cycles cost).
func TestPackedPlanAllocationsShareBlocks(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	stored := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	const n = 4 * slabAllocs
	var allocs []*state.Allocation
	for i := range n {
		a := stAlloc(fmt.Sprintf("a%03d", i), job, fmt.Sprintf("n%d", i%7))
		a.EvalID = "eval-1"
		a.Metrics = &state.AllocMetric{NodesEvaluated: 3, NodesAvailable: map[string]int{"dc1": 7}, ClassExhausted: map[string]int{"": i % 3},
			Scores: state.ScoresOf(map[string]float64{a.NodeID + ".binpack": 0.25 + float64(i)/1000})}
		allocs = append(allocs, a)
	}
	p, mt, err := (&PlanApplyRequest{EvalID: "eval-1", Job: stored, JobAllocs: allocs, Now: 1100}).Packed(nil)
	if err != nil {
		t.Fatal(err)
	}
	stApply(t, s, 11, mt, p)
	var got []*state.Allocation
	for _, a := range allocs {
		g := stMust[*state.Allocation](t)(s.AllocByID(nil, a.ID))
		if g == nil || g.ID != a.ID || g.Name != a.Name || g.Metrics == nil || g.Metrics.NodesEvaluated != 3 {
			t.Fatalf("allocation %s read back as %+v", a.ID, g)
		}
		want, _ := a.Metrics.Scores.Get(a.NodeID, "binpack")
		if v, ok := g.Metrics.Scores.Get(a.NodeID, "binpack"); !ok || v != want {
			t.Fatalf("allocation %s scores %v, want %v", a.ID, g.Metrics.Scores, a.Metrics.Scores)
		}
		got = append(got, g)
	}
	// Neighbours in the plan are neighbours in memory, but across the
	// edge of a block (the reader's first block may be part-used).
	var structs, metrics, ids int
	for i := 1; i < n; i++ {
		if uintptr(unsafe.Pointer(got[i]))-uintptr(unsafe.Pointer(got[i-1])) == unsafe.Sizeof(state.Allocation{}) {
			structs++
		}
		if uintptr(unsafe.Pointer(got[i].Metrics))-uintptr(unsafe.Pointer(got[i-1].Metrics)) == unsafe.Sizeof(state.AllocMetric{}) {
			metrics++
		}
		if d := uintptr(unsafe.Pointer(unsafe.StringData(got[i].ID))) - uintptr(unsafe.Pointer(unsafe.StringData(got[i-1].ID))); d > 0 && d < slabBytes {
			ids++
		}
	}
	if want := n - 1 - n/slabAllocs - 1; structs < want || metrics < want {
		t.Errorf("%d of %d allocations and %d metrics follow their neighbour in memory, want %d or more", structs, n-1, metrics, want)
	}
	if ids < n-1-2*n*64/slabBytes-1 {
		t.Errorf("%d of %d IDs follow their neighbour's block, want most", ids, n-1)
	}
}
