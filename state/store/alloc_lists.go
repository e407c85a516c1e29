package store

import (
	"fmt"
	"slices"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// The allocations' lookups by node and by job are derived tables rather
// than memdb indexes: each row lists, for one node or one job, the sorted
// IDs of its allocations (live or terminal). A memdb index entry costs
// some 500 bytes per allocation (a radix leaf and node, their watch
// channels, the key); an ID in a list 16 bytes (the string data is the
// allocation's). Every write of an allocation keeps them in step
// (writeTxn.insert and delete), a restore rebuilds them (rebuildUsage),
// they are never persisted.
//
// A row is written again whenever one of its allocations is, so a read
// that watched it (a client's blocking query on its node's allocations,
// the deployment watcher on a job's) wakes on any change of them, as a
// watch on a memdb index did.
const (
	// TableNodeAllocs lists the allocations of each node, keyed by node
	// ID.
	TableNodeAllocs = "node_allocs"
	// TableJobAllocs lists the allocations of each job ID (whichever
	// instance of the job), keyed by jobAllocsKey.
	TableJobAllocs = "job_allocs"
)

// allocList is one row of TableNodeAllocs or TableJobAllocs: the IDs of
// its allocations in order, in chunks of at most maxListChunk. A stored
// row and its chunks are never changed: a write transaction copies the
// row and, of its chunks, only those it changes (see editAllocList), so
// adding an allocation to a node that holds hundreds copies a few dozen
// IDs rather than all of them.
type allocList struct {
	Key string
	// chunks are sorted, nonempty, and each one's IDs come before the
	// next one's.
	chunks []*idChunk
	n      int
	// serverIndex is the index of the last write that changed what the
	// servers decide of the row's allocations: one added or removed, or
	// written with a new AllocModifyIndex (placed, stopped, moved to a new
	// job version), not a client's report. After a restore it is the
	// highest AllocModifyIndex of the row. It is a client's blocking index
	// (NodeAllocsServerIndex).
	serverIndex uint64
	// writeIndex is the index of the last write of one of the row's
	// allocations, removals included; after a restore, the highest
	// ModifyIndex of the row.
	writeIndex uint64
	// changes is the log of a node's row (none for a job's), newest
	// first: every write of one of its allocations (placed, changed by the
	// servers or by a client's report, removed, moved off the node) at an
	// index above changesSince is in it, so that a reader that knows the
	// node's allocations as of an index reads what changed since in
	// proportion to the changes, not to the node's allocations
	// (NodeAllocsChangedSince). logged is false for a row a restore
	// built: it has no log, and its readers read the whole list. The log
	// is dropped when it outgrows the row (maxChangesSlack), and its
	// entries are shared by the row's later versions, never changed.
	changes      *listChange
	nChanges     int
	changesSince uint64
	logged       bool
}

// listChange is one entry of a node row's log: allocation id was written
// (or removed) at index.
type listChange struct {
	index uint64
	id    string
	next  *listChange
}

// maxChangesSlack bounds a node row's log: it is dropped, and begins
// again, when a write finds it longer than half the row's allocations
// plus this. A reader whose index is older than the log's start reads
// the whole list once; the log costs at most some 20 bytes per
// allocation.
const maxChangesSlack = 64

// idChunk is a run of a row's IDs, in order.
type idChunk struct {
	ids []string
	// owner is the write transaction that made the chunk and may still
	// change it (Store.listTxns); any other transaction copies it first.
	owner uint64
}

// maxListChunk bounds a chunk: a write copies one chunk of at most this
// many IDs, and the row's chunk pointers. A full chunk splits in two;
// a chunk left small by removals joins its neighbour when they fit.
const maxListChunk = 32

// len is the number of IDs in the row.
func (l *allocList) len() int { return l.n }

// each calls fn with the row's IDs in order until it returns false.
func (l *allocList) each(fn func(id string) bool) {
	for _, c := range l.chunks {
		for _, id := range c.ids {
			if !fn(id) {
				return
			}
		}
	}
}

// chunkFor is the index of the chunk id belongs in: the first whose last
// ID is not before it, or the last chunk.
func (l *allocList) chunkFor(id string) int {
	i := sort.Search(len(l.chunks), func(k int) bool {
		c := l.chunks[k].ids
		return c[len(c)-1] >= id
	})
	return min(i, len(l.chunks)-1)
}

// own makes chunk i changeable by transaction txn, copying it unless txn
// made it, with room for extra more IDs.
func (l *allocList) own(i int, txn uint64, extra int) *idChunk {
	c := l.chunks[i]
	if c.owner == txn {
		return c
	}
	ids := make([]string, len(c.ids), len(c.ids)+extra)
	copy(ids, c.ids)
	c = &idChunk{ids: ids, owner: txn}
	l.chunks[i] = c
	return c
}

// insert adds id, which the row does not hold, in its place. The row's
// chunk slice must be the transaction's own.
func (l *allocList) insert(id string, txn uint64) {
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, &idChunk{ids: []string{id}, owner: txn})
		l.n++
		return
	}
	i := l.chunkFor(id)
	c := l.own(i, txn, 1)
	at, _ := slices.BinarySearch(c.ids, id)
	c.ids = slices.Insert(c.ids, at, id)
	l.n++
	if len(c.ids) > maxListChunk {
		half := len(c.ids) / 2
		left := &idChunk{ids: slices.Clone(c.ids[:half]), owner: txn}
		right := &idChunk{ids: slices.Clone(c.ids[half:]), owner: txn}
		l.chunks[i] = left
		l.chunks = slices.Insert(l.chunks, i+1, right)
	}
}

