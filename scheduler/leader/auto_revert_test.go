package leader

import (
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// TestAutoRevertRollsOutTheRevertedVersion runs the leader's services end
// to end: version 0 deploys and becomes stable, version 1's new
// allocations all fail, its deployment fails and auto-reverts. As in
// Nomad, the reverted version (2, version 0's spec) then gets a deployment
// of its own, which the watcher marks successful (and the version stable)
// once its allocations are healthy: when version 1 replaced everything,
// the failed allocations are replaced at once (destructive updates); when
// its canary failed, version 0's allocations are updated in place and join
// the deployment healthy.
func TestAutoRevertRollsOutTheRevertedVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		canary int
	}{{"replaced", 0}, {"canary", 1}} {
		t.Run(tc.name, func(t *testing.T) { testAutoRevert(t, tc.canary) })
	}
}

func testAutoRevert(t *testing.T, canary int) {
	r := rtNewMemRaft(t)
	for _, name := range []string{"n1", "n2", "n3"} {
		r.registerNode(t, scheduler.MockNode(name))
	}
	startRuntime(t, r)
	const wait = 20 * time.Second

	job := scheduler.MockJob("web")
	tg := job.TaskGroups[0]
	tg.Count = 2
	tg.Update.MaxParallel, tg.Update.AutoRevert, tg.Update.Canary = 2, true, canary
	tg.Update.ProgressDeadline = time.Hour
	r.registerJob(t, job)

	// deployed waits for version v's deployment to have n allocations
	// placed and returns them (live, of that version).
	deployed := func(v uint64, n int) (*state.Deployment, []*state.Allocation) {
		t.Helper()
		var d *state.Deployment
		var mine []*state.Allocation
		rtWaitState(t, r.store, wait, "version placed in its deployment", func() bool {
			d, _ = r.store.LatestDeploymentByJob(nil, state.DefaultNamespace, "web")
			mine = nil
			if d == nil || d.JobVersion != v {
				return false
			}
			for _, a := range liveAllocs(r.store, "web") {
				if a.DeploymentID == d.ID && a.Job.Version == v {
					mine = append(mine, a)
				}
			}
			return len(mine) == n
		})
		return d, mine
	}
	report := func(healthy bool, allocs []*state.Allocation) {
		t.Helper()
		status := state.AllocClientStatusRunning
		if !healthy {
			status = state.AllocClientStatusFailed
		}
		var ups []*state.Allocation
		for _, a := range allocs {
			h := healthy
			ups = append(ups, &state.Allocation{ID: a.ID, ClientStatus: status,
				DeploymentStatus: &state.AllocDeploymentStatus{Healthy: &h, Timestamp: time.Now()}})
		}
		r.must(t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: ups, Now: time.Now().UnixNano()})
	}
	settled := func(d *state.Deployment, v uint64) {
		t.Helper()
		rtWaitState(t, r.store, wait, "deployment successful and version stable", func() bool {
			got, _ := r.store.DeploymentByID(nil, d.ID)
			j, _ := r.store.JobByIDAndVersion(nil, state.DefaultNamespace, "web", v)
			return got.Status == state.DeploymentStatusSuccessful && j != nil && j.Stable
		})
	}

	d0, allocs := deployed(0, 2)
	report(true, allocs)
	settled(d0, 0)

	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "2h"}
	r.registerJob(t, v1)
	want1 := 2
	if canary > 0 {
		want1 = canary
	}
	d1, allocs := deployed(1, want1)
	report(false, allocs)
	rtWaitState(t, r.store, wait, "version 1's deployment failed and reverted", func() bool {
		got, _ := r.store.DeploymentByID(nil, d1.ID)
		j, _ := r.store.JobByID(nil, state.DefaultNamespace, "web")
		return got.Status == state.DeploymentStatusFailed && j.Version == 2
	})
	if got, _ := r.store.DeploymentByID(nil, d1.ID); !strings.Contains(got.StatusDescription, "rolling back to job version 0") {
		t.Fatalf("failed deployment says %q", got.StatusDescription)
	}

	d2, allocs := deployed(2, 2)
	if d2.ID == d1.ID || d2.ID == d0.ID {
		t.Fatalf("reverted version rolled out in deployment %s, want its own", d2.ID)
	}
	var fresh []*state.Allocation
	for _, a := range allocs {
		switch {
		case canary > 0 && a.PreviousAllocation != "":
			t.Errorf("allocation %s replaces %s, want version 0's updated in place", a.ID, a.PreviousAllocation)
		case canary == 0 && a.PreviousAllocation == "":
			t.Errorf("allocation %s of the reverted version replaces nothing, want a failed one of version 1", a.ID)
		case a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil:
			fresh = append(fresh, a)
		}
	}
	if canary > 0 && len(liveAllocs(r.store, "web")) != 2 {
		t.Errorf("%d live allocations after the revert, want 2 (the failed canary stopped)", len(liveAllocs(r.store, "web")))
	}
	report(true, fresh)
	settled(d2, 2)
	if latest, _ := r.store.LatestDeploymentByJob(nil, state.DefaultNamespace, "web"); latest.ID != d2.ID {
		t.Fatalf("latest deployment %s, want the reverted version's %s", latest.ID, d2.ID)
	}
}
