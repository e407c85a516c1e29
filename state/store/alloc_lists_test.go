package store

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAllocListMergesAppended: a row's sorted prefix and the IDs appended
// after it in any order read back as one sorted list, whatever their
// interleaving, and the prefix mark follows.
func TestAllocListMergesAppended(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	id := func() string {
		return string(rune('a'+r.IntN(26))) + string(rune('a'+r.IntN(26))) + string(rune('a'+r.IntN(26)))
	}
	for round := range 500 {
		head := make([]string, r.IntN(40))
		for i := range head {
			head[i] = id()
		}
		slices.Sort(head)
		tail := make([]string, r.IntN(6))
		for i := range tail {
			tail[i] = id()
		}
		l := &allocList{IDs: append(slices.Clone(head), tail...), sortedTo: len(head), unsorted: len(tail) > 0}
		want := slices.Sorted(slices.Values(append(slices.Clone(head), tail...)))
		if got := l.sortedIDs(); !slices.Equal(got, want) || l.unsorted || l.sortedTo != len(want) {
			t.Fatalf("round %d: head %v + tail %v read %v (unsorted %v, sortedTo %d), want %v", round, head, tail, got, l.unsorted, l.sortedTo, want)
		}
	}
}
