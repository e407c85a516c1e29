package blocking

import "sync/atomic"

// Limit bounds how many blocking reads wait at once on one server. Each
// waiter holds a connection, a goroutine and its watch while it waits; a
// caller beyond the bound is answered at once with the current result and
// index, as if its wait had ended, and simply asks again: no error, and
// its next request is a blocking one like any other.
//
// A nil *Limit bounds nothing.
type Limit struct {
	max     int64
	waiting atomic.Int64
	early   atomic.Uint64
}

// NewLimit returns a Limit of max waiters; max <= 0 means no bound, with
// the counts still kept.
func NewLimit(max int) *Limit { return &Limit{max: int64(max)} }

// Waiting is the number of callers waiting now.
func (l *Limit) Waiting() int64 {
	if l == nil {
		return 0
	}
	return l.waiting.Load()
}

// Early is the number of callers answered at once because the bound was
// reached, since the Limit was made.
func (l *Limit) Early() uint64 {
	if l == nil {
		return 0
	}
	return l.early.Load()
}

// acquire takes a place for one waiter, or reports false (and counts an
// early answer) when none is left.
func (l *Limit) acquire() bool {
	if l == nil {
		return true
	}
	if n := l.waiting.Add(1); l.max > 0 && n > l.max {
		l.waiting.Add(-1)
		l.early.Add(1)
		return false
	}
	return true
}

// release gives back a place taken by acquire.
func (l *Limit) release() {
	if l != nil {
		l.waiting.Add(-1)
	}
}
