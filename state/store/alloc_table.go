package store

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// The allocations table holds buckets, not allocations: a memdb row per
// bucket of allocations whose IDs share their first allocBucketKeyLen
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
// Every read and write of an allocation goes through this file: getAlloc
// and eachAlloc for any transaction, writeTxn.allocByID, putAlloc and
// removeAlloc in a command, allocLoader in a restore. The table keeps its
// name: it is persisted in snapshots (as allocations, as before) and in
// the index table.
const (
	// allocBucketKeyLen is how many leading characters of an ID name its
	// bucket.
	allocBucketKeyLen = 3
	// allocBucketParts is how many sorted slices a bucket holds; partOf
	// maps an ID's next character to one.
	allocBucketParts = 16
)

// allocBucket is one row of TableAllocs: the allocations whose IDs start
// with Key (or, for an ID shorter than allocBucketKeyLen, are Key). Its
// parts, concatenated, list them in ID order. A stored bucket and its parts
// are never changed: a write transaction copies the bucket and each part it
// changes (writeTxn.ownBucket).
type allocBucket struct {
	Key   string
	parts [allocBucketParts][]allocEntry
	// n is how many allocations the parts hold.
	n int
	// owned marks, in a bucket a write transaction copied and has not
	// committed, the parts it copied too (and may change in place). It is
	// 0 in stored buckets.
	owned uint16
}

// allocEntry is an allocation in its bucket's part, with its ID's sort
// key: a lookup's binary search compares the keys, which lie side by side
// in the part, and reads an allocation's ID only among the entries whose
// key equals the one it looks for (one, for UUIDs). Comparing IDs read
// through every probed allocation was two cache misses a probe, and a
// job's thousand allocations listed by ID cost a worker 7 µs per placement
// at a million allocations (issue 19).
type allocEntry struct {
	key uint64
	a   *state.Allocation
}

// idSortKey is the big-endian number of the eight bytes of id after its
// bucket's key, zeros past its end. IDs of one bucket share that key, so
// a smaller sort key means a smaller ID; equal sort keys leave the order
// to the IDs.
func idSortKey(id string) uint64 {
	var k uint64
	for i := allocBucketKeyLen; i < allocBucketKeyLen+8; i++ {
		k <<= 8
		if i < len(id) {
			k |= uint64(id[i])
		}
	}
	return k
}

// searchPart returns where id is or would be in part, and whether it is.
func searchPart(part []allocEntry, id string) (int, bool) {
	k := idSortKey(id)
	// By key, then, among equal keys, by ID: a probe reads an entry's
	// allocation only when the keys are equal (one entry, for UUIDs).
	// IDs that share their first 11 bytes (the scheduler harness's are
	// sequential numbers) are still found in log time, not by a walk
	// over every entry of the key.
	return slices.BinarySearchFunc(part, id, func(e allocEntry, id string) int {
		if c := cmp.Compare(e.key, k); c != 0 {
			return c
		}
		return strings.Compare(e.a.ID, id)
	})
}

// allocBucketKey is the key of the bucket of the allocation id.
func allocBucketKey(id string) string {
	if len(id) > allocBucketKeyLen {
		return id[:allocBucketKeyLen]
	}
	return id
}

// partOf returns the part of its bucket that holds id. The mapping of the
// character after the key never decreases, so the parts in order list the
// IDs in order; it is one to one on hex digits.
func partOf(id string) int {
	if len(id) <= allocBucketKeyLen {
		return 0
	}
	switch c := id[allocBucketKeyLen]; {
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
func (b *allocBucket) find(id string) (part, i int, found bool) {
	part = partOf(id)
	i, found = searchPart(b.parts[part], id)
	return part, i, found
}

// get returns the allocation id, or nil.
func (b *allocBucket) get(id string) *state.Allocation {
	if b == nil {
		return nil
	}
	if p, i, found := b.find(id); found {
		return b.parts[p][i].a
	}
	return nil
}

// each calls fn with the bucket's allocations whose IDs start with prefix,
// in ID order, until fn returns false; it returns false when fn did.
func (b *allocBucket) each(prefix string, fn func(*state.Allocation) bool) bool {
	from, to := 0, allocBucketParts-1
	if len(prefix) > allocBucketKeyLen {
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

// allocTableDef is the table's definition: its rows are buckets, and a
// snapshot's rows (newRow) are allocations, which Restore puts in buckets.
func allocTableDef() tableDef {
	return tableDef{
		name:    TableAllocs,
		indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*allocBucket).Key} }},
		newRow:  func() any { return new(state.Allocation) },
	}
}

