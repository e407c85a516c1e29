package leader

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// rtStartBroker returns a running broker writing through r.
func rtStartBroker(t *testing.T, r *memRaft, cfg BrokerConfig) *EvalBroker {
	t.Helper()
	ids := &schedtest.IDs{}
	b := NewEvalBroker(cfg, r, rtLog(), nil, ids.Next)
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// rtDequeueNow takes the next ready evaluation without waiting, or nil.
func rtDequeueNow(t *testing.T, b *EvalBroker, types ...string) (*state.Evaluation, string) {
	t.Helper()
	if len(types) == 0 {
		types = []string{state.JobTypeService, state.JobTypeBatch}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dequeueLocked(types, false)
}

func TestBrokerDeliversByPriorityThenCreation(t *testing.T) {
	cases := []struct {
		name  string
		evals []*state.Evaluation
		want  []string
	}{
		{
			name: "priority first",
			evals: []*state.Evaluation{
				rtIndexed(rtEval("low", "a", 10), 1), rtIndexed(rtEval("high", "b", 90), 2), rtIndexed(rtEval("mid", "c", 50), 3),
			},
			want: []string{"high", "mid", "low"},
		},
		{
			name: "same priority in creation order",
			evals: []*state.Evaluation{
				rtIndexed(rtEval("second", "a", 50), 20), rtIndexed(rtEval("first", "b", 50), 10), rtIndexed(rtEval("third", "c", 50), 30),
			},
			want: []string{"first", "second", "third"},
		},
		{
			name: "across scheduler types",
			evals: []*state.Evaluation{
				rtIndexed(rtTyped(rtEval("batch-high", "a", 80), state.JobTypeBatch), 1),
				rtIndexed(rtEval("service-low", "b", 20), 2),
				rtIndexed(rtEval("service-high", "c", 90), 3),
			},
			want: []string{"service-high", "batch-high", "service-low"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
			for _, e := range tc.evals {
				b.Enqueue(e)
			}
			var got []string
			for range tc.want {
				e, tok, err := b.Dequeue(context.Background(), []string{state.JobTypeService, state.JobTypeBatch}, time.Second)
				if err != nil || e == nil {
					t.Fatalf("dequeue: %v %v", e, err)
				}
				got = append(got, e.ID)
				if err := b.Ack(e.ID, tok); err != nil {
					t.Fatal(err)
				}
			}
			if !rtEqual(got, tc.want) {
				t.Fatalf("delivered %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBrokerOneEvalInFlightPerJobAndCoalescing(t *testing.T) {
	r := rtNewMemRaft(t)
	// The evaluations exist in state, so cancellation is visible there.
	// Written one after the other: e3 is the newest.
	for _, id := range []string{"e1", "e2", "e3"} {
		r.putEvals(t, rtEval(id, "web", 50))
	}
	first, middle, newest := rtMustEval(t, r, "e1"), rtMustEval(t, r, "e2"), rtMustEval(t, r, "e3")
	other := rtEval("other", "db", 10)
	b := rtStartBroker(t, r, BrokerConfig{})
	for _, e := range []*state.Evaluation{first, middle, newest, other} {
		b.Enqueue(e)
	}
	e, tok := rtDequeueNow(t, b)
	if e == nil || e.ID != "e1" {
		t.Fatalf("first delivery = %v, want e1", e)
	}
	// e2 and e3 wait for e1: the next delivery is the other job's, even
	// though its priority is lower.
	e2, tok2 := rtDequeueNow(t, b)
	if e2 == nil || e2.ID != "other" {
		t.Fatalf("second delivery = %v, want other (web has one in flight)", e2)
	}
	if e3, _ := rtDequeueNow(t, b); e3 != nil {
		t.Fatalf("delivered %s while web's e1 is in flight", e3.ID)
	}
	st, _ := b.Stats()
	if st.TotalPending != 2 || st.TotalUnacked != 2 {
		t.Fatalf("stats = %+v, want 2 pending and 2 unacked", st)
	}
	if err := b.Ack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	_ = b.Ack(e2.ID, tok2)
	next, _ := rtDequeueNow(t, b)
	if next == nil || next.ID != "e3" {
		t.Fatalf("after ack delivered %v, want the newest, e3", next)
	}
	rtWaitState(t, r.store, 5*time.Second, "e2 cancelled", func() bool {
		got, _ := r.store.EvalByID(nil, "e2")
		return got.Status == state.EvalStatusCancelled
	})
}

func TestBrokerNackRedeliversAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{NackDelay: 2 * time.Second, SubsequentNackDelay: 7 * time.Second})
		b.Enqueue(rtEval("e1", "web", 50))
		e, tok := rtDequeueNow(t, b)
		if err := b.Nack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
		if err := b.Ack(e.ID, tok); !errors.Is(err, ErrNotOutstanding) {
			t.Fatalf("ack after nack = %v, want ErrNotOutstanding", err)
		}
		time.Sleep(2*time.Second - time.Millisecond)
		if got, _ := rtDequeueNow(t, b); got != nil {
			t.Fatal("redelivered before the nack delay")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		e, tok = rtDequeueNow(t, b)
		if e == nil || e.ID != "e1" {
			t.Fatalf("after the nack delay got %v, want e1", e)
		}
		// The second nack waits the subsequent delay.
		if err := b.Nack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
		time.Sleep(7*time.Second - time.Millisecond)
		if got, _ := rtDequeueNow(t, b); got != nil {
			t.Fatal("redelivered before the subsequent nack delay")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got, _ := rtDequeueNow(t, b); got == nil {
			t.Fatal("not redelivered after the subsequent nack delay")
		}
	})
}

func TestBrokerRedeliversUnackedAfterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{UnackedTimeout: 30 * time.Second, NackDelay: time.Second})
		b.Enqueue(rtEval("e1", "web", 50))
		_, tok := rtDequeueNow(t, b)
		time.Sleep(20 * time.Second)
		if err := b.OutstandingReset("e1", tok); err != nil {
			t.Fatal(err)
		}
		time.Sleep(29 * time.Second)
		if got, ok := b.Outstanding("e1"); !ok || got != tok {
			t.Fatal("delivery timed out although its timer was reset")
		}
		time.Sleep(2*time.Second + time.Second)
		synctest.Wait()
		if _, ok := b.Outstanding("e1"); ok {
			t.Fatal("delivery still outstanding after the unacked timeout")
		}
		e, tok2 := rtDequeueNow(t, b)
		if e == nil || tok2 == tok {
			t.Fatalf("redelivery = %v with token %q, want e1 with a new token", e, tok2)
		}
		if err := b.Ack("e1", tok); !errors.Is(err, ErrTokenMismatch) {
			t.Fatalf("ack with the old token = %v, want ErrTokenMismatch", err)
		}
	})
}

func TestBrokerDeliveryLimitFailsEvalWithFollowUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		r.putEvals(t, rtEval("e1", "web", 50), rtEval("later", "web", 50))
		e1, later := rtMustEval(t, r, "e1"), rtMustEval(t, r, "later")
		b := rtStartBroker(t, r, BrokerConfig{DeliveryLimit: 3, NackDelay: time.Second, SubsequentNackDelay: time.Second, FailedFollowUpDelay: time.Minute})
		b.Enqueue(e1)
		b.Enqueue(later)
		for i := range 3 {
			synctest.Wait()
			e, tok := rtDequeueNow(t, b)
			if e == nil || e.ID != "e1" {
				t.Fatalf("delivery %d = %v, want e1", i+1, e)
			}
			if err := b.Nack(e.ID, tok); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		failed := rtMustEval(t, r, "e1")
		if failed.Status != state.EvalStatusFailed || failed.NextEval == "" {
			t.Fatalf("e1 after 3 deliveries: status %q next %q, want failed with a follow-up", failed.Status, failed.NextEval)
		}
		follow := rtMustEval(t, r, failed.NextEval)
		if follow.TriggeredBy != state.EvalTriggerFailedFollowUp || follow.Status != state.EvalStatusPending ||
			follow.PreviousEval != "e1" || follow.Wait < time.Minute || follow.Wait >= 2*time.Minute {
			t.Fatalf("follow-up = %+v", follow)
		}
		// The job is released: its next evaluation is delivered.
		e, _ := rtDequeueNow(t, b)
		if e == nil || e.ID != later.ID {
			t.Fatalf("after the failure delivered %v, want %s", e, later.ID)
		}
	})
}

func TestBrokerHoldsDelayedEvalsUntilDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
		due := time.Now().Add(time.Minute)
		e := rtEval("later", "web", 50)
		e.WaitUntil = due
		waiting := rtEval("wait", "db", 50)
		waiting.Wait = 10 * time.Second
		b.Enqueue(e)
		b.Enqueue(waiting)
		if got, _ := rtDequeueNow(t, b); got != nil {
			t.Fatalf("delivered %s before it was due", got.ID)
		}
		st, _ := b.Stats()
		if st.TotalWaiting != 2 {
			t.Fatalf("waiting = %d, want 2", st.TotalWaiting)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got, _ := rtDequeueNow(t, b); got == nil || got.ID != "wait" {
			t.Fatalf("after 10s delivered %v, want wait", got)
		}
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if got, _ := rtDequeueNow(t, b); got == nil || got.ID != "later" {
			t.Fatalf("at WaitUntil delivered %v, want later", got)
		}
	})
}

func TestBrokerRequeuesEvalEnqueuedWhileDelivered(t *testing.T) {
	b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
	b.Enqueue(rtEval("e1", "web", 50))
	e, tok := rtDequeueNow(t, b)
	b.Enqueue(e) // e.g. unblocked again while its worker re-blocks it
	if got, _ := rtDequeueNow(t, b); got != nil {
		t.Fatal("delivered twice at once")
	}
	if err := b.Ack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	if got, _ := rtDequeueNow(t, b); got == nil || got.ID != "e1" {
		t.Fatalf("after ack delivered %v, want e1 again", got)
	}
}

func TestBrokerDequeueWaitsAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
		got := make(chan string, 1)
		go func() {
			e, _, err := b.Dequeue(context.Background(), []string{state.JobTypeService}, time.Hour)
			if err != nil || e == nil {
				got <- "error"
				return
			}
			got <- e.ID
		}()
		synctest.Wait()
		b.Enqueue(rtEval("e1", "web", 50))
		if id := <-got; id != "e1" {
			t.Fatalf("waiting dequeue got %s", id)
		}
		if e, _, err := b.Dequeue(context.Background(), []string{state.JobTypeService}, time.Second); e != nil || err != nil {
			t.Fatalf("dequeue on an empty broker = %v, %v; want nothing after the timeout", e, err)
		}
		errc := make(chan error, 1)
		go func() {
			_, _, err := b.Dequeue(context.Background(), []string{state.JobTypeService}, 0)
			errc <- err
		}()
		synctest.Wait()
		b.Stop()
		if err := <-errc; !errors.Is(err, ErrNotLeader) {
			t.Fatalf("dequeue when the broker stops = %v, want ErrNotLeader", err)
		}
	})
}

func TestBrokerRestoredFromStateOnLeadership(t *testing.T) {
	r := rtNewMemRaft(t)
	node := scheduler.MockNode("n1")
	r.registerNode(t, node)
	pending := rtEval("pending", "web", 50)
	blocked := rtEval("blocked", "db", 50)
	blocked.Status = state.EvalStatusBlocked
	blocked.ClassEligibility = map[string]bool{"other-class": true}
	done := rtEval("done", "cache", 50)
	done.Status = state.EvalStatusComplete
	r.putEvals(t, pending, blocked, done)
	blocked = rtMustEval(t, r, "blocked")
	// The blocked evaluation saw the node already.
	blocked.SnapshotIndex = r.index
	r.putEvals(t, blocked)

	rt, err := NewRuntime(RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Service{rt.Broker, rt.Blocked, rt.feed} {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
	}
	st, err := rt.BrokerStats()
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalReady != 1 || st.TotalBlocked != 1 {
		t.Fatalf("restored stats = %+v, want 1 ready and 1 blocked", st)
	}
	if e, _ := rtDequeueNow(t, rt.Broker); e == nil || e.ID != "pending" {
		t.Fatalf("restored delivery = %v, want pending", e)
	}
	if !rt.Blocked.Tracked("blocked") {
		t.Fatal("blocked evaluation not restored into blocked evals")
	}
	// An evaluation written after leadership started reaches the broker
	// through the feed.
	r.putEvals(t, rtEval("new", "api", 50))
	rtWaitBroker(t, rt.Broker, "new evaluation enqueued", func(st *BrokerStats) bool { return st.TotalReady == 1 })
}

// rtWaitBroker waits until the broker's stats satisfy cond.
func rtWaitBroker(t *testing.T, b *EvalBroker, what string, cond func(*BrokerStats) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		ch := b.readyCh
		b.mu.Unlock()
		st, err := b.Stats()
		if err == nil && cond(st) {
			return
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("timed out waiting for %s (stats %+v)", what, st)
		}
	}
}

func rtIndexed(e *state.Evaluation, i uint64) *state.Evaluation {
	e.CreateIndex, e.ModifyIndex = i, i
	return e
}

