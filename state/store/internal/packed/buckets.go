package packed

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/schedhq/sched/state"
)

// The allocations table holds buckets, not allocations: a memdb row per
// bucket of allocations whose IDs share their first BucketKeyLen
// characters, each bucket a few sorted slices of pointers. A memdb row per
// allocation cost some 500 bytes of go-immutable-radix nodes, leaves and
// watch channels, and every write copied a path of them (issue 19); a
// bucket costs a pointer per allocation, and a write copies one bucket
// once per transaction. Allocation IDs are random UUIDs, so 3 hex
// characters make 4,096 buckets of ~250 allocations at a million, and the
// 16 parts of a bucket (by the fourth character) hold ~15 each: what a
// write copies.
//
// What memdb does for rows it does for buckets: a read transaction or a
// snapshot sees the buckets as they were, a write transaction's changes
// show only when it commits, an abort leaves nothing. The table's watch
// channels are per bucket: a listing by ID prefix wakes when any
// allocation of the buckets it read changes; a read of one allocation
// watches a channel of its own instead (alloc_watch.go).
//
// The store's alloc_table.go keeps the table (its memdb rows, reads and
// writes); this file the buckets. The table keeps its name: it is
// persisted in snapshots (as allocations, as before) and in the index
// table.
const (
	// BucketKeyLen is how many leading characters of an ID name its
	// bucket.
	BucketKeyLen = 3
	// bucketParts is how many sorted slices a bucket holds; partOf
	// maps an ID's next character to one.
	bucketParts = 16
)

// Bucket is one row of the allocations table: the allocations whose IDs start
// with Key (or, for an ID shorter than BucketKeyLen, are Key). Its
// parts, concatenated, list them in ID order. A stored bucket and its parts
// are never changed: a write transaction copies the bucket and each part it
// changes (Copy).
type Bucket struct {
	Key   string
	parts [bucketParts][]entry
	// n is how many allocations the parts hold.
	n int
	// owned marks, in a bucket a write transaction copied and has not
	// committed, the parts it copied too (and may change in place). It is
	// 0 in stored buckets.
	owned uint16
}

// entry is an allocation in its bucket's part, with its ID's sort
// key: a lookup's binary search compares the keys, which lie side by side
// in the part, and reads an allocation's ID only among the entries whose
// key equals the one it looks for (one, for UUIDs). Comparing IDs read
// through every probed allocation was two cache misses a probe, and a
// job's thousand allocations listed by ID cost a worker 7 µs per placement
// at a million allocations (issue 19).
type entry struct {
	key uint64
	a   *state.Allocation
}

// idSortKey is the big-endian number of the eight bytes of id after its
// bucket's key, zeros past its end. IDs of one bucket share that key, so
// a smaller sort key means a smaller ID; equal sort keys leave the order
// to the IDs.
func idSortKey(id string) uint64 {
	var k uint64
	for i := BucketKeyLen; i < BucketKeyLen+8; i++ {
		k <<= 8
		if i < len(id) {
			k |= uint64(id[i])
		}
	}
	return k
}

// searchPart returns where id is or would be in part, and whether it is.
func searchPart(part []entry, id string) (int, bool) {
	k := idSortKey(id)
	// By key, then, among equal keys, by ID: a probe reads an entry's
	// allocation only when the keys are equal (one entry, for UUIDs).
	// IDs that share their first 11 bytes (the scheduler harness's are
	// sequential numbers) are still found in log time, not by a walk
	// over every entry of the key.
	return slices.BinarySearchFunc(part, id, func(e entry, id string) int {
		if c := cmp.Compare(e.key, k); c != 0 {
			return c
		}
		return strings.Compare(e.a.ID, id)
	})
}

// BucketKey is the key of the bucket of the allocation id.
func BucketKey(id string) string {
	if len(id) > BucketKeyLen {
		return id[:BucketKeyLen]
	}
	return id
}

// partOf returns the part of its bucket that holds id. The mapping of the
// character after the key never decreases, so the parts in order list the
// IDs in order; it is one to one on hex digits.
func partOf(id string) int {
	if len(id) <= BucketKeyLen {
		return 0
	}
	switch c := id[BucketKeyLen]; {
	case c <= '0':
		return 0
	case c <= '9':
		return int(c - '0') // 1..9
	case c <= 'a':
		return 10
	case c <= 'f':
		return int(c-'a') + 10 // 11..15
	default:
		return 15
	}
}

// find returns where id is or would be in its part, and whether it is.
func (b *Bucket) find(id string) (part, i int, found bool) {
	part = partOf(id)
	i, found = searchPart(b.parts[part], id)
	return part, i, found
}

// NewBucket returns an empty bucket of key, to fill (Put, Load) before
// it is stored.
func NewBucket(key string) *Bucket { return &Bucket{Key: strings.Clone(key)} }

