package leader

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// TestRuntimeSystemRollingUpdateWaitsStagger runs a system job's rolling
// update (max_parallel = 1, stagger = 30s) through the real broker,
// workers and plan applier: one allocation is replaced at once, the next
// only once the stagger has passed (not by 29s, by 31s), the last one a
// stagger after that.
func TestRuntimeSystemRollingUpdateWaitsStagger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		for _, name := range []string{"n1", "n2", "n3"} {
			r.registerNode(t, scheduler.MockNode(name))
		}
		startRuntime(t, r)
		job := scheduler.MockSystemJob("sys")
		r.registerJob(t, job)
		synctest.Wait()
		if n := len(liveAllocs(r.store, "sys")); n != 3 {
			t.Fatalf("%d allocations placed, want 3", n)
		}

		v1 := job.Copy()
		v1.TaskGroups[0].Update = &state.UpdateStrategy{MaxParallel: 1, Stagger: 30 * time.Second}
		v1.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"}
		time.Sleep(time.Millisecond) // the bubble's clock names the register eval: a new one
		r.registerJob(t, v1)
		updated := func() int {
			n := 0
			for _, a := range liveAllocs(r.store, "sys") {
				if a.Job.TaskGroups[0].Tasks[0].Env["V"] == "2" {
					n++
				}
			}
			return n
		}
		for _, want := range []struct {
			after time.Duration
			n     int
		}{{time.Second, 1}, {28 * time.Second, 1}, {2 * time.Second, 2}, {28 * time.Second, 2}, {3 * time.Second, 3}} {
			time.Sleep(want.after)
			synctest.Wait()
			if got := updated(); got != want.n {
				// What the broker holds explains a wrong count.
				evals, _ := r.store.EvalsByJob(nil, "default", "sys")
				for _, e := range evals {
					t.Logf("eval %s %s %s %v wait %v", e.ID, e.TriggeredBy, e.Status, e.StatusDescription, e.WaitUntil)
				}
				for _, a := range liveAllocs(r.store, "sys") {
					t.Logf("alloc %s %s v%d", a.ID, a.NodeID, a.Job.Version)
				}
				t.Fatalf("%v more: %d allocations updated, want %d", want.after, got, want.n)
			}
		}
		if n := len(liveAllocs(r.store, "sys")); n != 3 {
			t.Fatalf("%d live allocations after the update, want 3", n)
		}
	})
}
