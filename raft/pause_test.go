package raft

import (
	"context"
	"errors"
	"testing"
	"time"
)

// After a gap in the watchdog's marks (the process was paused), wait
// holds a leader's quorum check back for the settle time; without one it
// does not wait at all.
func TestPauseWatchHoldsBackAfterAPause(t *testing.T) {
	w := newPauseWatch(time.Hour)
	w.check()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.wait(canceled); err != nil {
		t.Fatalf("no pause, yet wait held back: %v", err)
	}
	// The last mark is a second old: the process did not run for a
	// second, as after SIGSTOP and SIGCONT.
	w.lastRan.Store(w.now() - int64(time.Second))
	ctx, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := w.wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after a pause, wait returned %v; want it held back until the settle time", err)
	}
	// Once the settle time has passed since the pause, no wait.
	w.woke.Store(w.now() - int64(2*time.Hour))
	if err := w.wait(canceled); err != nil {
		t.Fatalf("long after the pause: %v", err)
	}
}
