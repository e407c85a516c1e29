package client

import (
	"slices"
	"testing"

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

// TestMergeDelta: a delta answer's changed allocations replace or join
// the known ones and its removed ones leave; the result adds up only when
// it holds as many allocations as the answer counts (one that left the
// node unnamed makes it fail, so the watch asks for the whole list).
func TestMergeDelta(t *testing.T) {
	a := &state.Allocation{ID: "a", AllocModifyIndex: 5}
	b := &state.Allocation{ID: "b", AllocModifyIndex: 6}
	known := map[string]*state.Allocation{"a": a, "b": b}
	b2 := &state.Allocation{ID: "b", AllocModifyIndex: 9}
	c := &state.Allocation{ID: "c", AllocModifyIndex: 9}
	if !mergeDelta(known, &state.NodeAllocChanges{Changed: []*state.Allocation{b2, c}, Removed: []string{"a", "never-known"}, Count: 2}) {
		t.Fatalf("a delta that adds up failed: known %v", known)
	}
	if len(known) != 2 || known["b"] != b2 || known["c"] != c || known["a"] != nil {
		t.Fatalf("known after the delta: %v", known)
	}
	// c left the node, but the answer does not name it.
	if mergeDelta(known, &state.NodeAllocChanges{Count: 1}) {
		t.Error("a delta whose count does not add up was taken")
	}
}
