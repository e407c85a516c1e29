package leader

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// TestForegroundGiveWay: a worker gives way while a write is in flight
// and for the quiet time after the last one ends, never past max, and not
// at all when the API has been idle; a nil gauge never holds it.
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

		// A write that ends after 30 ms: the worker waits for it and
		// then for the quiet time.
		end := f.Begin()
		if f.InFlight() != 1 {
			t.Fatalf("in flight %d, want 1", f.InFlight())
		}
		go func(end func()) {
			time.Sleep(30 * time.Millisecond)
			end()
			end() // a second call changes nothing
		}(end)
		start := time.Now()
		if !f.giveWay(ctx, quiet, max, nil) {
			t.Fatal("did not give way to a write in flight")
		}
		if waited := time.Since(start); waited != 40*time.Millisecond {
			t.Errorf("gave way for %v, want the write's 30 ms and the quiet 10 ms", waited)
		}
		if f.InFlight() != 0 {
			t.Fatalf("in flight %d after the write ended", f.InFlight())
		}
		time.Sleep(quiet)
		if f.giveWay(ctx, quiet, max, nil) {
			t.Error("gave way after the quiet time had passed")
		}

		// Writes that never drain: the worker goes on after max.
		end = f.Begin()
		start = time.Now()
		if !f.giveWay(ctx, quiet, max, nil) {
			t.Fatal("did not give way to a write in flight")
		}
		if waited := time.Since(start); waited != max {
			t.Errorf("gave way for %v under a sustained write, want max %v", waited, max)
		}
		// A cancelled context ends the wait at once.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		start = time.Now()
		f.giveWay(cctx, quiet, max, nil)
		if time.Since(start) != 0 {
			t.Error("a cancelled context did not end the wait")
		}
		end()
	})
}

// TestWorkersGiveWayToTheAPI: while an API write is in flight, the first
// worker goes on scheduling and the others hold back, so evaluations are
// still placed; GaveWay counts the waits.
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
		end := fg.Begin() // a write in flight throughout
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
		var evals []string
		for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			job := scheduler.MockJob(id)
			job.TaskGroups[0].Count = 1
			evals = append(evals, r.registerJob(t, job))
		}
		// Less than giveWayMax on the fake clock: the first worker
		// places them all, the others take one each and then give way.
		time.Sleep(giveWayMax / 2)
		synctest.Wait()
		for _, id := range evals {
			if e, _ := r.store.EvalByID(nil, id); e == nil || e.Status != state.EvalStatusComplete {
				t.Fatalf("evaluation %s not complete while a write is in flight: %+v", id, e)
			}
		}
		if st := rt.Workers.Stats(); st.GaveWay == 0 || st.Acked != len(evals) {
			t.Errorf("worker stats %+v: want every evaluation acked and workers giving way", st)
		}
	})
}
