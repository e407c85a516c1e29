package packed

import (
	"unsafe"

	"github.com/schedhq/sched/state"
)

// Slab sizes: how many allocations (and metrics) one block holds, and the
// bytes of a block of strings and scores. A block of 32 allocations is
// 12 KB; 8 KB of bytes hold the IDs, names and scores of some 40
// placements.
const (
	slabAllocs = 32
	slabBytes  = 8 << 10
)

// slab hands out the objects of the allocations a Reader
// decodes (the struct, its metric, its own strings and its scores) from
// blocks of many, rather than as objects of their own.
//
// At a million stored allocations the garbage collector's cost per
// placement grew with the heap: each cycle finds the span of every
// pointer it follows, and the spans of a few million small objects spread
// over gigabytes miss the cache at nearly every lookup (issue 19). With
// the allocations of a plan side by side in a few blocks, a cycle
// follows a block's pointers into a handful of spans, and the heap holds
// some five objects fewer per allocation.
//
// A block lives as long as any allocation in it: an allocation that is
// updated (a client's report, a stop) is stored anew, and the block goes
// once all of its allocations have been replaced or deleted. A block
// holds at most slabAllocs of them, which bounds what one long-lived
// allocation can keep alive. Nothing handed out is ever written again
// by the slab: the strings made from the byte blocks are immutable.
type slab struct {
	allocs  []state.Allocation
	metrics []state.AllocMetric
	bytes   []byte
}

// alloc returns a zero allocation from the current block.
func (s *slab) alloc() *state.Allocation {
	if len(s.allocs) == cap(s.allocs) {
		s.allocs = make([]state.Allocation, 0, slabAllocs)
	}
	s.allocs = s.allocs[:len(s.allocs)+1]
	return &s.allocs[len(s.allocs)-1]
}

// metric returns a zero metric from the current block.
func (s *slab) metric() *state.AllocMetric {
	if len(s.metrics) == cap(s.metrics) {
		s.metrics = make([]state.AllocMetric, 0, slabAllocs)
	}
	s.metrics = s.metrics[:len(s.metrics)+1]
	return &s.metrics[len(s.metrics)-1]
}

// take returns n bytes of their own (length and capacity n): from the
// current byte block when n is small, else a slice of its own.
func (s *slab) take(n int) []byte {
	if n > slabBytes/8 {
		return make([]byte, n)
	}
	if cap(s.bytes)-len(s.bytes) < n {
		s.bytes = make([]byte, 0, slabBytes)
	}
	i := len(s.bytes)
	s.bytes = s.bytes[:i+n]
	return s.bytes[i : i+n : i+n]
}

// string returns a copy of b as a string held in a byte block.
func (s *slab) string(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	dst := s.take(len(b))
	copy(dst, b)
	return unsafe.String(&dst[0], len(dst))
}
