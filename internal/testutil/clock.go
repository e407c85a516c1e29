package testutil

import (
	"sync"
	"time"
)

// Clock is a clock a test sets and moves; safe for concurrent use. Pass
// its Now where a component takes a clock function.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock reading now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
