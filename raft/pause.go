package raft

import (
	"context"
	"sync/atomic"
	"time"
)

// A leader whose process was paused (SIGSTOP, a VM freeze, a long stall)
// wakes believing it still leads, and hashicorp/raft's VerifyLeader can
// then be satisfied by heartbeat answers its followers sent before the
// pause, still waiting in its sockets: a consistent read would be served
// from state older than writes another leader committed meanwhile. The
// watchdog below notices such gaps, and VerifyLeader lets the replication
// settle (fresh heartbeats exchanged, and a step-down when another leader
// was elected) before it trusts a quorum check again.
const (
	// watchdogTick is how often the watchdog marks time.
	watchdogTick = 50 * time.Millisecond
	// pauseGap is the gap between two marks that counts as a pause.
	pauseGap = 500 * time.Millisecond
)

// pauseWatch records when this process last ran and when it last woke
// from a pause, as durations since its epoch (monotonic).
type pauseWatch struct {
	epoch   time.Time
	lastRan atomic.Int64
	woke    atomic.Int64
	settle  time.Duration
}

func newPauseWatch(settle time.Duration) *pauseWatch {
	w := &pauseWatch{epoch: time.Now(), settle: settle}
	w.woke.Store(-int64(settle)) // not woken from anything yet
	return w
}

func (w *pauseWatch) now() int64 { return int64(time.Since(w.epoch)) }

// run marks time until done closes.
func (w *pauseWatch) run(done <-chan struct{}) {
	t := time.NewTicker(watchdogTick)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			w.check()
		}
	}
}

// check notes the time, and a pause when the last mark is too old.
func (w *pauseWatch) check() {
	now := w.now()
	if last := w.lastRan.Swap(now); last != 0 && time.Duration(now-last) > pauseGap {
		w.woke.Store(now)
	}
}

// wait returns once the process has run unpaused for settle since its
// last pause (at once when it was not paused lately), or ctx's error.
func (w *pauseWatch) wait(ctx context.Context) error {
	for {
		w.check() // a pause the watchdog has not run to see yet
		left := w.settle - time.Duration(w.now()-w.woke.Load())
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
