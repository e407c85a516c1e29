package leader

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// The general workers take evaluations by the queue's order across small
// and large jobs; the small-job workers take only small jobs', in the
// same order among them, and nothing when only large ones are ready.
func TestBrokerQueuesSmallJobsApart(t *testing.T) {
	small := func(e *state.Evaluation) bool { return strings.HasPrefix(e.JobID, "small") }
	enqueue := func(b *EvalBroker) {
		b.Enqueue(rtIndexed(rtEval("large-90", "large-a", 90), 1))
		b.Enqueue(rtIndexed(rtEval("small-50", "small-a", 50), 2))
		b.Enqueue(rtIndexed(rtEval("small-70", "small-b", 70), 3))
		b.Enqueue(rtIndexed(rtEval("large-10", "large-b", 10), 4))
	}
	types := []string{state.JobTypeService, state.JobTypeBatch}
	take := func(b *EvalBroker, smallOnly bool) string {
		b.mu.Lock()
		defer b.mu.Unlock()
		e, _ := b.dequeueLocked(types, smallOnly)
		if e == nil {
			return ""
		}
		return e.ID
	}

	b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
	b.SetSmall(small)
	enqueue(b)
	var got []string
	for id := take(b, false); id != ""; id = take(b, false) {
		got = append(got, id)
	}
	if want := "large-90 small-70 small-50 large-10"; strings.Join(got, " ") != want {
		t.Errorf("general workers took %v, want %s", got, want)
	}

	b = rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
	b.SetSmall(small)
	enqueue(b)
	got = nil
	for id := take(b, true); id != ""; id = take(b, true) {
		got = append(got, id)
	}
	if want := "small-70 small-50"; strings.Join(got, " ") != want {
		t.Errorf("small-job workers took %v, want %s", got, want)
	}
	if st, _ := b.Stats(); st.TotalReady != 2 || st.ByScheduler[state.JobTypeService].Ready != 2 {
		t.Errorf("ready after the small ones: %d (service %d), want the 2 large ones", st.TotalReady, st.ByScheduler[state.JobTypeService].Ready)
	}

	// A waiting small-job worker is woken by a small job's evaluation
	// (a large one's is left to the general workers).
	synctest.Test(t, func(t *testing.T) {
		b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
		b.SetSmall(small)
		got := make(chan string, 1)
		go func() {
			e, _, err := b.DequeueSmall(t.Context(), types, 0)
			if err != nil || e == nil {
				got <- fmt.Sprint(err)
				return
			}
			got <- e.ID
		}()
		synctest.Wait() // the worker waits
		b.Enqueue(rtIndexed(rtEval("large-90", "large-a", 90), 1))
		synctest.Wait()
		select {
		case id := <-got:
			t.Fatalf("a large job's evaluation woke a small-job worker, which took %s", id)
		default:
		}
		b.Enqueue(rtIndexed(rtEval("small-50", "small-a", 50), 2))
		synctest.Wait()
		select {
		case id := <-got:
			if id != "small-50" {
				t.Errorf("a waiting small-job worker got %s, want small-50", id)
			}
		default:
			t.Fatal("a waiting small-job worker was not woken by a small job's evaluation")
		}
	})

	// Without SetSmall nothing is small.
	b = rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
	enqueue(b)
	if id := take(b, true); id != "" {
		t.Errorf("without SetSmall a small-job worker took %s", id)
	}
}

