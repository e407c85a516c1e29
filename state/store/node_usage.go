package store

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// TableNodeUsage holds one state.NodeUsage per node that has live
// allocations. It is derived from the allocations table: kept in step by
// every write of an allocation (writeTxn.insert and delete), rebuilt on
// restore, never persisted in snapshots.
const TableNodeUsage = "node_usage"

// derivedTables are tables computed from the others.
func derivedTables() []tableDef {
	return append([]tableDef{{
		name:    TableNodeUsage,
		derived: true,
		indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*state.NodeUsage).NodeID} }},
		newRow:  func() any { return new(state.NodeUsage) },
	}}, allocListTables()...)
}

// NodeUsage returns what the live allocations on the node were granted,
// in total (zero for a node with none).
func (r reader) NodeUsage(ws memdb.WatchSet, nodeID string) (*state.NodeUsage, error) {
	u, err := first[*state.NodeUsage](ws, r.txn(), TableNodeUsage, indexID, nodeID)
	if err != nil || u != nil {
		return u, err
	}
	return &state.NodeUsage{NodeID: nodeID}, nil
}

// EachNodeUsage calls fn with the usage of every node that has live
// allocations, in one pass of the table (scheduler.NodeUsageScanner): an
// evaluation that ranks most of a 10,000-node cluster reads them all at
// once rather than with a lookup per node. fn must not keep or change u.
func (r reader) EachNodeUsage(fn func(u *state.NodeUsage)) error {
	iter, err := r.txn().Get(TableNodeUsage, indexID)
	if err != nil {
		return fmt.Errorf("read %s: %w", TableNodeUsage, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		fn(raw.(*state.NodeUsage))
	}
	return nil
}

// trackUsage moves the node usage from old to new (either may be nil) of
// one allocation.
func (t *writeTxn) trackUsage(old, new *state.Allocation) error {
	if old != nil && !old.Terminal() {
		if err := t.addUsage(old, -1); err != nil {
			return err
		}
	}
	if new != nil && !new.Terminal() {
		return t.addUsage(new, +1)
	}
	return nil
}

// usageTxn holds the node usage rows one write transaction has written:
// copies of the stored ones, written to the table once and then changed
// in place (nobody sees them before the transaction commits), rather than
// copied and written again for each of a plan's allocations on the node.
// inTable tells whether a row is in the transaction's table (a row that
// fell to no allocation is deleted, and kept here as such).
type usageTxn struct {
	rows    map[string]*state.NodeUsage
	inTable map[*state.NodeUsage]bool
}

// addUsage adds (sign +1) or removes (-1) a's grant on its node.
func (t *writeTxn) addUsage(a *state.Allocation, sign int) error {
	u, mine := t.usage.rows[a.NodeID]
	if !mine {
		raw, err := t.baseTxn().First(TableNodeUsage, indexID, a.NodeID)
		if err != nil {
			return fmt.Errorf("node usage of %s: %w", a.NodeID, err)
		}
		u = &state.NodeUsage{NodeID: a.NodeID}
		if raw != nil {
			*u = *raw.(*state.NodeUsage)
		}
		if t.usage.rows == nil {
			t.usage = usageTxn{rows: map[string]*state.NodeUsage{}, inTable: map[*state.NodeUsage]bool{}}
		}
		t.usage.rows[a.NodeID] = u
		if raw != nil {
			// Replaces the stored row, which stays as it was.
			if err := t.Insert(TableNodeUsage, u); err != nil {
				return err
			}
			t.usage.inTable[u] = true
		}
	}
	u.AddAlloc(a, sign)
	switch {
	case u.Allocs == 0:
		*u = state.NodeUsage{NodeID: u.NodeID}
		if t.usage.inTable[u] {
			t.usage.inTable[u] = false
			return t.Delete(TableNodeUsage, u)
		}
	case !t.usage.inTable[u]:
		t.usage.inTable[u] = true
		return t.Insert(TableNodeUsage, u)
	}
	return nil
}

// rebuildUsage computes the derived tables from the allocations (after a
// restore): node usage and the allocations' lists (alloc_lists.go).
func rebuildUsage(txn *memdb.Txn) error {
	if err := rebuildAllocLists(txn); err != nil {
		return err
	}
	sums := map[string]*state.NodeUsage{}
	err := eachAlloc(nil, txn, "", func(a *state.Allocation) bool {
		if a.Terminal() {
			return true
		}
		u := sums[a.NodeID]
		if u == nil {
			u = &state.NodeUsage{NodeID: a.NodeID}
			sums[a.NodeID] = u
		}
		u.AddAlloc(a, +1)
		return true
	})
	if err != nil {
		return err
	}
	for _, u := range sums {
		if err := txn.Insert(TableNodeUsage, u); err != nil {
			return err
		}
	}
	return nil
}