// remove takes id out of the row and reports whether it was there. The
// row's chunk slice must be the transaction's own.
func (l *allocList) remove(id string, txn uint64) bool {
	if len(l.chunks) == 0 {
		return false
	}
	i := l.chunkFor(id)
	at, found := slices.BinarySearch(l.chunks[i].ids, id)
	if !found {
		return false
	}
	c := l.own(i, txn, 0)
	c.ids = slices.Delete(c.ids, at, at+1)
	l.n--
	switch {
	case len(c.ids) == 0:
		l.chunks = slices.Delete(l.chunks, i, i+1)
	case len(c.ids) < maxListChunk/4 && i+1 < len(l.chunks) && len(c.ids)+len(l.chunks[i+1].ids) <= maxListChunk:
		c.ids = append(c.ids, l.chunks[i+1].ids...)
		l.chunks = slices.Delete(l.chunks, i+1, i+2)
	}
	return true
}

// allocListTables are the tables' definitions (derived tables).
func allocListTables() []tableDef {
	def := func(name string) tableDef {
		return tableDef{
			name:    name,
			derived: true,
			indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*allocList).Key} }},
			newRow:  func() any { return new(allocList) },
		}
	}
	return []tableDef{def(TableNodeAllocs), def(TableJobAllocs)}
}

// jobAllocsKey is the key of a job's row in TableJobAllocs.
func jobAllocsKey(ns, jobID string) string { return ns + "\x00" + jobID }

