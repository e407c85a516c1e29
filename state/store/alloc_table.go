package store

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// The allocations table holds buckets of allocations (packed.Bucket), a
// memdb row per bucket of the allocations whose IDs share their first
// packed.BucketKeyLen characters, not a row per allocation: what memdb
// does for rows it does for buckets (a read transaction or a snapshot
// sees them as they were, a write transaction's changes show only when it
// commits, an abort leaves nothing), and the table's watch channels are
// per bucket; a read of one allocation watches a channel of its own
// instead (alloc_watch.go).
//
// Every read and write of an allocation goes through this file: getAlloc
// and eachAlloc for any transaction, writeTxn.allocByID, putAlloc and
// removeAlloc in a command, allocLoader in a restore. The table keeps its
// name: it is persisted in snapshots (as allocations, as before) and in
// the index table.

// allocTableDef is the table's definition: its rows are buckets, and a
// snapshot's rows (newRow) are allocations, which Restore puts in buckets.
func allocTableDef() tableDef {
	return tableDef{
		name:    TableAllocs,
		indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*packed.Bucket).Key} }},
		newRow:  func() any { return new(state.Allocation) },
	}
}

// getAlloc returns the allocation id as txn sees it, or nil, and adds its
// bucket's watch channel to ws.
func getAlloc(ws memdb.WatchSet, txn *memdb.Txn, id string) (*state.Allocation, error) {
	b, err := first[*packed.Bucket](ws, txn, TableAllocs, indexID, packed.BucketKey(id))
	if err != nil {
		return nil, err
	}
	return b.Get(id), nil
}

// eachAlloc calls fn with the allocations whose IDs start with prefix
// ("" for all), in ID order, until fn returns false. It reads only the
// buckets that can hold such IDs, and adds their watch channel to ws.
func eachAlloc(ws memdb.WatchSet, txn *memdb.Txn, prefix string, fn func(*state.Allocation) bool) error {
	if len(prefix) >= packed.BucketKeyLen {
		b, err := first[*packed.Bucket](ws, txn, TableAllocs, indexID, prefix[:packed.BucketKeyLen])
		if err != nil || b == nil {
			return err
		}
		b.Each(prefix, fn)
		return nil
	}
	iter, err := txn.Get(TableAllocs, indexID+"_prefix", prefixArg(prefix))
	if err != nil {
		return fmt.Errorf("read %s: %w", TableAllocs, err)
	}
	watch(ws, iter.WatchCh())
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if !raw.(*packed.Bucket).Each(prefix, fn) {
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
	buckets map[string]*packed.Bucket
	// last is the stored bucket read last, under the key lastKey (when
	// read is set): a write of an allocation reads its bucket two or three
	// times before it copies it.
	lastKey string
	last    *packed.Bucket
	read    bool
}

// storedBucket returns the committed bucket key, or nil.
func (t *writeTxn) storedBucket(key string) (*packed.Bucket, error) {
	if t.allocs.read && t.allocs.lastKey == key {
		return t.allocs.last, nil
	}
	b, err := first[*packed.Bucket](nil, t.baseTxn(), TableAllocs, indexID, key)
	if err != nil {
		return nil, err
	}
	t.allocs.lastKey, t.allocs.last, t.allocs.read = key, b, true
	return b, nil
}

// allocByID returns the allocation id as this transaction has it, or nil.
func (t *writeTxn) allocByID(id string) (*state.Allocation, error) {
	key := packed.BucketKey(id)
	if b, ok := t.allocs.buckets[key]; ok {
		return b.Get(id), nil
	}
	b, err := t.storedBucket(key)
	if err != nil {
		return nil, err
	}
	return b.Get(id), nil
}

// ownBucket returns this transaction's copy of the bucket key, making it
// on first use (and writing it over the stored one); with create unset,
// nil when there is no such bucket. A bucket it makes has no allocation
// yet: putAlloc writes it to the table with its first.
func (t *writeTxn) ownBucket(key string, create bool) (*packed.Bucket, error) {
	if b, ok := t.allocs.buckets[key]; ok {
		return b, nil
	}
	stored, err := t.storedBucket(key)
	if err != nil || (stored == nil && !create) {
		return nil, err
	}
	var b *packed.Bucket
	if stored == nil {
		b = packed.NewBucket(key)
	} else {
		b = stored.Copy()
		if err := t.Insert(TableAllocs, b); err != nil {
			return nil, fmt.Errorf("insert into %s: %w", TableAllocs, err)
		}
	}
	if t.allocs.buckets == nil {
		t.allocs.buckets = map[string]*packed.Bucket{}
	}
	t.allocs.buckets[b.Key] = b
	return b, nil
}

// putAlloc stores a, replacing the allocation of the same ID if any. It
// maintains nothing else: writeTxn.insert does.
func (t *writeTxn) putAlloc(a *state.Allocation) error {
	b, err := t.ownBucket(packed.BucketKey(a.ID), true)
	if err != nil {
		return err
	}
	if b.Put(a) && b.Len() == 1 {
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
	b, err := t.ownBucket(packed.BucketKey(id), false)
	if err != nil || b == nil {
		return err
	}
	if b.Remove(id) && b.Len() == 0 {
		if err := t.Delete(TableAllocs, b); err != nil {
			return fmt.Errorf("delete from %s: %w", TableAllocs, err)
		}
	}
	return nil
}

// finishAllocTable seals the buckets this transaction wrote before it
// commits (packed.Bucket.Seal).
func (r *txnRows) finishAllocTable() {
	for _, b := range r.allocs.buckets {
		b.Seal()
	}
	r.allocs.buckets = nil
}

// allocLoader fills the allocations table of a restore, whose allocations
// come in ID order (Persist writes them so): each bucket is built by
// appending, and written to the table once, when the next one starts. An
// allocation out of order is inserted where it belongs, slower.
type allocLoader struct {
	txn *memdb.Txn
	cur *packed.Bucket
}

// add stores a.
func (l *allocLoader) add(a *state.Allocation) error {
	key := packed.BucketKey(a.ID)
	if l.cur != nil && l.cur.Key == key {
		l.cur.Load(a)
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
		l.cur = packed.NewBucket(key)
		l.cur.Load(a)
		return nil
	}
	// Out of order: the bucket was written already. Nobody sees the
	// restore's buckets before it commits, so it changes in place.
	raw.(*packed.Bucket).Load(a)
	return nil
}

// flush writes the bucket being built.
func (l *allocLoader) flush() error {
	if l.cur == nil {
		return nil
	}
	l.cur.Trim()
	if err := l.txn.Insert(TableAllocs, l.cur); err != nil {
		return fmt.Errorf("insert into %s: %w", TableAllocs, err)
	}
	l.cur = nil
	return nil
}
