package store

import (
	"fmt"
	"slices"

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

// allocList is one row of TableNodeAllocs or TableJobAllocs. A stored row
// and its IDs are never changed: a write copies them (see allocListsTxn).
type allocList struct {
	Key string
	// IDs are sorted, except in a row of the write transaction that made
	// it while unsorted is set (sortedIDs sorts them).
	IDs      []string
	unsorted bool
	// sortedTo is, in a row of the write transaction that made it, the
	// length of the sorted prefix of IDs (the IDs it started from); the
	// IDs after it were appended in any order. It is 0 in stored rows,
	// which are sorted whole.
	sortedTo int
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

// sortedIDs returns the row's IDs in order. Only the write transaction
// that owns an unsorted row sees it, so sorting it in place is safe.
//
// Only the appended IDs are sorted, then merged with the sorted prefix: a
// plan adds one or a few IDs to each of its nodes' lists, and sorting a
// node's whole list for each was most of the cost of a placement on a
// node that already held hundreds.
func (l *allocList) sortedIDs() []string {
	if l.unsorted {
		head, tail := l.IDs[:l.sortedTo], l.IDs[l.sortedTo:]
		slices.Sort(tail)
		if len(head) > 0 && len(tail) > 0 && head[len(head)-1] > tail[0] {
			// Merged in place from the back: only the (few) appended IDs
			// are copied aside, not the row's list.
			added := slices.Clone(tail)
			i, j := len(head)-1, len(added)-1
			for w := len(l.IDs) - 1; j >= 0; w-- {
				if i >= 0 && l.IDs[i] > added[j] {
					l.IDs[w] = l.IDs[i]
					i--
				} else {
					l.IDs[w] = added[j]
					j--
				}
			}
		}
		l.unsorted = false
		l.sortedTo = len(l.IDs)
	}
	return l.IDs
}

// listedAllocs returns the allocations of the row key of table (a
// TableNodeAllocs or TableJobAllocs), ordered by ID, and adds the row to
// ws.
func listedAllocs(ws memdb.WatchSet, txn *memdb.Txn, table, key string) ([]*state.Allocation, error) {
	row, err := first[*allocList](ws, txn, table, indexID, key)
	if err != nil || row == nil {
		return nil, err
	}
	ids := row.sortedIDs()
	out := make([]*state.Allocation, 0, len(ids))
	for _, id := range ids {
		a, err := getAlloc(nil, txn, id)
		if err != nil {
			return nil, err
		}
		if a == nil {
			return nil, fmt.Errorf("%s %q: allocation %s is listed but not stored", table, key, id)
		}
		out = append(out, a)
	}
	return out, nil
}

// eachListedAlloc calls fn with the allocations of the row key of table,
// in no particular order, until fn returns false: for a question that the
// first few answer, without looking every allocation up.
func eachListedAlloc(txn *memdb.Txn, table, key string, fn func(*state.Allocation) bool) error {
	row, err := first[*allocList](nil, txn, table, indexID, key)
	if err != nil || row == nil {
		return err
	}
	for _, id := range row.IDs {
		a, err := getAlloc(nil, txn, id)
		if err != nil {
			return err
		}
		if a == nil {
			return fmt.Errorf("%s %q: allocation %s is listed but not stored", table, key, id)
		}
		if !fn(a) {
			return nil
		}
	}
	return nil
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
// changes them in place rather than copying a job's list for each of the
// thousand allocations a plan writes, and writes each to its table once
// (the rows it has not written are read in writeTxn.baseTxn). owned marks
// the rows whose IDs slice was made in this transaction (the others share
// theirs with the stored row); inTable those in the transaction's table
// (a row emptied is deleted from it, and kept here empty).
type allocListsTxn struct {
	rows    map[listKey]*allocList
	owned   map[*allocList]bool
	inTable map[*allocList]bool
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
			if err := t.editAllocList(k, old.ID, -1); err != nil {
				return err
			}
		}
	case old == nil:
		for _, k := range keys(new) {
			if err := t.editAllocList(k, new.ID, +1); err != nil {
				return err
			}
		}
	default:
		was, is := keys(old), keys(new)
		for i := range is {
			op := 0
			if was[i] != is[i] {
				if err := t.editAllocList(was[i], old.ID, -1); err != nil {
					return err
				}
				op = +1
			}
			if err := t.editAllocList(is[i], new.ID, op); err != nil {
				return err
			}
		}
	}
	return nil
}

// editAllocList adds (op +1; id is not listed yet), removes (-1) or keeps
// (0) id in the row k, writing the row in this transaction (deleting it
// once empty).
func (t *writeTxn) editAllocList(k listKey, id string, op int) error {
	if t.lists.rows == nil {
		t.lists = allocListsTxn{rows: map[listKey]*allocList{}, owned: map[*allocList]bool{}, inTable: map[*allocList]bool{}}
	}
	row, mine := t.lists.rows[k]
	if !mine {
		stored, err := first[*allocList](nil, t.baseTxn(), k.table, indexID, k.key)
		if err != nil {
			return err
		}
		row = &allocList{Key: k.key}
		if stored != nil {
			row.IDs = stored.IDs
			// Written again even if unchanged: a read that watched the
			// row wakes whenever one of its allocations is written.
			if err := t.Insert(k.table, row); err != nil {
				return fmt.Errorf("%s %q: %w", k.table, k.key, err)
			}
			t.lists.inTable[row] = true
		}
		t.lists.rows[k] = row
	}
	own := func(extra int) {
		if !t.lists.owned[row] {
			ids := make([]string, len(row.IDs), len(row.IDs)+extra)
			copy(ids, row.IDs)
			row.IDs = ids
			row.sortedTo = len(ids) // a stored row is sorted
			t.lists.owned[row] = true
		}
	}
	switch {
	case op > 0:
		// Room for a few more: a plan adds one or a few IDs to each of
		// its nodes' lists, and a list that grew by doubling would be
		// copied again at commit (finishAllocLists).
		own(1 + len(row.IDs)/16)
		// Appended, sorted at commit or at the next read: a plan adds a
		// thousand IDs at random places of its job's list.
		if n := len(row.IDs); n > 0 && row.IDs[n-1] > id {
			row.unsorted = true
		}
		row.IDs = append(row.IDs, id)
		if !row.unsorted {
			row.sortedTo = len(row.IDs)
		}
	case op < 0:
		i, found := slices.BinarySearch(row.sortedIDs(), id)
		if !found {
			return nil
		}
		own(0)
		row.IDs = slices.Delete(row.IDs, i, i+1)
		row.sortedTo = len(row.IDs)
	}
	switch {
	case len(row.IDs) == 0 && t.lists.inTable[row]:
		t.lists.inTable[row] = false
		if err := t.Delete(k.table, row); err != nil {
			return fmt.Errorf("%s %q: %w", k.table, k.key, err)
		}
	case len(row.IDs) > 0 && !t.lists.inTable[row]:
		t.lists.inTable[row] = true
		if err := t.Insert(k.table, row); err != nil {
			return fmt.Errorf("%s %q: %w", k.table, k.key, err)
		}
	}
	return nil
}

// finishAllocLists sorts the rows this transaction changed and gives those
// it grew a list of their length, before they are committed: a row keeps
// its list until it is next written.
func (t *writeTxn) finishAllocLists() {
	for row := range t.lists.owned {
		row.sortedIDs()
		row.sortedTo = 0
		if cap(row.IDs)-len(row.IDs) > len(row.IDs)/8 {
			row.IDs = slices.Clone(row.IDs)
		}
	}
}

// rebuildAllocLists computes the list tables from the allocations (after
// a restore).
func rebuildAllocLists(txn *memdb.Txn) error {
	rows := map[listKey]*allocList{}
	add := func(k listKey, id string) {
		row := rows[k]
		if row == nil {
			row = &allocList{Key: k.key}
			rows[k] = row
		}
		row.IDs = append(row.IDs, id) // the iteration is in ID order
	}
	err := eachAlloc(nil, txn, "", func(a *state.Allocation) bool {
		add(listKey{TableNodeAllocs, a.NodeID}, a.ID)
		add(listKey{TableJobAllocs, jobAllocsKey(a.Namespace, a.JobID)}, a.ID)
		return true
	})
	if err != nil {
		return err
	}
	for k, row := range rows {
		if cap(row.IDs)-len(row.IDs) > len(row.IDs)/8 {
			row.IDs = slices.Clone(row.IDs)
		}
		if err := txn.Insert(k.table, row); err != nil {
			return err
		}
	}
	return nil
}
