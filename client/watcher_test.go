package client

import (
	"slices"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// TestMergeChanges: the client's list is the changed allocations plus the
// known ones the answer names at the same index (AllocModifyIndex: the
// client asks for the servers' changes); one it drops is gone; an
// answer naming an allocation it neither carries nor matches what is known
// is incomplete and leaves known as it was.
func TestMergeChanges(t *testing.T) {
	a := &state.Allocation{ID: "a", AllocModifyIndex: 5}
	b := &state.Allocation{ID: "b", AllocModifyIndex: 6}
	known := map[string]*state.Allocation{}
	list, ok := mergeChanges(known, &state.NodeAllocChanges{Allocs: map[string]uint64{"a": 5, "b": 6}, Changed: []*state.Allocation{a, b}})
	if !ok || len(list) != 2 || known["a"] != a || known["b"] != b {
		t.Fatalf("first answer: %v %v, known %v", list, ok, known)
	}

	// b changed, a did not, c is new.
	b2 := &state.Allocation{ID: "b", AllocModifyIndex: 9, DesiredStatus: "stop"}
	c := &state.Allocation{ID: "c", AllocModifyIndex: 8}
	list, ok = mergeChanges(known, &state.NodeAllocChanges{Allocs: map[string]uint64{"a": 5, "b": 9, "c": 8}, Changed: []*state.Allocation{b2, c}})
	slices.SortFunc(list, func(x, y *state.Allocation) int { return int(x.AllocModifyIndex) - int(y.AllocModifyIndex) })
	if !ok || !slices.Equal(list, []*state.Allocation{a, c, b2}) || known["b"] != b2 {
		t.Fatalf("second answer: %v %v", list, ok)
	}

	// a was collected by the servers: no longer listed, no longer known.
	list, ok = mergeChanges(known, &state.NodeAllocChanges{Allocs: map[string]uint64{"b": 9, "c": 8}})
	if !ok || len(list) != 2 || known["a"] != nil || len(known) != 2 {
		t.Fatalf("after a is gone: %v %v, known %v", list, ok, known)
	}

	// A server that names c at another index without carrying it (it lags
	// behind), or names an allocation never seen: incomplete, nothing
	// forgotten.
	for _, ch := range []*state.NodeAllocChanges{
		{Allocs: map[string]uint64{"b": 9, "c": 7}},
		{Allocs: map[string]uint64{"b": 9, "c": 8, "d": 3}},
	} {
		if list, ok := mergeChanges(known, ch); ok || list != nil || len(known) != 2 || known["c"] != c {
			t.Errorf("answer %v: %v %v, known %v; want incomplete and known unchanged", ch.Allocs, list, ok, known)
		}
	}
}

// The watch's gather grows by one WatchGather per thousand allocations
// of the node, up to watchGatherMax, and never falls below the
// configured one.
func TestWatchGatherGrowsWithTheNode(t *testing.T) {
	base := 100 * time.Millisecond
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, base}, {999, base}, {1000, 2 * base}, {4500, 5 * base}, {50000, watchGatherMax}} {
		if got := watchGather(base, c.n); got != c.want {
			t.Errorf("%d allocations: gather %v, want %v", c.n, got, c.want)
		}
	}
	if got := watchGather(2*time.Second, 0); got != 2*time.Second {
		t.Errorf("a configured gather above the cap became %v", got)
	}
}