// listedAllocs returns the allocations of the row key of table (a
// TableNodeAllocs or TableJobAllocs), ordered by ID, and adds the row to
// ws.
func listedAllocs(ws memdb.WatchSet, txn *memdb.Txn, table, key string) ([]*state.Allocation, error) {
	row, err := first[*allocList](ws, txn, table, indexID, key)
	if err != nil || row == nil {
		return nil, err
	}
	out := make([]*state.Allocation, 0, row.len())
	err = row.eachAlloc(txn, table, func(a *state.Allocation) bool {
		out = append(out, a)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachListedAlloc calls fn with the allocations of the row key of table,
// in ID order, until fn returns false: for a question that the first few
// answer, without looking every allocation up.
func eachListedAlloc(txn *memdb.Txn, table, key string, fn func(*state.Allocation) bool) error {
	row, err := first[*allocList](nil, txn, table, indexID, key)
	if err != nil || row == nil {
		return err
	}
	return row.eachAlloc(txn, table, fn)
}

// eachAlloc looks up in txn the allocations of row, a row of table, and
// calls fn with each in ID order until it returns false.
func (l *allocList) eachAlloc(txn *memdb.Txn, table string, fn func(*state.Allocation) bool) error {
	var err error
	l.each(func(id string) bool {
		var a *state.Allocation
		if a, err = getAlloc(nil, txn, id); err == nil && a == nil {
			err = fmt.Errorf("%s %q: allocation %s is listed but not stored", table, l.Key, id)
		}
		return err == nil && fn(a)
	})
	return err
}

// allocsOnNode lists the allocations on a node, ordered by ID.
func allocsOnNode(ws memdb.WatchSet, txn *memdb.Txn, nodeID string) ([]*state.Allocation, error) {
	return listedAllocs(ws, txn, TableNodeAllocs, nodeID)
}

// allocsOfJob lists every allocation of a job ID, whichever instance of
// the job it belongs to, ordered by ID.
func allocsOfJob(ws memdb.WatchSet, txn *memdb.Txn, ns, jobID string) ([]*state.Allocation, error) {
	return listedAllocs(ws, txn, TableJobAllocs, jobAllocsKey(ns, jobID))
}

// hasLiveAllocIn reports whether a live allocation is in the row key of
// table.
func hasLiveAllocIn(txn *memdb.Txn, table, key string) (bool, error) {
	live := false
	err := eachListedAlloc(txn, table, key, func(a *state.Allocation) bool {
		live = !a.Terminal()
		return !live
	})
	return live, err
}

// allocListsTxn holds the rows of the list tables one write transaction
// has written: they are not visible outside it until it commits, so it
// changes them (and the chunks it copied) in place rather than copying a
// job's list for each of the thousand allocations a plan writes, and
// writes each to its table once (the rows it has not written are read in
// writeTxn.baseTxn). inTable marks the rows in the transaction's table (a
// row emptied is deleted from it, and kept here empty). id is the
// transaction's number (Store.listTxns).
type allocListsTxn struct {
	rows    map[listKey]*allocList
	inTable map[*allocList]bool
	id      uint64
}

// listKey names a row of one of the list tables.
type listKey struct{ table, key string }

// trackAllocLists moves an allocation's ID from old's node and job rows to
// new's (either may be nil), and writes the rows again when it stays.
func (t *writeTxn) trackAllocLists(old, new *state.Allocation) error {
	keys := func(a *state.Allocation) [2]listKey {
		return [2]listKey{{TableNodeAllocs, a.NodeID}, {TableJobAllocs, jobAllocsKey(a.Namespace, a.JobID)}}
	}
	switch {
	case new == nil:
		for _, k := range keys(old) {
			if err := t.editAllocList(k, old.ID, -1, true); err != nil {
				return err
			}
		}
	case old == nil:
		for _, k := range keys(new) {
			if err := t.editAllocList(k, new.ID, +1, true); err != nil {
				return err
			}
		}
	default:
		was, is := keys(old), keys(new)
		byServer := new.AllocModifyIndex != old.AllocModifyIndex
		for i := range is {
			op := 0
			if was[i] != is[i] {
				if err := t.editAllocList(was[i], old.ID, -1, true); err != nil {
					return err
				}
				op = +1
			}
			if err := t.editAllocList(is[i], new.ID, op, byServer || op != 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// editAllocList adds (op +1; id is not listed yet), removes (-1) or keeps
// (0) id in the row k, writing the row in this transaction (deleting it
// once empty). byServer says the write is the servers' (see
// allocList.serverIndex).
func (t *writeTxn) editAllocList(k listKey, id string, op int, byServer bool) error {
	if t.lists.rows == nil {
		t.lists = allocListsTxn{rows: map[listKey]*allocList{}, inTable: map[*allocList]bool{}, id: t.listTxns.Add(1)}
	}
	row, mine := t.lists.rows[k]
	if !mine {
		stored, err := first[*allocList](nil, t.baseTxn(), k.table, indexID, k.key)
		if err != nil {
			return err
		}
		row = &allocList{Key: k.key}
		if k.table == TableNodeAllocs {
			// The log starts here unless the stored row's covers it.
			row.logged, row.changesSince = true, t.index-1
			if stored != nil && stored.logged && stored.nChanges <= stored.n/2+maxChangesSlack {
				row.changes, row.nChanges, row.changesSince = stored.changes, stored.nChanges, stored.changesSince
			}
		}
		if stored != nil {
			row.chunks, row.n, row.serverIndex, row.writeIndex = slices.Clone(stored.chunks), stored.n, stored.serverIndex, stored.writeIndex
			// Written again even if unchanged: a read that watched the
			// row wakes whenever one of its allocations is written.
			if err := t.Insert(k.table, row); err != nil {
				return fmt.Errorf("%s %q: %w", k.table, k.key, err)
			}
			t.lists.inTable[row] = true
		}
		t.lists.rows[k] = row
	}
	if byServer {
		row.serverIndex = t.index
	}
	switch {
	case op > 0:
		row.insert(id, t.lists.id)
	case op < 0:
		if !row.remove(id, t.lists.id) {
			return nil
		}
	}
	row.writeIndex = t.index
	if row.logged {
		row.changes = &listChange{index: t.index, id: id, next: row.changes}
		row.nChanges++
	}
	switch {
	case row.len() == 0 && t.lists.inTable[row]:
		t.lists.inTable[row] = false
		if err := t.Delete(k.table, row); err != nil {
			return fmt.Errorf("%s %q: %w", k.table, k.key, err)
		}
	case row.len() > 0 && !t.lists.inTable[row]:
		t.lists.inTable[row] = true
		if err := t.Insert(k.table, row); err != nil {
			return fmt.Errorf("%s %q: %w", k.table, k.key, err)
		}
	}
	return nil
}

// finishAllocLists ends the transaction's hold on the rows it wrote,
// before they are committed.
func (r *txnRows) finishAllocLists() {
	r.lists = allocListsTxn{}
}

// rebuildAllocLists computes the list tables from the allocations (after
// a restore).
func rebuildAllocLists(txn *memdb.Txn) error {
	// IDs come in order: each row's chunks are filled to three quarters,
	// leaving room for a few placements before a chunk splits.
	const fill = maxListChunk * 3 / 4
	rows := map[listKey]*allocList{}
	add := func(k listKey, a *state.Allocation) {
		row := rows[k]
		if row == nil {
			row = &allocList{Key: k.key}
			rows[k] = row
		}
		row.serverIndex = max(row.serverIndex, a.AllocModifyIndex)
		row.writeIndex = max(row.writeIndex, a.ModifyIndex)
		id := a.ID
		if n := len(row.chunks); n == 0 || len(row.chunks[n-1].ids) == fill {
			row.chunks = append(row.chunks, &idChunk{ids: make([]string, 0, fill)})
		}
		c := row.chunks[len(row.chunks)-1]
		c.ids = append(c.ids, id)
		row.n++
	}
	err := eachAlloc(nil, txn, "", func(a *state.Allocation) bool {
		add(listKey{TableNodeAllocs, a.NodeID}, a)
		add(listKey{TableJobAllocs, jobAllocsKey(a.Namespace, a.JobID)}, a)
		return true
	})
	if err != nil {
		return err
	}
	for k, row := range rows {
		row.chunks = slices.Clip(row.chunks)
		if err := txn.Insert(k.table, row); err != nil {
			return err
		}
	}
	return nil
}
