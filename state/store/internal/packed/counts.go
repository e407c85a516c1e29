package packed

import (
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// countMaps interns the small count maps of allocation metrics
// (nodes exhausted per class and per dimension, filtered per class and
// per constraint) across commands. A command shares the maps its own
// placements repeat, but once nodes fill up every placement records how
// many were exhausted, a count that changes from one evaluation to the
// next and comes back in later ones: at half a million allocations a
// store held 36,000 distinct maps of nodes exhausted per class (issue
// 19), each an object the garbage collector scans at every cycle. The
// cache is direct-mapped by the map's contents: a collision replaces the
// slot, so it holds at most countMapSlots maps, and a map it does not
// know is kept as it is. A Packer holds one, which its store's compactors
// and readers share: a stored map is never changed.
type countMaps struct {
	mu   sync.Mutex
	seed maphash.Seed
	// slots is made on first use: a store that never stores a metric
	// (most tests' stores) holds none.
	slots *[countMapSlots]countMapSlot
	// key is scratch space for a map's canonical form.
	key []byte
}

// countMapSlot is one map of a countMaps and its canonical form.
type countMapSlot struct {
	key string
	m   map[string]int
}

const (
	// countMapSlots is the size of the cache of count maps.
	countMapSlots = 1 << 13
	// countMapMaxLen bounds the maps the cache takes: the count maps of a
	// placement name a dimension or a class or two.
	countMapMaxLen = 8
)

// newCountMaps returns an empty cache.
func newCountMaps() *countMaps { return &countMaps{seed: maphash.MakeSeed()} }

// countPair is one entry of a count map.
type countPair struct {
	k string
	v int
}

// intern returns a map equal to m: one the cache holds, or m itself,
// which it then holds.
func (c *countMaps) intern(m map[string]int) map[string]int {
	if len(m) > countMapMaxLen {
		return m
	}
	var buf [countMapMaxLen]countPair
	pairs := buf[:0]
	for k, v := range m {
		pairs = append(pairs, countPair{k, v})
	}
	return c.lookup(pairs, m)
}

// fromPairs returns a map of pairs (keys distinct, in any order; a key
// that repeats keeps its last value, as a map filled in order would): one
// the cache holds, or a new one, which it then holds. It sorts pairs.
func (c *countMaps) fromPairs(pairs []countPair) map[string]int {
	if len(pairs) > countMapMaxLen {
		m := make(map[string]int, len(pairs))
		for _, p := range pairs {
			m[p.k] = p.v
		}
		return m
	}
	return c.lookup(pairs, nil)
}

// lookup returns the map the cache holds for pairs, or else m (made from
// pairs when nil), which it then holds.
func (c *countMaps) lookup(pairs []countPair, m map[string]int) map[string]int {
	// Stable: of a key that repeats, the last pair is the map's value.
	slices.SortStableFunc(pairs, func(a, b countPair) int { return strings.Compare(a.k, b.k) })
	c.mu.Lock()
	defer c.mu.Unlock()
	key := c.key[:0]
	for i, p := range pairs {
		if i+1 < len(pairs) && pairs[i+1].k == p.k {
			continue
		}
		key = binary.AppendUvarint(key, uint64(len(p.k)))
		key = append(key, p.k...)
		key = binary.AppendVarint(key, int64(p.v))
	}
	c.key = key
	if c.slots == nil {
		c.slots = new([countMapSlots]countMapSlot)
	}
	s := &c.slots[maphash.Bytes(c.seed, key)%countMapSlots]
	if s.m != nil && s.key == string(key) {
		return s.m
	}
	if m == nil {
		m = make(map[string]int, len(pairs))
		for _, p := range pairs {
			m[p.k] = p.v
		}
	}
	*s = countMapSlot{key: string(key), m: m}
	return m
}

// sameMap reports whether a and b are the one map.
func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
