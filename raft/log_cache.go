package raft

import (
	"sync"

	hraft "github.com/hashicorp/raft"
)

// logCache keeps the newest log entries in memory in front of the disk
// store, bounded both in entries and in bytes.
//
// It replaces hashicorp/raft's LogCache, which bounds entries only: a plan
// of a thousand placements is a log entry of about a megabyte, so 512 of
// them held over a gigabyte that no one would read again (at 200,000
// allocations a third of the dev agent's live heap was cached entries).
// What reads the cache: a follower applying what it has just stored, the
// leader replicating to a follower that is slightly behind, and the read
// index lookup of the newest committed entry. All of them want the newest
// entries, so the oldest are dropped first. A miss reads the disk store,
// which holds every entry; the cache never changes what is read.
//
// The cached entries are a window [first, next) of consecutive indexes;
// an entry larger than the whole budget leaves its slot empty. Entries are
// shared with raft, which never changes a log entry once it is stored.
type logCache struct {
	store hraft.LogStore
	// budget bounds the bytes of the cached entries' Data and Extensions
	// (their capacity, which is what they keep alive).
	budget int

	mu          sync.RWMutex
	ring        []*hraft.Log // slot index % len(ring)
	first, next uint64       // the cached window; empty when first == next
	bytes       int
}

var _ hraft.LogStore = (*logCache)(nil)

// newLogCache caches at most entries entries and budget bytes of store's
// newest entries.
func newLogCache(store hraft.LogStore, entries, budget int) *logCache {
	return &logCache{store: store, budget: budget, ring: make([]*hraft.Log, entries)}
}

// entrySize is what a cached entry keeps alive beyond its fixed fields.
func entrySize(l *hraft.Log) int { return cap(l.Data) + cap(l.Extensions) }

// IsMonotonic implements hraft.MonotonicLogStore by asking the store.
func (c *logCache) IsMonotonic() bool {
	m, ok := c.store.(hraft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// GetLog implements hraft.LogStore: from memory when cached, else from the
// store.
func (c *logCache) GetLog(idx uint64, log *hraft.Log) error {
	c.mu.RLock()
	var cached *hraft.Log
	if idx >= c.first && idx < c.next {
		cached = c.ring[idx%uint64(len(c.ring))]
	}
	c.mu.RUnlock()
	if cached != nil && cached.Index == idx {
		*log = *cached
		return nil
	}
	return c.store.GetLog(idx, log)
}

// StoreLog implements hraft.LogStore.
func (c *logCache) StoreLog(log *hraft.Log) error {
	return c.StoreLogs([]*hraft.Log{log})
}

// StoreLogs implements hraft.LogStore: the entries are cached once the
// store has them.
func (c *logCache) StoreLogs(logs []*hraft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		c.addLocked(l)
	}
	return nil
}

// addLocked caches l as the newest entry, dropping the oldest ones over
// the bounds.
func (c *logCache) addLocked(l *hraft.Log) {
	if c.first == c.next || l.Index != c.next {
		// Empty, or not the next entry (raft deletes a conflicting suffix
		// before it writes over it, so this is only defensive): start a
		// new window.
		c.resetLocked()
		c.first, c.next = l.Index, l.Index
	}
	// Make room for l's slot first: it is the oldest entry's when the
	// ring is full.
	for c.next-c.first >= uint64(len(c.ring)) {
		c.dropFirstLocked()
	}
	if size := entrySize(l); size <= c.budget {
		c.ring[l.Index%uint64(len(c.ring))] = l
		c.bytes += size
	}
	c.next = l.Index + 1
	for c.bytes > c.budget {
		c.dropFirstLocked()
	}
}

// dropFirstLocked drops the oldest entry of the window.
func (c *logCache) dropFirstLocked() {
	slot := c.first % uint64(len(c.ring))
	if l := c.ring[slot]; l != nil && l.Index == c.first {
		c.bytes -= entrySize(l)
	}
	c.ring[slot] = nil
	c.first++
}

// resetLocked empties the cache.
func (c *logCache) resetLocked() {
	clear(c.ring)
	c.first, c.next, c.bytes = 0, 0, 0
}

// FirstIndex implements hraft.LogStore.
func (c *logCache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }

// LastIndex implements hraft.LogStore.
func (c *logCache) LastIndex() (uint64, error) { return c.store.LastIndex() }

// DeleteRange implements hraft.LogStore. Compaction deletes a prefix of
// the log, which keeps the newer cached entries; anything else (a
// follower's conflicting suffix) empties the cache. The cache forgets the
// entries before the store deletes them, so no read is served from memory
// that the store no longer has.
func (c *logCache) DeleteRange(lo, hi uint64) error {
	c.mu.Lock()
	switch {
	case c.first == c.next || hi < c.first || lo >= c.next:
	case lo <= c.first && hi < c.next-1:
		for c.first <= hi {
			c.dropFirstLocked()
		}
	default:
		c.resetLocked()
	}
	c.mu.Unlock()
	return c.store.DeleteRange(lo, hi)
}
