package packed

import (
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/schedhq/sched/state"
)

// TestCountMapsFromPairs: a snapshot's or a plan's reader gets the held
// map from its pairs, in any order; of a key that repeats, the last value
// counts; the cache takes no large map.
func TestCountMapsFromPairs(t *testing.T) {
	counts := newCountMaps()
	two := counts.intern(map[string]int{"a": 1, "b": 2})
	if got := counts.fromPairs([]countPair{{"b", 2}, {"a", 1}}); !sameMap(got, two) {
		t.Errorf("pairs of a held map made %v, not the held one", got)
	}
	if got := counts.fromPairs([]countPair{{"b", 9}, {"a", 1}, {"b", 2}}); !sameMap(got, two) {
		t.Errorf("pairs with a key repeated made %v, want the held {a:1 b:2}", got)
	}
	if got := counts.fromPairs([]countPair{{"b", 2}, {"a", 1}, {"b", 9}}); !reflect.DeepEqual(got, map[string]int{"a": 1, "b": 9}) {
		t.Errorf("pairs with a key repeated made %v, want the last value", got)
	}
	if got := counts.fromPairs(nil); got == nil || len(got) != 0 {
		t.Errorf("no pairs made %v, want an empty map", got)
	}
	big := map[string]int{}
	for i := range countMapMaxLen + 1 {
		big[fmt.Sprint(i)] = i
	}
	if got := counts.intern(big); !sameMap(got, big) {
		t.Error("a large map was replaced")
	}
	cp := maps.Clone(big)
	if got := counts.intern(cp); !sameMap(got, cp) {
		t.Error("a large map was interned")
	}
}

// TestSlabHandsOutSeparateRoom: what the slab hands out never overlaps,
// byte slices are capped at their length (an append copies rather than
// writing a neighbour's bytes), and large requests get room of their own.
func TestSlabHandsOutSeparateRoom(t *testing.T) {
	var s slab
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
	c := &Compactor{shared: newCountMaps()}
	shared := c.shared.intern(map[string]int{"disk": 4})
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
