package leader

import (
	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The store's states offer the quota reads the scheduler and the plan
// applier check placements with.
var (
	_ scheduler.QuotaState = (*store.StateSnapshot)(nil)
	_ scheduler.QuotaState = (*store.Store)(nil)
)

// An evaluation blocked by a namespace quota (QuotaLimitReached names it:
// every placement it could not make was refused by the quota) is not
// helped by capacity: it is unblocked when the quota's usage falls in
// some dimension or its limits change, at an index after its snapshot.

// quotaSeen is what the quota watcher last saw of one quota.
type quotaSeen struct {
	used   state.QuotaResources
	modify uint64
}

// UnblockQuota records that quota's usage fell (or its limits changed)
// at index and sends the evaluations blocked by it back to the broker.
func (b *BlockedEvals) UnblockQuota(quota string, index uint64) {
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	b.quotaUnblocked[quota] = max(b.quotaUnblocked[quota], index)
	b.notifyLocked()
	var out []*state.Evaluation
	for id, e := range b.captured {
		if e.QuotaLimitReached == quota && e.SnapshotIndex < index {
			out = append(out, e)
			b.removeLocked(id)
		}
	}
	b.mu.Unlock()
	b.broker.EnqueueAll(out)
}

// quotaPass unblocks the quotas whose usage fell in some dimension, or
// whose spec changed, since the last pass (seen, updated in place); the
// first pass after gaining leadership counts every quota as changed.
func (b *BlockedEvals) quotaPass(seen map[string]quotaSeen) {
	usages, err := b.store.QuotaUsages(nil)
	if err != nil {
		b.log.Error("blocked evals: list quota usages", "error", err)
		return
	}
	index := max(b.store.Index(store.TableQuotaUsage), b.store.Index(store.TableQuotas))
	live := map[string]bool{}
	for _, u := range usages {
		live[u.Name] = true
		var used state.QuotaResources
		for _, r := range u.Used {
			used = r.Used
			break
		}
		prev, ok := seen[u.Name]
		seen[u.Name] = quotaSeen{used: used, modify: u.ModifyIndex}
		fell := used.CPU < prev.used.CPU || used.MemoryMB < prev.used.MemoryMB ||
			used.MemoryMaxMB < prev.used.MemoryMaxMB || used.Allocations < prev.used.Allocations
		if !ok || fell || prev.modify != u.ModifyIndex {
			b.UnblockQuota(u.Name, index)
		}
	}
	for name := range seen {
		if !live[name] {
			delete(seen, name)
		}
	}
	b.mu.Lock()
	b.quotaPassed = max(b.quotaPassed, index)
	b.notifyLocked()
	b.mu.Unlock()
}