// getAlloc returns the allocation id as txn sees it, or nil, and adds its
// bucket's watch channel to ws.
func getAlloc(ws memdb.WatchSet, txn *memdb.Txn, id string) (*state.Allocation, error) {
	b, err := first[*allocBucket](ws, txn, TableAllocs, indexID, allocBucketKey(id))
	if err != nil {
		return nil, err
	}
	return b.get(id), nil
}

// eachAlloc calls fn with the allocations whose IDs start with prefix
// ("" for all), in ID order, until fn returns false. It reads only the
// buckets that can hold such IDs, and adds their watch channel to ws.
func eachAlloc(ws memdb.WatchSet, txn *memdb.Txn, prefix string, fn func(*state.Allocation) bool) error {
	if len(prefix) >= allocBucketKeyLen {
		b, err := first[*allocBucket](ws, txn, TableAllocs, indexID, prefix[:allocBucketKeyLen])
		if err != nil || b == nil {
			return err
		}
		b.each(prefix, fn)
		return nil
	}
	iter, err := txn.Get(TableAllocs, indexID+"_prefix", prefixArg(prefix))
	if err != nil {
		return fmt.Errorf("read %s: %w", TableAllocs, err)
	}
	watch(ws, iter.WatchCh())
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if !raw.(*allocBucket).each(prefix, fn) {
			return nil
		}
	}
	return nil
}

