package blocking

import (
	"math/rand/v2"
	"sync"
	"time"
)

// deadlines hands out shared wake-ups: the callers of Shared.Wait whose
// waits end within the same short span share one timer and one channel,
// so ten thousand waiters hold a few dozen timers rather than one each.
// A wait ends within its jitter, never early: the jitter it is given is
// a granule (granuleOf) less, and the rounding up adds at most that.
type deadlines struct {
	mu sync.Mutex
	at map[int64]*deadline
}

// deadline is one shared wake-up: done is closed when it passes.
type deadline struct {
	done  chan struct{}
	refs  int
	timer *time.Timer
}

// granuleOf is how far a wait of d may be rounded up: a sixty-fourth of
// it (so less than the jitter every wait already gets), between a
// millisecond and a second.
func granuleOf(d time.Duration) time.Duration {
	return min(max(d/64, time.Millisecond), time.Second)
}

// join returns the shared wake-up for a wait of d from now, plus jitter
// as waitOf adds it, and its key for leave. The jitter is drawn from a
// granule less than waitOf's, so that with the rounding up to a granule
// the wait still ends within d plus a sixteenth.
func (ds *deadlines) join(d time.Duration) (*deadline, int64) {
	g := int64(granuleOf(d))
	now := time.Now()
	d += rand.N(max(d/jitterFraction-time.Duration(g), 0) + 1)
	end := now.Add(d).UnixNano()
	key := (end + g - 1) / g * g
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.at == nil {
		ds.at = map[int64]*deadline{}
	}
	dl := ds.at[key]
	if dl == nil {
		dl = &deadline{done: make(chan struct{})}
		ds.at[key] = dl
		dl.timer = time.AfterFunc(time.Duration(key-now.UnixNano()), func() { ds.fire(key, dl) })
	}
	dl.refs++
	return dl, key
}

// fire ends the wake-up's waits.
func (ds *deadlines) fire(key int64, dl *deadline) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.at[key] == dl {
		delete(ds.at, key)
	}
	close(dl.done)
}

// leave drops a caller from its wake-up; the last one out stops the
// timer, unless it has fired already.
func (ds *deadlines) leave(key int64, dl *deadline) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	dl.refs--
	if dl.refs > 0 || ds.at[key] != dl {
		return
	}
	if dl.timer.Stop() {
		delete(ds.at, key)
	}
}
