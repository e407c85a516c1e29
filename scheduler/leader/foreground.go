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

// foregroundQuiet is how long after a burst's writes in flight fell
// under foregroundBusy the API counts as busy still: clients that write
// in a loop have no write in flight while their answers travel and their
// next requests are read and decoded.
const foregroundQuiet = 10 * time.Millisecond

// foregroundBusy is how many writes in flight at once make a burst the
// workers give way to.
const foregroundBusy = 4

// Foreground counts the API's writes in flight: the writes users make and
// wait for (job registrations, deregistrations, dispatches, management
// API changes), not the client agents' reports. While a burst of them is
// in flight (foregroundBusy or more at once) the scheduling workers give
// way to it: the first worker goes on, the other general workers wait
// (at most giveWayMax at a time) and the small-job workers until it
// ends, before taking their next evaluation. On two
// cores the scheduler and the clients' traffic it causes took half the
// machine from a burst of registrations: 2,000 one-allocation jobs from
// 16 clients registered at ~1,500/s with six workers and ~2,700/s with
// one; the work a burst leaves behind is done by all the workers once it
// ends. A trickle of writes (fewer in flight at once) holds no worker
// back. During a burst the plan applier also keeps fewer large commits
// in flight (busyInflightAllocs), since each write waits in Raft's queue
// behind them. A nil *Foreground counts nothing and never holds a worker
// back.
type Foreground struct {
	mu sync.Mutex
	n  int
	// idle is closed while n is under foregroundBusy; a new one is made
	// when n reaches it.
	idle chan struct{}
	// lastEnd is when n last fell under foregroundBusy.
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
	f.n++
	if f.n == foregroundBusy {
		f.idle = make(chan struct{})
	}
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if f.n == foregroundBusy {
				close(f.idle)
				f.lastEnd = time.Now()
			}
			f.n--
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

// busy reports whether a burst is in flight, or was less than quiet ago.
func (f *Foreground) busy(quiet time.Duration) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n >= foregroundBusy || time.Since(f.lastEnd) < quiet
}

// giveWay returns once fewer than foregroundBusy writes have been in
// flight for quiet, max has passed (never, when max is 0), or ctx ends,
// and reports whether it waited at all; waiting (when not nil) is called
// once, when it starts to wait. Without a burst since quiet ago it
// returns at once.
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
		if n < foregroundBusy {
			rest := quiet - time.Since(lastEnd)
			if rest <= 0 {
				return waited
			}
			wake = time.After(rest)
			idle = nil // closed: wait for the quiet time instead
		}
		if !waited {
			if max > 0 {
				deadline = time.After(max)
			}
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
