package store

import (
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// TableNodeAllocs lists, per node, the IDs of the allocations placed on
// it (live or terminal). It is the allocations' index by node, kept as a
// derived table rather than a memdb index: a memdb index entry costs some
// 530 bytes per allocation (a radix leaf, a node, their watch channels and
// the key), a sorted list of IDs 16 bytes (the ID's string data is the
// allocation's). Every write of an allocation keeps it in step
// (writeTxn.insert and delete), a restore rebuilds it (rebuildUsage), it is
// never persisted.
//
// The row of a node is written again whenever one of its allocations is,
// so a read that watched it (a client's blocking query on its node's
// allocations) wakes on any change of them, as a watch on the memdb index
// did.
const TableNodeAllocs = "node_allocs"

// nodeAllocs is one row of TableNodeAllocs. A stored row and its IDs are
// never changed: a write copies them (see nodeAllocsTxn).
type nodeAllocs struct {
	NodeID string
	// IDs are sorted.
	IDs []string
}

// nodeAllocsTable is the table's definition (a derived table).
func nodeAllocsTable() tableDef {
	return tableDef{
		name:    TableNodeAllocs,
		derived: true,
		indexes: map[string]keyFunc{indexID: func(o any) []any { return []any{o.(*nodeAllocs).NodeID} }},
		newRow:  func() any { return new(nodeAllocs) },
	}
}

// allocsOnNode lists the allocations on a node ordered by ID, and adds the
// node's row to ws.
func allocsOnNode(ws memdb.WatchSet, txn *memdb.Txn, nodeID string) ([]*state.Allocation, error) {
	row, err := first[*nodeAllocs](ws, txn, TableNodeAllocs, indexID, nodeID)
	if err != nil || row == nil {
		return nil, err
	}
	out := make([]*state.Allocation, 0, len(row.IDs))
	for _, id := range row.IDs {
		a, err := first[*state.Allocation](nil, txn, TableAllocs, indexID, id)
		if err != nil {
			return nil, err
		}
		if a == nil {
			return nil, fmt.Errorf("allocations of node %s: %s is listed but not stored", nodeID, id)
		}
		out = append(out, a)
	}
	return out, nil
}

// hasLiveAllocOnNode reports whether a live allocation is on the node.
func hasLiveAllocOnNode(txn *memdb.Txn, nodeID string) (bool, error) {
	allocs, err := allocsOnNode(nil, txn, nodeID)
	return slices.ContainsFunc(allocs, func(a *state.Allocation) bool { return !a.Terminal() }), err
}

// nodeAllocsTxn holds the rows of TableNodeAllocs one write transaction
// has written: they are not visible outside it until it commits, so it
// changes them in place rather than copying a node's list for each of its
// allocations a plan writes. owned marks the rows whose IDs slice was made
// in this transaction (the others share theirs with the stored row).
type nodeAllocsTxn struct {
	rows  map[string]*nodeAllocs
	owned map[*nodeAllocs]bool
}

// trackNodeAllocs moves an allocation's ID from old's node to new's (either
// may be nil), and writes the row of new's node again when it stays there.
func (t *writeTxn) trackNodeAllocs(old, new *state.Allocation) error {
	switch {
	case new == nil:
		return t.editNodeAllocs(old.NodeID, old.ID, -1)
	case old == nil:
		return t.editNodeAllocs(new.NodeID, new.ID, +1)
	case old.NodeID != new.NodeID:
		if err := t.editNodeAllocs(old.NodeID, old.ID, -1); err != nil {
			return err
		}
		return t.editNodeAllocs(new.NodeID, new.ID, +1)
	default:
		return t.editNodeAllocs(new.NodeID, new.ID, 0)
	}
}

// editNodeAllocs adds (op +1), removes (-1) or keeps (0) id in the row of
// node, writing the row in this transaction (deleting it once empty).
func (t *writeTxn) editNodeAllocs(node, id string, op int) error {
	if t.nodes.rows == nil {
		t.nodes = nodeAllocsTxn{rows: map[string]*nodeAllocs{}, owned: map[*nodeAllocs]bool{}}
	}
	row, mine := t.nodes.rows[node]
	if !mine {
		stored, err := first[*nodeAllocs](nil, t.Txn, TableNodeAllocs, indexID, node)
		if err != nil {
			return err
		}
		row = &nodeAllocs{NodeID: node}
		if stored != nil {
			row.IDs = stored.IDs
		}
		t.nodes.rows[node] = row
	}
	i, found := slices.BinarySearch(row.IDs, id)
	switch {
	case op > 0 && !found:
		if !t.nodes.owned[row] {
			ids := make([]string, len(row.IDs), len(row.IDs)+1)
			copy(ids, row.IDs)
			row.IDs = ids
			t.nodes.owned[row] = true
		}
		row.IDs = slices.Insert(row.IDs, i, id)
	case op < 0 && found:
		if !t.nodes.owned[row] {
			row.IDs = slices.Clone(row.IDs)
			t.nodes.owned[row] = true
		}
		row.IDs = slices.Delete(row.IDs, i, i+1)
	case mine:
		// Already written in this transaction, unchanged.
		return nil
	}
	if len(row.IDs) == 0 {
		if _, err := t.DeleteAll(TableNodeAllocs, indexID, node); err != nil {
			return fmt.Errorf("allocations of node %s: %w", node, err)
		}
		delete(t.nodes.rows, node)
		return nil
	}
	if err := t.Insert(TableNodeAllocs, row); err != nil {
		return fmt.Errorf("allocations of node %s: %w", node, err)
	}
	return nil
}

// clipNodeAllocs gives the rows this transaction grew a list of their
// length, before they are committed: a row keeps its list until it is
// next written.
func (t *writeTxn) clipNodeAllocs() {
	for row := range t.nodes.owned {
		if cap(row.IDs)-len(row.IDs) > len(row.IDs)/8 {
			row.IDs = slices.Clone(row.IDs)
		}
	}
}

// rebuildNodeAllocs computes TableNodeAllocs from the allocations (after a
// restore).
func rebuildNodeAllocs(txn *memdb.Txn) error {
	iter, err := txn.Get(TableAllocs, indexID)
	if err != nil {
		return err
	}
	rows := map[string]*nodeAllocs{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*state.Allocation)
		row := rows[a.NodeID]
		if row == nil {
			row = &nodeAllocs{NodeID: a.NodeID}
			rows[a.NodeID] = row
		}
		row.IDs = append(row.IDs, a.ID) // the iteration is in ID order
	}
	for _, row := range rows {
		row.IDs = slices.Clip(row.IDs)
		if err := txn.Insert(TableNodeAllocs, row); err != nil {
			return err
		}
	}
	return nil
}
