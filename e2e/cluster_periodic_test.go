//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// TestPeriodicLaunchesSurviveALeaderKill: on a three-server cluster a job
// launching every three seconds keeps its schedule through a SIGKILL of
// the leader: every launch time is three seconds after the one before (no
// launch missed, the new leader caught up the one that fell due during the
// failover) and none is launched twice (child IDs name launch times, and
// the launch command refuses a time already launched).
func TestPeriodicLaunchesSurviveALeaderKill(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	old := c.leader(20 * time.Second)
	cl := old.client()
	ctx := context.Background()
	job := batchShJob("tick", `true`)
	job.Periodic = &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "*/3 * * * * * *"}
	if _, _, err := cl.Jobs().Register(ctx, job, nil, nil); err != nil {
		t.Fatal(err)
	}
	launches := func(s *server) []int64 {
		jobs, _, err := s.client().Jobs().List(ctx, &api.QueryOptions{Prefix: "tick/periodic-"})
		if err != nil {
			return nil
		}
		var out []int64
		for _, j := range jobs {
			var at int64
			if _, err := fmt.Sscanf(strings.TrimPrefix(j.ID, "tick/periodic-"), "%d", &at); err == nil {
				out = append(out, at)
			}
		}
		slices.Sort(out)
		return out
	}
	testutil.WaitFor(t, 30*time.Second, "two launches before the kill", func() bool { return len(launches(old)) >= 2 })
	old.kill()
	survivor := c.others(old)[0]
	before := len(launches(survivor))
	testutil.WaitFor(t, 60*time.Second, "three launches after the kill", func() bool { return len(launches(survivor)) >= before+3 })
	got := launches(c.leader(20 * time.Second))
	for i := 1; i < len(got); i++ {
		if got[i]-got[i-1] != 3 {
			t.Errorf("launch times %v: %d then %d, want every 3 s with none missed or repeated", got, got[i-1], got[i])
		}
	}
}
