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

// trackUsage moves the node usage from old to new (either may be nil) of
// one allocation.
func trackUsage(txn *memdb.Txn, old, new *state.Allocation) error {
	if old != nil && !old.Terminal() {
		if err := addUsage(txn, old, -1); err != nil {
			return err
		}
	}
	if new != nil && !new.Terminal() {
		return addUsage(txn, new, +1)
	}
	return nil
}

// addUsage adds (sign +1) or removes (-1) a's grant on its node, copying
// the row (rows read from the store are never changed in place).
func addUsage(txn *memdb.Txn, a *state.Allocation, sign int) error {
	raw, err := txn.First(TableNodeUsage, indexID, a.NodeID)
	if err != nil {
		return fmt.Errorf("node usage of %s: %w", a.NodeID, err)
	}
	u := state.NodeUsage{NodeID: a.NodeID}
	if raw != nil {
		u = *raw.(*state.NodeUsage)
	}
	u.AddAlloc(a, sign)
	if u.Allocs == 0 {
		if raw != nil {
			return txn.Delete(TableNodeUsage, raw)
		}
		return nil
	}
	return txn.Insert(TableNodeUsage, &u)
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