// Copy returns a write transaction's copy of b, a stored bucket: it
// shares b's parts until Put or Remove changes one (which copies it).
func (b *Bucket) Copy() *Bucket { return &Bucket{Key: b.Key, parts: b.parts, n: b.n} }

// Len is how many allocations b holds.
func (b *Bucket) Len() int { return b.n }

// Get returns the allocation id, or nil (also of a nil bucket).
func (b *Bucket) Get(id string) *state.Allocation {
	if b == nil {
		return nil
	}
	if p, i, found := b.find(id); found {
		return b.parts[p][i].a
	}
	return nil
}

// Each calls fn with the bucket's allocations whose IDs start with prefix,
// in ID order, until fn returns false; it returns false when fn did.
func (b *Bucket) Each(prefix string, fn func(*state.Allocation) bool) bool {
	from, to := 0, bucketParts-1
	if len(prefix) > BucketKeyLen {
		from = partOf(prefix)
		to = from
	}
	for p := from; p <= to; p++ {
		part := b.parts[p]
		i := 0
		if prefix != "" {
			i, _ = searchPart(part, prefix)
		}
		for ; i < len(part); i++ {
			if !strings.HasPrefix(part[i].a.ID, prefix) {
				break
			}
			if !fn(part[i].a) {
				return false
			}
		}
	}
	return true
}

// Put stores a in b, a write transaction's bucket (NewBucket, Copy),
// replacing the allocation of the same ID if any, and reports whether a
// is new to b.
func (b *Bucket) Put(a *state.Allocation) (added bool) {
	p, i, found := b.find(a.ID)
	if found {
		b.ownPart(p, 0)
		b.parts[p][i].a = a
		return false
	}
	b.ownPart(p, 1)
	b.parts[p] = slices.Insert(b.parts[p], i, entry{idSortKey(a.ID), a})
	b.n++
	return true
}

// Remove deletes the allocation id from b, a write transaction's bucket,
// and reports whether b held it.
func (b *Bucket) Remove(id string) bool {
	p, i, found := b.find(id)
	if !found {
		return false
	}
	b.ownPart(p, 0)
	b.parts[p] = slices.Delete(b.parts[p], i, i+1)
	b.n--
	return true
}

// Seal ends a write transaction's changes of b before it commits: its
// parts are not to change any more, and a part that grew past its length
// by more than an eighth gets a slice of its length.
func (b *Bucket) Seal() {
	if b.owned == 0 {
		return
	}
	for p := range b.parts {
		if b.owned&(1<<p) != 0 {
			b.parts[p] = trimmed(b.parts[p])
		}
	}
	b.owned = 0
}

// Load stores a in b, a bucket of a restore that nobody sees before the
// restore commits, in place: appended when it comes in ID order (a
// snapshot's allocations do), else inserted where it belongs, slower.
func (b *Bucket) Load(a *state.Allocation) {
	p := partOf(a.ID)
	part := b.parts[p]
	if len(part) == 0 || part[len(part)-1].a.ID < a.ID {
		b.parts[p] = append(part, entry{idSortKey(a.ID), a})
		b.n++
		return
	}
	i, found := searchPart(part, a.ID)
	if found {
		part[i].a = a
		return
	}
	b.parts[p] = slices.Insert(part, i, entry{idSortKey(a.ID), a})
	b.n++
}

// Trim gives every part of a loaded bucket a slice of its length, when
// it has more than an eighth to spare.
func (b *Bucket) Trim() {
	for p := range b.parts {
		b.parts[p] = trimmed(b.parts[p])
	}
}

// Check reports how b, a stored bucket, breaks the invariants of one: a
// count that is not its parts', parts out of ID order, parts still owned
// by a transaction, or no allocation at all.
func (b *Bucket) Check() error {
	k := 0
	for _, part := range b.parts {
		k += len(part)
		for i := 1; i < len(part); i++ {
			if part[i-1].a.ID >= part[i].a.ID {
				return fmt.Errorf("bucket %q: %q before %q", b.Key, part[i-1].a.ID, part[i].a.ID)
			}
		}
	}
	switch {
	case b.n == 0 || b.owned != 0:
		return fmt.Errorf("bucket %q stored with n=%d, owned=%b", b.Key, b.n, b.owned)
	case k != b.n:
		return fmt.Errorf("bucket %q holds %d allocations, counts %d", b.Key, k, b.n)
	}
	return nil
}

// ownPart makes part p of b, a bucket of this transaction, its own, with
// room for extra more allocations.
func (b *Bucket) ownPart(p, extra int) {
	if b.owned&(1<<p) != 0 {
		return
	}
	old := b.parts[p]
	b.parts[p] = make([]entry, len(old), len(old)+extra)
	copy(b.parts[p], old)
	b.owned |= 1 << p
}

// trimmed returns s, or a copy of it without its spare capacity when that
// is over an eighth of its length.
func trimmed[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	if cap(s)-len(s) > len(s)/8 {
		return slices.Clone(s)
	}
	return s
}