// StoreSmall: service and batch jobs of at most SmallJobAllocs
// allocations in all their groups; not system jobs, not a job that is
// gone.
func TestStoreSmall(t *testing.T) {
	r := rtNewMemRaft(t)
	job := func(id, typ string, counts ...int) *state.Job {
		j := scheduler.MockJob(id)
		j.Type = typ
		tg := j.TaskGroups[0]
		j.TaskGroups = nil
		for i, c := range counts {
			g := tg.Copy()
			g.Name = fmt.Sprintf("g%d", i)
			g.Count = c
			j.TaskGroups = append(j.TaskGroups, g)
		}
		return j
	}
	for _, tc := range []struct {
		job  *state.Job
		want bool
	}{
		{job("one", state.JobTypeService, 1), true},
		{job("batch-at-limit", state.JobTypeBatch, SmallJobAllocs), true},
		{job("over-in-one-group", state.JobTypeService, SmallJobAllocs+1), false},
		{job("over-in-two-groups", state.JobTypeService, SmallJobAllocs/2, SmallJobAllocs/2+1), false},
		{job("system", state.JobTypeSystem, 1), false},
	} {
		r.registerJob(t, tc.job)
		e := rtEval("e-"+tc.job.ID, tc.job.ID, 50)
		if got := StoreSmall(r.store)(e); got != tc.want {
			t.Errorf("%s: small = %v, want %v", tc.job.ID, got, tc.want)
		}
	}
	if StoreSmall(r.store)(rtEval("e-gone", "gone", 50)) {
		t.Error("an evaluation of a job that is not in the store is small")
	}
}

// With one general worker and three small-job workers, a large job and
// thirty small ones are all placed, and the small-job workers did part
// of it.
func TestSmallWorkersPlaceSmallJobs(t *testing.T) {
	r := rtNewMemRaft(t)
	for i := range 20 {
		r.registerNode(t, scheduler.MockNode(fmt.Sprintf("n%d", i)))
	}
	rt := startRuntimeConfig(t, RuntimeConfig{Store: r.store, Raft: r, Logger: rtLog(), Workers: 1, SmallWorkers: 3,
		Blocked: BlockedConfig{UnblockCoalesce: time.Millisecond}})
	large := scheduler.MockJob("large")
	large.TaskGroups[0].Count = SmallJobAllocs + 4
	large.TaskGroups[0].Tasks[0].Resources.CPU = 100
	r.registerJob(t, large)
	for i := range 30 {
		j := scheduler.MockJob(fmt.Sprintf("small-%02d", i))
		j.TaskGroups[0].Count = 1
		j.TaskGroups[0].Tasks[0].Resources.CPU = 100
		r.registerJob(t, j)
	}
	rtWaitState(t, r.store, 30*time.Second, "every job placed", func() bool {
		all, _ := r.store.Allocs(nil, state.DefaultNamespace, "")
		return len(all) == SmallJobAllocs+4+30
	})
	if ws := rt.Workers.Stats(); ws.SmallAcked == 0 || ws.SmallAcked > 30 {
		t.Errorf("small-job workers acked %d evaluations, want between 1 and the 30 small jobs' (stats %+v)", ws.SmallAcked, ws)
	}
}

// A small-job worker leaves a released small job's evaluation waiting
// while a large job's of higher priority, released with it, waits for a
// general worker and then until its ack: the freed room goes to the
// higher priority first.
func TestSmallWorkersLeaveReleasesToHigherLargeOnes(t *testing.T) {
	b := rtStartBroker(t, rtNewMemRaft(t), BrokerConfig{})
	b.SetSmall(func(e *state.Evaluation) bool { return strings.HasPrefix(e.JobID, "small") })
	released := func(id, job string, prio int, idx uint64) *state.Evaluation {
		e := rtIndexed(rtEval(id, job, prio), idx)
		e.Status = state.EvalStatusBlocked
		return e
	}
	b.EnqueueAll([]*state.Evaluation{released("large-90", "large-a", 90, 1), released("small-50", "small-a", 50, 2)})
	take := func(smallOnly bool) (string, string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		e, token := b.dequeueLocked([]string{state.JobTypeService}, smallOnly)
		if e == nil {
			return "", ""
		}
		return e.ID, token
	}
	if id, _ := take(true); id != "" {
		t.Fatalf("a small-job worker took %s while the priority-90 release waited for a general worker", id)
	}
	large, token := take(false)
	if large != "large-90" {
		t.Fatalf("a general worker took %q, want large-90", large)
	}
	if id, _ := take(true); id != "" {
		t.Fatalf("a small-job worker took %s while the priority-90 release was delivered", id)
	}
	if err := b.Ack(large, token); err != nil {
		t.Fatal(err)
	}
	if id, _ := take(true); id != "small-50" {
		t.Fatalf("after the ack a small-job worker took %q, want small-50", id)
	}
}