func rtTyped(e *state.Evaluation, typ string) *state.Evaluation {
	e.Type = typ
	return e
}

func rtMustEval(t *testing.T, r *memRaft, id string) *state.Evaluation {
	t.Helper()
	e, err := r.store.EvalByID(nil, id)
	if err != nil || e == nil {
		t.Fatalf("eval %s: %v %v", id, e, err)
	}
	return e
}

func rtEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBrokerCoalescesABurstOfOneJob: a job registered many times while
// its first evaluation runs costs two evaluations, the first and the
// newest; the ones in between are cancelled in one write when the first
// is acked.
func TestBrokerCoalescesABurstOfOneJob(t *testing.T) {
	r := rtNewMemRaft(t)
	const burst = 50
	var evals []*state.Evaluation
	for i := range burst {
		id := fmt.Sprintf("e%02d", i)
		r.putEvals(t, rtEval(id, "web", 50))
		evals = append(evals, rtMustEval(t, r, id))
	}
	var log entryLog
	log.record(r)
	b := rtStartBroker(t, r, BrokerConfig{})
	b.Enqueue(evals[0])
	first, tok := rtDequeueNow(t, b)
	for _, e := range evals[1:] {
		b.Enqueue(e)
	}
	if st, _ := b.Stats(); st.TotalPending != burst-1 || st.TotalReady != 0 {
		t.Fatalf("stats while the first runs = %+v, want %d pending and none ready", st, burst-1)
	}
	if err := b.Ack(first.ID, tok); err != nil {
		t.Fatal(err)
	}
	next, tok := rtDequeueNow(t, b)
	if next == nil || next.ID != evals[burst-1].ID {
		t.Fatalf("after the ack delivered %v, want the newest, %s", next, evals[burst-1].ID)
	}
	if again, _ := rtDequeueNow(t, b); again != nil {
		t.Fatalf("delivered %s too", again.ID)
	}
	rtWaitState(t, r.store, 5*time.Second, "the burst cancelled", func() bool {
		for _, e := range evals[1 : burst-1] {
			if rtMustEval(t, r, e.ID).Status != state.EvalStatusCancelled {
				return false
			}
		}
		return true
	})
	if n := log.count(store.EvalUpdateRequestType); n != 1 {
		t.Fatalf("%d writes cancelled the burst, want 1", n)
	}
	if err := b.Ack(next.ID, tok); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.Stats(); st.TotalPending+st.TotalReady+st.TotalUnacked != 0 {
		t.Fatalf("stats after the newest = %+v, want nothing left", st)
	}
}

// Released blocked evaluations: one of priority 50 waits while one of
// priority 90 released with it is delivered, and its ack wakes the
// waiting worker; an ack that holds nothing back (the 50's own, with only
// more of priority 50 ready) wakes no one.
func TestBrokerGateLiftWakesOnlyWhenItHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
		released := func(id, job string, prio int, idx uint64) *state.Evaluation {
			e := rtIndexed(rtEval(id, job, prio), idx)
			e.Status = state.EvalStatusBlocked
			return e
		}
		b.EnqueueAll([]*state.Evaluation{released("high", "a", 90, 1), released("low-1", "b", 50, 2), released("low-2", "c", 50, 3)})
		high, highToken := rtDequeueNow(t, b)
		if high == nil || high.ID != "high" {
			t.Fatalf("first delivery %v, want high", high)
		}
		got := make(chan string, 1)
		go func() {
			e, _, err := b.Dequeue(t.Context(), []string{state.JobTypeService}, 0)
			if err != nil || e == nil {
				got <- fmt.Sprint(err)
				return
			}
			got <- e.ID
		}()
		synctest.Wait()
		select {
		case id := <-got:
			t.Fatalf("a worker took %s while the priority-90 release was delivered", id)
		default:
		}
		if err := b.Ack("high", highToken); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		var low string
		select {
		case low = <-got:
			if low != "low-1" {
				t.Fatalf("after the ack the waiting worker got %s, want low-1", low)
			}
		default:
			t.Fatal("the priority-90 release's ack did not wake the worker it held back")
		}
		token, _ := b.Outstanding(low)
		b.mu.Lock()
		ch := b.readyCh
		b.mu.Unlock()
		if err := b.Ack(low, token); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		woke := ch != b.readyCh
		b.mu.Unlock()
		if woke {
			t.Error("the ack of a priority-50 release woke the workers though it held nothing back")
		}
	})
}
