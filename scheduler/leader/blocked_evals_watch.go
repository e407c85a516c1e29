package leader

import (
	"context"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// capacityCursor remembers how far the capacity watcher has read a table:
// the table's index at its last pass, and the highest ModifyIndex of a row
// it handled.
type capacityCursor struct {
	table, row uint64
}

// watchCapacity turns capacity changes into Unblock calls until ctx ends.
// Its first pass reads every node (and, once an evaluation is blocked,
// every allocation), so evaluations restored at a failover are unblocked
// by changes the previous leader may not have acted on.
func (b *BlockedEvals) watchCapacity(ctx context.Context) {
	var nodes, allocs capacityCursor
	nodePace, allocPace := pacer{every: b.cfg.UnblockCoalesce}, pacer{every: b.cfg.UnblockCoalesce}
	quotaPace, quotaIndex, quotas := pacer{every: b.cfg.UnblockCoalesce}, uint64(0), map[string]quotaSeen{}
	for {
		ws := memdb.NewWatchSet()
		abandon := b.store.AbandonCh()
		ws.Add(abandon)
		if idx := b.store.WatchIndex(ws, store.TableNodes); idx != nodes.table {
			if !nodePace.wait(ctx) {
				return
			}
			nodes.table = b.store.WatchIndex(nil, store.TableNodes)
			nodes.row = b.nodePass(nodes.row)
			continue
		}
		if idx := max(b.store.WatchIndex(ws, store.TableQuotaUsage), b.store.WatchIndex(ws, store.TableQuotas)); idx != quotaIndex {
			if !quotaPace.wait(ctx) {
				return
			}
			quotaIndex = idx
			b.quotaPass(quotas)
			continue
		}
		tracked, any := b.trackedChan()
		if !any {
			ws.Add(tracked)
		} else if idx := b.store.WatchIndex(ws, store.TableAllocs); idx != allocs.table {
			if !allocPace.wait(ctx) {
				return
			}
			allocs.table = b.store.WatchIndex(nil, store.TableAllocs)
			allocs.row = b.allocPass(allocs.row)
			continue
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return
		}
		select {
		case <-abandon:
			nodes, allocs = capacityCursor{}, capacityCursor{}
			quotaIndex, quotas = 0, map[string]quotaSeen{}
		default:
		}
	}
}

// nodePass unblocks the classes of nodes written after since that can take
// work now, and returns the highest ModifyIndex seen.
func (b *BlockedEvals) nodePass(since uint64) uint64 {
	nodes, err := b.store.Nodes(nil, "")
	if err != nil {
		b.log.Error("blocked evals: list nodes", "error", err)
		return since
	}
	last := since
	changed := map[string]uint64{}
	for _, n := range nodes {
		last = max(last, n.ModifyIndex)
		if n.ModifyIndex > since && n.Ready() {
			class := nodeClass(n)
			changed[class] = max(changed[class], n.ModifyIndex)
		}
	}
	for class, index := range changed {
		b.Unblock(class, index)
	}
	return last
}

// allocPass unblocks the classes of the nodes of allocations that became
// terminal after since, and returns the highest ModifyIndex seen.
func (b *BlockedEvals) allocPass(since uint64) uint64 {
	allocs, err := b.store.Allocs(nil, "*", "")
	if err != nil {
		b.log.Error("blocked evals: list allocations", "error", err)
		return since
	}
	last := since
	classOf := map[string]*string{}
	changed := map[string]uint64{}
	for _, a := range allocs {
		last = max(last, a.ModifyIndex)
		if a.ModifyIndex <= since || !a.Terminal() {
			continue
		}
		class, ok := classOf[a.NodeID]
		if !ok {
			if n, err := b.store.NodeByID(nil, a.NodeID); err == nil && n != nil {
				c := nodeClass(n)
				class = &c
			}
			classOf[a.NodeID] = class
		}
		if class != nil {
			changed[*class] = max(changed[*class], a.ModifyIndex)
		}
	}
	for class, index := range changed {
		b.Unblock(class, index)
	}
	return last
}

// nodeClass is a node's computed class as the schedulers see it: the one
// stamped at registration, or computed now for a node that has none.
func nodeClass(n *state.Node) string {
	if n.ComputedClass != "" {
		return n.ComputedClass
	}
	return scheduler.ComputeClass(n)
}
