package leader

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestDueLaunchCatchesUpOnce(t *testing.T) {
	every := &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "* * * * *"}
	base := time.Date(2026, 1, 5, 12, 0, 30, 0, time.UTC)
	cases := []struct {
		name      string
		now       time.Time
		due, next time.Time
	}{
		{"not yet", base.Add(29 * time.Second), time.Time{}, base.Add(30 * time.Second)},
		{"on time", base.Add(30 * time.Second), base.Add(30 * time.Second), base.Add(90 * time.Second)},
		{"five missed: the latest only", base.Add(4*time.Minute + 40*time.Second), base.Add(4*time.Minute + 30*time.Second), base.Add(5*time.Minute + 30*time.Second)},
	}
	for _, tc := range cases {
		due, next, err := DueLaunch(every, base, tc.now)
		if err != nil || !due.Equal(tc.due) || !next.Equal(tc.next) {
			t.Errorf("%s: due %v next %v (%v), want due %v next %v", tc.name, due, next, err, tc.due, tc.next)
		}
	}
}

func TestDueLaunchKeepsLocalTimeAcrossDST(t *testing.T) {
	// 09:00 every day in New York: across the end of daylight saving time
	// (2026-11-01) the launches stay at 09:00 local, 25 hours apart.
	cfg := &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "0 9 * * *", TimeZone: "America/New_York"}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 10, 31, 9, 0, 0, 0, ny)
	_, next, err := DueLaunch(cfg, first, first)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 1, 9, 0, 0, 0, ny); !next.Equal(want) || next.Sub(first) != 25*time.Hour {
		t.Errorf("next after %v = %v (%v later), want %v, 25h later", first, next, next.Sub(first), want)
	}
	if _, _, err := DueLaunch(&state.PeriodicConfig{Spec: "* * * * *", TimeZone: "Mars/Olympus"}, first, first); err == nil {
		t.Error("an unknown time zone was accepted")
	}
}

// periodicJob registers a periodic batch job at the bubble's current time.
func periodicJob(t *testing.T, r *memRaft, id string, overlap bool) *state.Job {
	t.Helper()
	job := scheduler.MockBatchJob(id)
	job.Periodic = &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "* * * * *", ProhibitOverlap: overlap}
	r.must(t, store.JobRegisterRequestType, &store.JobRegisterRequest{Job: job, Now: time.Now().UnixNano()})
	return job
}

func children(t *testing.T, st *store.Store, id string) []*state.Job {
	t.Helper()
	c, err := st.Children(nil, state.DefaultNamespace, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPeriodicLauncherLaunchesAndCatchesUpOnceAfterFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		ids := &schedtest.IDs{}
		periodicJob(t, r, "cron", false)
		start := func() *PeriodicLauncher {
			l := NewPeriodicLauncher(r.store, r, rtLog(), time.Now, ids.Next)
			if err := l.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return l
		}
		l := start()
		time.Sleep(61 * time.Second) // the bubble's clock: the first launch falls due
		synctest.Wait()
		if got := children(t, r.store, "cron"); len(got) != 1 {
			t.Fatalf("%d children after one minute, want 1", len(got))
		}
		// The leader goes away for five minutes; the next one makes the
		// latest missed launch only, then follows the schedule.
		l.Stop()
		time.Sleep(5 * time.Minute)
		l = start()
		synctest.Wait()
		if got := children(t, r.store, "cron"); len(got) != 2 {
			t.Fatalf("%d children after the failover, want 2 (one catch-up)", len(got))
		}
		// Two launchers at once (an old leader not yet stopped) still
		// launch each time once.
		l2 := start()
		time.Sleep(60 * time.Second)
		synctest.Wait()
		l.Stop()
		l2.Stop()
		got := children(t, r.store, "cron")
		if len(got) != 3 {
			t.Fatalf("%d children, want 3", len(got))
		}
		seen := map[string]bool{}
		for _, c := range got {
			if seen[c.ID] || c.ParentID != "cron" || c.Periodic != nil {
				t.Errorf("child %+v", c)
			}
			seen[c.ID] = true
		}
	})
}

func TestPeriodicLauncherProhibitOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		periodicJob(t, r, "cron", true)
		l := NewPeriodicLauncher(r.store, r, rtLog(), time.Now, (&schedtest.IDs{}).Next)
		if err := l.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer l.Stop()
		time.Sleep(61 * time.Second)
		synctest.Wait()
		// The first child never ends (no node runs it): the next launches
		// are skipped.
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if got := children(t, r.store, "cron"); len(got) != 1 {
			t.Fatalf("%d children with prohibit_overlap and a live child, want 1", len(got))
		}
	})
}
