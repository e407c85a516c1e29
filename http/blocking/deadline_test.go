package blocking

import (
	"cmp"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Waits that end within one granule share a wake-up, which never comes
// early and at most one granule late; the last caller to leave stops it.
func TestDeadlinesShareOneWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ds deadlines
		start := time.Now()
		const wait = 5 * time.Minute
		var joined []*deadline
		var keys []int64
		for i := range 1000 {
			// Waits spread over 100 ms, and jitter over 18 s: a granule
			// of 5m is one second.
			dl, key := ds.join(wait + time.Duration(i)*100*time.Microsecond)
			joined = append(joined, dl)
			keys = append(keys, key)
		}
		if n := ds.size(); n > 20 {
			t.Fatalf("1,000 waits within 18 s hold %d wake-ups, want at most 20", n)
		}
		// In the order they fire, each wake-up comes no earlier than the
		// wait of any of its callers, and within a sixteenth of it.
		order := make([]int, len(joined))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
		for _, i := range order {
			<-joined[i].done
			waited := time.Since(start)
			base := wait + time.Duration(i)*100*time.Microsecond
			if waited < base || waited > base+wait/jitterFraction {
				t.Fatalf("wait %d of %v woke after %v, want at most a sixteenth (%v) later", i, base, waited, wait/jitterFraction)
			}
			ds.leave(keys[i], joined[i])
		}
		if ds.size() != 0 {
			t.Fatalf("%d wake-ups left after they fired", ds.size())
		}

		// Callers that leave before their wait ends stop its timer.
		dl, key := ds.join(time.Second)
		ds.leave(key, dl)
		if ds.size() != 0 {
			t.Fatalf("a wake-up with no caller is kept")
		}
		time.Sleep(2 * time.Second)
		select {
		case <-dl.done:
			t.Fatal("a wake-up whose callers all left still fired")
		default:
		}
	})
}

func TestGranuleOf(t *testing.T) {
	for _, c := range []struct{ wait, want time.Duration }{
		{10 * time.Millisecond, time.Millisecond},
		{640 * time.Millisecond, 10 * time.Millisecond},
		{5 * time.Minute, time.Second},
	} {
		if got := granuleOf(c.wait); got != c.want {
			t.Errorf("granuleOf(%v) = %v, want %v", c.wait, got, c.want)
		}
	}
}

// size is how many wake-ups ds holds, read under its lock: the timers'
// fire deletes from the map on their own goroutines.
func (ds *deadlines) size() int {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return len(ds.at)
}
