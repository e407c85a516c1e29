package leader

import (
	"context"
	"sync"
	"time"
)

// giveWayMax bounds how long a worker other than the first waits for the
// API's writes to drain before it takes an evaluation anyway, so a
// sustained stream of writes slows the scheduling but never stops it.
const giveWayMax = 100 * time.Millisecond

// foregroundQuiet is how long after the last write ended the API counts
// as busy still: a client that writes in a loop has no write in flight
// while its answer travels and its next request is read and decoded.
const foregroundQuiet = 10 * time.Millisecond

// Foreground counts the API's writes in flight: the writes users make and
// wait for (job registrations, deregistrations, dispatches, management
// API changes), not the client agents' reports. While any is in flight
// the scheduling workers give way to them: the first worker goes on, the
// others wait (at most giveWayMax at a time) before taking their next
// evaluation. On two cores the scheduler and the clients' traffic it
// causes took half the machine from a burst of registrations: 2,000
// one-allocation jobs from 16 clients registered at ~1,500/s with six
// workers and ~2,700/s with one; the work a burst leaves behind is done
// by all the workers once it ends. A nil *Foreground counts nothing and
// never holds a worker back.
type Foreground struct {
	mu sync.Mutex
	n  int
	// idle is closed when n falls to zero; a new one is made when n
	// leaves zero.
	idle chan struct{}
	// lastEnd is when n last fell to zero.
	lastEnd time.Time
}

// NewForeground returns a gauge with no write in flight.
func NewForeground() *Foreground {
	idle := make(chan struct{})
	close(idle)
	return &Foreground{idle: idle}
}

// Begin counts a write in flight until the returned func is called (once).
func (f *Foreground) Begin() (end func()) {
	if f == nil {
		return func() {}
	}
	f.mu.Lock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.n--
			if f.n == 0 {
				close(f.idle)
				f.lastEnd = time.Now()
			}
			f.mu.Unlock()
		})
	}
}

// InFlight is the number of writes in flight.
func (f *Foreground) InFlight() int {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// giveWay returns once no write has been in flight for quiet, max has
// passed, or ctx ends, and reports whether it waited at all; waiting (when
// not nil) is called once, when it starts to wait.
func (f *Foreground) giveWay(ctx context.Context, quiet, max time.Duration, waiting func()) bool {
	if f == nil {
		return false
	}
	var deadline <-chan time.Time
	for waited := false; ; waited = true {
		f.mu.Lock()
		n, idle, lastEnd := f.n, f.idle, f.lastEnd
		f.mu.Unlock()
		var wake <-chan time.Time
		if n == 0 {
			rest := quiet - time.Since(lastEnd)
			if rest <= 0 {
				return waited
			}
			wake = time.After(rest)
			idle = nil // closed: wait for the quiet time instead
		}
		if deadline == nil {
			deadline = time.After(max)
			if waiting != nil {
				waiting()
			}
		}
		select {
		case <-idle:
		case <-wake:
		case <-deadline:
			return true
		case <-ctx.Done():
			return true
		}
	}
}
