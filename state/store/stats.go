package store

import (
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// TableSizes returns how many objects each table holds, for metrics. It
// walks every table: O(objects), meant for a scrape every few seconds.
func (s *Store) TableSizes() map[string]int {
	txn := s.readTxn()
	out := map[string]int{}
	for name := range s.currentDB().DBSchema().Tables {
		it, err := txn.Get(name, indexID)
		if err != nil {
			continue
		}
		n := 0
		for o := it.Next(); o != nil; o = it.Next() {
			if b, ok := o.(*packed.Bucket); ok {
				n += b.Len() // a bucket of allocations (alloc_table.go)
			} else {
				n++
			}
		}
		out[name] = n
	}
	return out
}

// RunningAllocsByNode counts the allocations each node reports running.
func (s *Store) RunningAllocsByNode() map[string]int {
	txn := s.readTxn()
	out := map[string]int{}
	_ = eachAlloc(nil, txn, "", func(a *state.Allocation) bool {
		if a.ClientStatus == state.AllocClientStatusRunning {
			out[a.NodeID]++
		}
		return true
	})
	return out
}
