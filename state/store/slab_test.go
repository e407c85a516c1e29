package store

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/schedhq/sched/state"
)

// TestPackedPlanAllocationsShareBlocks: the allocations of a packed plan,
// their metrics and their own strings are stored side by side in blocks
// (allocSlab), not as objects of their own, and the compactor keeps the
// decoded metric rather than copying it (issue 19: objects per stored
// allocation are what the garbage collector's cycles cost).
func TestPackedPlanAllocationsShareBlocks(t *testing.T) {
	s := stStore(t, StoreConfig{})
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

// TestSlabHandsOutSeparateRoom: what the slab hands out never overlaps,
// byte slices are capped at their length (an append copies rather than
// writing a neighbour's bytes), and large requests get room of their own.
func TestSlabHandsOutSeparateRoom(t *testing.T) {
	var s allocSlab
	a, b := s.take(10), s.take(10)
	if len(a) != 10 || cap(a) != 10 || &a[0] == &b[0] {
		t.Fatalf("take: len %d cap %d, same room %v", len(a), cap(a), &a[0] == &b[0])
	}
	copy(b, "bbbbbbbbbb")
	a = append(a, 'x')
	if string(b) != "bbbbbbbbbb" {
		t.Fatalf("an append to one slice wrote its neighbour: %q", b)
	}
	x, y := s.string([]byte("first")), s.string([]byte("second"))
	if x != "first" || y != "second" || s.string(nil) != "" {
		t.Fatalf("strings %q %q", x, y)
	}
	big := s.take(slabBytes)
	if len(big) != slabBytes || len(s.bytes) > slabBytes/2 {
		t.Fatalf("a large take came from the block: len %d, block used %d", len(big), len(s.bytes))
	}
	seen := map[*state.Allocation]bool{}
	for range 3 * slabAllocs {
		p := s.alloc()
		if seen[p] || p.ID != "" {
			t.Fatal("alloc handed out an allocation twice, or not zero")
		}
		seen[p] = true
	}
}

// TestCompactKeepsASharedMetric: a metric whose count maps are the
// shared ones already is kept, not copied; one whose maps are not is
// copied with the shared maps, and the original is left as it was.
func TestCompactKeepsASharedMetric(t *testing.T) {
	c := &compactor{}
	shared := sharedCountMaps.intern(map[string]int{"disk": 4})
	m := &state.AllocMetric{NodesExhausted: 4, DimensionExhausted: shared}
	if got := c.metrics(m); got != m {
		t.Error("a metric with shared maps was copied")
	}
	own := map[string]int{"disk": 4}
	o := &state.AllocMetric{NodesExhausted: 4, DimensionExhausted: own}
	got := c.metrics(o)
	if got == o || !sameMap(got.DimensionExhausted, shared) || got.NodesExhausted != 4 {
		t.Errorf("a metric with a map of its own: got %p (orig %p), map shared %v", got, o, sameMap(got.DimensionExhausted, shared))
	}
	if !sameMap(o.DimensionExhausted, own) {
		t.Error("the original metric was changed")
	}
}