// tableRows calls fn with every row of table in the order of its ID index:
// the allocations themselves for TableAllocs.
func tableRows(txn *memdb.Txn, table string, fn func(any) error) error {
	if table == TableAllocs {
		var err error
		if e := eachAlloc(nil, txn, "", func(a *state.Allocation) bool { err = fn(a); return err == nil }); e != nil {
			return e
		}
		return err
	}
	iter, err := txn.Get(table, indexID)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	for row := iter.Next(); row != nil; row = iter.Next() {
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

// allocTableTxn is what one write transaction holds of the allocations
// table: the buckets it copied (by key; n is 0 in a bucket it emptied and
// deleted), which it changes in place until it commits. The buckets it
// has not copied are read in writeTxn.baseTxn.
type allocTableTxn struct {
	buckets map[string]*allocBucket
	// last is the stored bucket read last, under the key lastKey (when
	// read is set): a write of an allocation reads its bucket two or three
	// times before it copies it.
	lastKey string
	last    *allocBucket
	read    bool
}

// storedBucket returns the committed bucket key, or nil.
func (t *writeTxn) storedBucket(key string) (*allocBucket, error) {
	if t.allocs.read && t.allocs.lastKey == key {
		return t.allocs.last, nil
	}
	b, err := first[*allocBucket](nil, t.baseTxn(), TableAllocs, indexID, key)
	if err != nil {
		return nil, err
	}
	t.allocs.lastKey, t.allocs.last, t.allocs.read = key, b, true
	return b, nil
}

// allocByID returns the allocation id as this transaction has it, or nil.
func (t *writeTxn) allocByID(id string) (*state.Allocation, error) {
	key := allocBucketKey(id)
	if b, ok := t.allocs.buckets[key]; ok {
		return b.get(id), nil
	}
	b, err := t.storedBucket(key)
	if err != nil {
		return nil, err
	}
	return b.get(id), nil
}

// ownBucket returns this transaction's copy of the bucket key, making it
// on first use (and writing it over the stored one); with create unset,
// nil when there is no such bucket. A bucket it makes has no allocation
// yet: putAlloc writes it to the table with its first.
func (t *writeTxn) ownBucket(key string, create bool) (*allocBucket, error) {
	if b, ok := t.allocs.buckets[key]; ok {
		return b, nil
	}
	stored, err := t.storedBucket(key)
	if err != nil || (stored == nil && !create) {
		return nil, err
	}
	b := &allocBucket{Key: strings.Clone(key)}
	if stored != nil {
		b.Key, b.parts, b.n = stored.Key, stored.parts, stored.n
		if err := t.Insert(TableAllocs, b); err != nil {
			return nil, fmt.Errorf("insert into %s: %w", TableAllocs, err)
		}
	}
	if t.allocs.buckets == nil {
		t.allocs.buckets = map[string]*allocBucket{}
	}
	t.allocs.buckets[b.Key] = b
	return b, nil
}

// ownPart makes part p of b, a bucket of this transaction, its own, with
// room for extra more allocations.
func (b *allocBucket) ownPart(p, extra int) {
	if b.owned&(1<<p) != 0 {
		return
	}
	old := b.parts[p]
	b.parts[p] = make([]allocEntry, len(old), len(old)+extra)
	copy(b.parts[p], old)
	b.owned |= 1 << p
}

// putAlloc stores a, replacing the allocation of the same ID if any. It
// maintains nothing else: writeTxn.insert does.
func (t *writeTxn) putAlloc(a *state.Allocation) error {
	b, err := t.ownBucket(allocBucketKey(a.ID), true)
	if err != nil {
		return err
	}
	p, i, found := b.find(a.ID)
	if found {
		b.ownPart(p, 0)
		b.parts[p][i].a = a
		return nil
	}
	b.ownPart(p, 1)
	b.parts[p] = slices.Insert(b.parts[p], i, allocEntry{idSortKey(a.ID), a})
	b.n++
	if b.n == 1 {
		// A new bucket, or one this transaction emptied.
		if err := t.Insert(TableAllocs, b); err != nil {
			return fmt.Errorf("insert into %s: %w", TableAllocs, err)
		}
	}
	return nil
}

// removeAlloc deletes the allocation id, if stored, deleting its bucket
// once empty.
func (t *writeTxn) removeAlloc(id string) error {
	b, err := t.ownBucket(allocBucketKey(id), false)
	if err != nil || b == nil {
		return err
	}
	p, i, found := b.find(id)
	if !found {
		return nil
	}
	b.ownPart(p, 0)
	b.parts[p] = slices.Delete(b.parts[p], i, i+1)
	b.n--
	if b.n == 0 {
		if err := t.Delete(TableAllocs, b); err != nil {
			return fmt.Errorf("delete from %s: %w", TableAllocs, err)
		}
	}
	return nil
}

// finishAllocTable seals the buckets this transaction wrote before it
// commits: their parts are not to change any more, and a part that grew
// past its length by more than an eighth gets a slice of its length.
func (r *txnRows) finishAllocTable() {
	for _, b := range r.allocs.buckets {
		if b.owned == 0 {
			continue
		}
		for p := range b.parts {
			if b.owned&(1<<p) != 0 {
				b.parts[p] = trimmed(b.parts[p])
			}
		}
		b.owned = 0
	}
	r.allocs.buckets = nil
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

// allocLoader fills the allocations table of a restore, whose allocations
// come in ID order (Persist writes them so): each bucket is built by
// appending, and written to the table once, when the next one starts. An
// allocation out of order is inserted where it belongs, slower.
type allocLoader struct {
	txn *memdb.Txn
	cur *allocBucket
	// last is the last allocation appended to cur.
	last *state.Allocation
}

// add stores a.
func (l *allocLoader) add(a *state.Allocation) error {
	key := allocBucketKey(a.ID)
	if l.cur != nil && l.cur.Key == key && a.ID > l.last.ID {
		p := partOf(a.ID)
		l.cur.parts[p] = append(l.cur.parts[p], allocEntry{idSortKey(a.ID), a})
		l.cur.n++
		l.last = a
		return nil
	}
	if err := l.flush(); err != nil {
		return err
	}
	raw, err := l.txn.First(TableAllocs, indexID, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", TableAllocs, err)
	}
	if raw == nil {
		l.cur = &allocBucket{Key: strings.Clone(key)}
		p := partOf(a.ID)
		l.cur.parts[p] = append(l.cur.parts[p], allocEntry{idSortKey(a.ID), a})
		l.cur.n, l.last = 1, a
		return nil
	}
	// Out of order: the bucket was written already. Nobody sees the
	// restore's buckets before it commits, so it changes in place.
	b := raw.(*allocBucket)
	p, i, found := b.find(a.ID)
	if found {
		b.parts[p][i].a = a
		return nil
	}
	b.parts[p] = slices.Insert(b.parts[p], i, allocEntry{idSortKey(a.ID), a})
	b.n++
	return nil
}

// flush writes the bucket being built.
func (l *allocLoader) flush() error {
	if l.cur == nil {
		return nil
	}
	for p := range l.cur.parts {
		l.cur.parts[p] = trimmed(l.cur.parts[p])
	}
	if err := l.txn.Insert(TableAllocs, l.cur); err != nil {
		return fmt.Errorf("insert into %s: %w", TableAllocs, err)
	}
	l.cur, l.last = nil, nil
	return nil
}
