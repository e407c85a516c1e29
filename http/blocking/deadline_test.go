package blocking

import (
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
			// Waits spread over 100 ms: a granule of 5m is one second.
			dl, key := ds.join(wait + time.Duration(i)*100*time.Microsecond)
			joined = append(joined, dl)
			keys = append(keys, key)
		}
		if n := len(ds.at); n > 2 {
			t.Fatalf("1,000 waits within 100 ms hold %d wake-ups, want at most 2", n)
		}
		<-joined[len(joined)-1].done
		waited := time.Since(start)
		if last := wait + 999*100*time.Microsecond; waited < last || waited > last+granuleOf(wait) {
			t.Fatalf("woke after %v, want between %v and one granule (%v) later", waited, last, granuleOf(wait))
		}
		for i, dl := range joined {
			select {
			case <-dl.done:
			default:
				t.Fatalf("wait %d not over after the last one's", i)
			}
			ds.leave(keys[i], dl)
		}
		if len(ds.at) != 0 {
			t.Fatalf("%d wake-ups left after they fired", len(ds.at))
		}

		// Callers that leave before their wait ends stop its timer.
		dl, key := ds.join(time.Second)
		ds.leave(key, dl)
		if len(ds.at) != 0 {
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
