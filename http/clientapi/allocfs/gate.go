package allocfs

import (
	"fmt"
	"sync"
)

// Default caps of Limits.
const (
	DefaultPerAlloc = 32
	DefaultPerAgent = 256
)

// Limits caps the file system and log reads a client agent serves at
// once. A zero field means its default; there is no way to turn a cap
// off, only to raise it.
type Limits struct {
	// PerAlloc caps the reads of one allocation's files (ls, stat, cat,
	// readat, logs, followed or not). Default DefaultPerAlloc.
	PerAlloc int
	// PerAgent caps them across every allocation. Default
	// DefaultPerAgent.
	PerAgent int
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.PerAlloc <= 0 {
		l.PerAlloc = DefaultPerAlloc
	}
	if l.PerAgent <= 0 {
		l.PerAgent = DefaultPerAgent
	}
	return l
}

// BusyError is the answer to a read over a cap: the caller may try again
// once others end (HTTP 429).
type BusyError struct {
	// AllocID is the allocation whose cap was reached, or "" for the
	// agent's.
	AllocID string
	Limit   int
}

func (e *BusyError) Error() string {
	if e.AllocID == "" {
		return fmt.Sprintf("too many file system and log reads on this client agent at once (at most %d): try again later", e.Limit)
	}
	return fmt.Sprintf("too many file system and log reads of allocation %q at once (at most %d): try again later", e.AllocID, e.Limit)
}

// Gate counts the reads in progress against Limits. Its zero value has
// the default limits; a nil *Gate admits everything (for tests that
// build a handler without one).
type Gate struct {
	// Limits is read at each Acquire; set it before the first.
	Limits Limits

	mu      sync.Mutex
	total   int
	byAlloc map[string]int
}

// Acquire admits one read of allocID's files, or refuses it with a
// *BusyError at once (it never waits: a caller over the cap is told so
// rather than queued behind reads that may last as long as a followed
// log). The read ends with release, which must be called exactly once.
func (g *Gate) Acquire(allocID string) (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	lim := g.Limits.withDefaults()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byAlloc[allocID] >= lim.PerAlloc {
		return nil, &BusyError{AllocID: allocID, Limit: lim.PerAlloc}
	}
	if g.total >= lim.PerAgent {
		return nil, &BusyError{Limit: lim.PerAgent}
	}
	if g.byAlloc == nil {
		g.byAlloc = map[string]int{}
	}
	g.byAlloc[allocID]++
	g.total++
	var once sync.Once
	return func() { once.Do(func() { g.release(allocID) }) }, nil
}

func (g *Gate) release(allocID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if g.byAlloc[allocID]--; g.byAlloc[allocID] <= 0 {
		delete(g.byAlloc, allocID)
	}
}

// InUse is the number of reads in progress.
func (g *Gate) InUse() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}
