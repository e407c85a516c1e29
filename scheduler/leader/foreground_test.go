package leader

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// burst begins foregroundBusy writes on f and returns what ends them all.
func burst(f *Foreground) (end func()) {
	var ends []func()
	for range foregroundBusy {
		ends = append(ends, f.Begin())
	}
	return func() {
		for _, e := range ends {
			e()
		}
	}
}

// TestForegroundGiveWay: a worker gives way while a burst of writes is in
// flight and for the quiet time after it falls under foregroundBusy,
// never past max, not for a trickle of writes, and not at all when the
// API has been idle; a nil gauge never holds it.
func TestForegroundGiveWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const quiet, max = 10 * time.Millisecond, 100 * time.Millisecond
		var none *Foreground
		if none.giveWay(ctx, quiet, max, nil) || none.InFlight() != 0 {
			t.Fatal("a nil gauge held a worker back")
		}
		none.Begin()() // counts nothing, does not panic

		f := NewForeground()
		if f.giveWay(ctx, quiet, max, nil) {
			t.Fatal("gave way with no write ever made")
		}
		// A trickle: one write fewer than a burst.
		var trickle []func()
		for range foregroundBusy - 1 {
			trickle = append(trickle, f.Begin())
		}
		if f.giveWay(ctx, quiet, max, nil) {
			t.Fatalf("gave way to %d writes in flight", f.InFlight())
		}

		// One more makes a burst; its writes end after 30 ms: the
		// worker waits for them and then for the quiet time.
		end := f.Begin()
		if f.InFlight() != foregroundBusy {
			t.Fatalf("in flight %d, want %d", f.InFlight(), foregroundBusy)
		}
		go func(end func()) {
			time.Sleep(30 * time.Millisecond)
			end()
			end() // a second call changes nothing
		}(end)
		start := time.Now()
		if !f.giveWay(ctx, quiet, max, nil) {
			t.Fatal("did not give way to a burst in flight")
		}
		if waited := time.Since(start); waited != 40*time.Millisecond {
			t.Errorf("gave way for %v, want the burst's 30 ms and the quiet 10 ms", waited)
		}
		if f.InFlight() != foregroundBusy-1 {
			t.Fatalf("in flight %d after a write ended, want %d", f.InFlight(), foregroundBusy-1)
		}
		time.Sleep(quiet)
		if f.giveWay(ctx, quiet, max, nil) {
			t.Error("gave way after the quiet time had passed")
		}
		for _, e := range trickle {
			e()
		}

		// A burst that never drains: the worker goes on after max.
		end = burst(f)
		start = time.Now()
		if !f.giveWay(ctx, quiet, max, nil) {
			t.Fatal("did not give way to a burst in flight")
		}
		if waited := time.Since(start); waited != max {
			t.Errorf("gave way for %v under a sustained burst, want max %v", waited, max)
		}
		// With max 0 (the small-job workers) the wait lasts as long as
		// the burst does, and counts once.
		go func() {
			time.Sleep(5 * max)
			end()
		}()
		start, calls := time.Now(), 0
		if !f.giveWay(ctx, quiet, 0, func() { calls++ }) {
			t.Fatal("did not give way to a burst in flight with max 0")
		}
		if waited := time.Since(start); waited != 5*max+quiet || calls != 1 {
			t.Errorf("with max 0 gave way for %v (waiting called %d times), want the burst's %v and the quiet %v, once", waited, calls, 5*max, quiet)
		}
		end = burst(f)
		// A cancelled context ends the wait at once.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		start = time.Now()
		f.giveWay(cctx, quiet, max, nil)
		if time.Since(start) != 0 {
			t.Error("a cancelled context did not end the wait")
		}
		end()
		if f.InFlight() != 0 {
			t.Errorf("in flight %d after every write ended", f.InFlight())
		}
	})
}

// TestWorkersGiveWayToTheAPI: while a burst of API writes is in flight,
// the first worker goes on scheduling and the others hold back, so
// evaluations are still placed; GaveWay counts the waits.
func TestWorkersGiveWayToTheAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		r.registerNode(t, scheduler.MockNode("n1"))
		fg := NewForeground()
		rt, err := NewRuntime(RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 4, Foreground: fg,
			Blocked: BlockedConfig{UnblockCoalesce: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		end := burst(fg) // a burst in flight throughout
		services := rt.Services()
		for _, s := range services {
			if err := s.Start(context.Background()); err != nil {
				t.Fatalf("start %s: %v", s.Name(), err)
			}
		}
		defer func() {
			end()
			for i := len(services) - 1; i >= 0; i-- {
				services[i].Stop()
			}
		}()
		// Less than giveWayMax on the fake clock: the first worker
		// places them all, the others take one each and then give way.
		evals := placeDuringBurst(t, r, "job")
		if st := rt.Workers.Stats(); st.GaveWay == 0 || st.Acked != len(evals) {
			t.Errorf("worker stats %+v: want every evaluation acked and workers giving way", st)
		}
	})
}

// TestSmallWorkersWaitOutABurst: the small-job workers give way to a
// burst for as long as it lasts (no giveWayMax escape), so a long burst is
// not slowed by them; the first general worker places everything.
func TestSmallWorkersWaitOutABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		r.registerNode(t, scheduler.MockNode("n1"))
		fg := NewForeground()
		end := burst(fg) // a burst in flight throughout
		rt := startRuntimeConfig(t, RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 1, SmallWorkers: 3,
			Foreground: fg, Blocked: BlockedConfig{UnblockCoalesce: time.Millisecond}})
		t.Cleanup(end)
		// Past several giveWayMax: escaping, the small-job workers would
		// now be waiting for evaluations beside the first worker.
		time.Sleep(3 * giveWayMax)
		evals := placeDuringBurst(t, r, "small")
		if st := rt.Workers.Stats(); st.SmallAcked != 0 || st.Acked != len(evals) {
			t.Errorf("worker stats %+v: want every evaluation acked by the first worker, none by the small-job workers", st)
		}
	})
}

// placeDuringBurst registers eight one-allocation jobs named prefix-N,
// lets half a giveWayMax pass on the bubble's clock, and fails the test
// unless every one's evaluation is complete; it returns their IDs.
func placeDuringBurst(t *testing.T, r *memRaft, prefix string) []string {
	t.Helper()
	var evals []string
	for i := range 8 {
		job := scheduler.MockJob(fmt.Sprintf("%s-%d", prefix, i))
		job.TaskGroups[0].Count = 1
		evals = append(evals, r.registerJob(t, job))
	}
	time.Sleep(giveWayMax / 2)
	synctest.Wait()
	for _, id := range evals {
		if e, _ := r.store.EvalByID(nil, id); e == nil || e.Status != state.EvalStatusComplete {
			t.Fatalf("evaluation %s not complete while a burst is in flight: %+v", id, e)
		}
	}
	return evals
}
