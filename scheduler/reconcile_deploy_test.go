package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// deployEnv is a job rolling out on the harness: scripts drive it with
// steps that register versions, report health and run evals.
type deployEnv struct {
	t *testing.T
	h *schedtest.Harness
}

func newDeployEnv(t *testing.T) *deployEnv {
	h := schedtest.NewHarness(t)
	for i := range 4 {
		h.UpsertNodes(MockNode(fmt.Sprintf("n%d", i)))
	}
	return &deployEnv{t: t, h: h}
}

// job is the stored job.
func (e *deployEnv) job() *state.Job {
	e.t.Helper()
	j, err := e.h.Store.JobByID(nil, "default", "web")
	if err != nil || j == nil {
		e.t.Fatalf("read job: %v", err)
	}
	return j
}

// deployment is the job's latest deployment (nil when none).
func (e *deployEnv) deployment() *state.Deployment {
	e.t.Helper()
	d, err := e.h.Store.LatestDeploymentByJob(nil, "default", "web")
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// eval runs an annotated eval of the stored job and returns what it did
// to group web.
func (e *deployEnv) eval() state.DesiredUpdates {
	e.t.Helper()
	return *step(e.t, e.h, "default", "web", nil, state.EvalTriggerDeploymentWatcher)
}

// register stores a new version made by change from the current one.
func (e *deployEnv) register(change func(j *state.Job)) {
	e.t.Helper()
	j := e.job().Copy()
	change(j)
	e.h.UpsertJob(j)
}

// report marks n of the latest deployment's allocations whose health is
// unknown running and healthy (or unhealthy), in name order.
func (e *deployEnv) report(n int, healthy bool) {
	e.t.Helper()
	d := e.deployment()
	var ups []*state.Allocation
	for _, a := range e.h.LiveAllocs("default", "web") {
		if len(ups) == n {
			break
		}
		if a.DeploymentID != d.ID || (a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil) {
			continue
		}
		c := a.CopySkipJob()
		c.ClientStatus = state.AllocClientStatusRunning
		h := healthy
		c.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: &h, Timestamp: e.h.Clock()}
		ups = append(ups, c)
	}
	if len(ups) != n {
		e.t.Fatalf("only %d allocations of deployment %s await health, want %d", len(ups), d.ID, n)
	}
	e.h.ClientUpdate(ups...)
}

// running marks every live allocation running (an initial rollout's
// health is not what a test is about).
func (e *deployEnv) settle() {
	e.t.Helper()
	d := e.deployment()
	var ups []*state.Allocation
	for _, a := range e.h.LiveAllocs("default", "web") {
		c := a.CopySkipJob()
		c.ClientStatus = state.AllocClientStatusRunning
		if d != nil && a.DeploymentID == d.ID && (a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil) {
			yes := true
			c.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: &yes, Timestamp: e.h.Clock()}
		}
		ups = append(ups, c)
	}
	e.h.ClientUpdate(ups...)
	if d != nil && d.Active() {
		e.setStatus(d.ID, state.DeploymentStatusSuccessful)
	}
}

func (e *deployEnv) setStatus(id, status string) {
	e.h.Apply(store.DeploymentStatusUpdateRequestType, &store.DeploymentStatusUpdateRequest{
		Updates: []*store.DeploymentStatusUpdate{{DeploymentID: id, Status: status}},
	})
}

// versions counts live allocations by job version.
func (e *deployEnv) versions() map[uint64]int {
	out := map[uint64]int{}
	for _, a := range e.h.LiveAllocs("default", "web") {
		out[a.Job.Version]++
	}
	return out
}

func (e *deployEnv) wantVersions(want map[uint64]int) {
	e.t.Helper()
	got := e.versions()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Fatalf("live allocations by version %v, want %v", got, want)
	}
}

func destructive(j *state.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "2h"} }

// TestDeploymentScenarios drives rollouts step by step: each step does
// something and says what the next eval must do.
func TestDeploymentScenarios(t *testing.T) {
	type stepT struct {
		do    func(e *deployEnv)
		want  state.DesiredUpdates
		check func(e *deployEnv)
	}
	for _, c := range []struct {
		name   string
		count  int
		update func(u *state.UpdateStrategy)
		batch  bool
		steps  []stepT
	}{
		{
			name: "rolling with max_parallel", count: 5,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 2 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{DestructiveUpdate: 2, Ignore: 3},
					check: func(e *deployEnv) {
						d := e.deployment()
						if d.JobVersion != 1 || d.Status != state.DeploymentStatusRunning || d.TaskGroups["web"].DesiredTotal != 5 || d.TaskGroups["web"].PlacedAllocs != 2 {
							e.t.Fatalf("deployment %+v %+v: want running for version 1, 5 desired, 2 placed", d, d.TaskGroups["web"])
						}
						e.wantVersions(map[uint64]int{0: 3, 1: 2})
					}},
				// Nothing healthy yet: both in flight, nothing more.
				{do: func(e *deployEnv) {}, want: state.DesiredUpdates{Ignore: 5}},
				{do: func(e *deployEnv) { e.report(1, true) }, want: state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 4}},
				{do: func(e *deployEnv) { e.report(2, true) }, want: state.DesiredUpdates{DestructiveUpdate: 2, Ignore: 3}},
				{do: func(e *deployEnv) { e.report(2, true) }, want: state.DesiredUpdates{Ignore: 5},
					check: func(e *deployEnv) {
						e.wantVersions(map[uint64]int{1: 5})
						if ds := e.deployment().TaskGroups["web"]; ds.HealthyAllocs != 5 || ds.PlacedAllocs != 5 {
							e.t.Fatalf("group state %+v: want 5 placed, 5 healthy", ds)
						}
					}},
			},
		},
		{
			name: "canaries then promote", count: 3,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 1; u.Canary = 1 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{Canary: 1, Ignore: 3},
					check: func(e *deployEnv) {
						e.wantVersions(map[uint64]int{0: 3, 1: 1})
						d := e.deployment()
						if ds := d.TaskGroups["web"]; ds.DesiredCanaries != 1 || len(ds.PlacedCanaries) != 1 || ds.Promoted {
							e.t.Fatalf("group state %+v: want 1 canary placed, not promoted", ds)
						}
						if d.StatusDescription != DeploymentDescRunningNeedsPromo {
							e.t.Fatalf("description %q", d.StatusDescription)
						}
					}},
				// A healthy canary waits for promotion: nothing else moves.
				{do: func(e *deployEnv) { e.report(1, true) }, want: state.DesiredUpdates{Ignore: 3}},
				{do: func(e *deployEnv) {
					e.h.Apply(store.DeploymentPromoteRequestType, &store.DeploymentPromoteRequest{DeploymentID: e.deployment().ID, All: true})
				}, want: state.DesiredUpdates{Stop: 1, DestructiveUpdate: 1, Ignore: 2},
					check: func(e *deployEnv) { e.wantVersions(map[uint64]int{0: 1, 1: 2}) }},
				{do: func(e *deployEnv) { e.report(1, true) }, want: state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 2}},
				{do: func(e *deployEnv) { e.report(1, true) }, want: state.DesiredUpdates{Ignore: 3},
					check: func(e *deployEnv) { e.wantVersions(map[uint64]int{1: 3}) }},
			},
		},
		{
			name: "failed canary holds the rollout", count: 3,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 3; u.Canary = 1 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{Canary: 1, Ignore: 3}},
				{do: func(e *deployEnv) { e.report(1, false) }, want: state.DesiredUpdates{Ignore: 3},
					check: func(e *deployEnv) {
						if ds := e.deployment().TaskGroups["web"]; ds.UnhealthyAllocs != 1 {
							e.t.Fatalf("group state %+v: want 1 unhealthy", ds)
						}
						e.wantVersions(map[uint64]int{0: 3, 1: 1})
					}},
				// The watcher fails it: the canary stops, the old version stays.
				{do: func(e *deployEnv) { e.setStatus(e.deployment().ID, state.DeploymentStatusFailed) }, want: state.DesiredUpdates{Stop: 1, Ignore: 3},
					check: func(e *deployEnv) { e.wantVersions(map[uint64]int{0: 3}) }},
				{do: func(e *deployEnv) {}, want: state.DesiredUpdates{Ignore: 3}},
			},
		},
		{
			name: "unhealthy allocation stops the rollout", count: 4,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 2 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{DestructiveUpdate: 2, Ignore: 2}},
				{do: func(e *deployEnv) { e.report(1, true); e.report(1, false) }, want: state.DesiredUpdates{Ignore: 4}},
			},
		},
		{
			name: "failed allocation stops the rollout", count: 4,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 1 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 3}},
				// It failed before its health was reported: nothing more
				// is replaced (its reschedule waits for its delay).
				{do: func(e *deployEnv) {
					var failed []*state.Allocation
					for _, a := range e.h.LiveAllocs("default", "web") {
						if a.DeploymentID == e.deployment().ID {
							failed = append(failed, a)
						}
					}
					clientStatus(e.h, state.AllocClientStatusFailed, failed...)
				}, want: state.DesiredUpdates{Ignore: 4}},
			},
		},
		{
			name: "revert after a failed allocation", count: 3,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 1 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 2}},
				{do: func(e *deployEnv) {
					d := e.deployment()
					for _, a := range e.h.LiveAllocs("default", "web") {
						if a.DeploymentID == d.ID {
							c := a.CopySkipJob()
							no := false
							c.ClientStatus = state.AllocClientStatusFailed
							c.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: &no, Timestamp: e.h.Clock()}
							e.h.ClientUpdate(c)
						}
					}
					e.setStatus(d.ID, state.DeploymentStatusFailed)
					v0, _ := e.h.Store.JobByIDAndVersion(nil, "default", "web", 0)
					e.h.UpsertJob(v0.Copy()) // the revert
				}, want: state.DesiredUpdates{InPlaceUpdate: 2, Ignore: 1},
					// As in Nomad, the revert does not replace the failed
					// allocation at once: a follow-up eval waits for its
					// reschedule delay.
					check: func(e *deployEnv) {
						if len(e.h.CreatedEvals) == 0 {
							e.t.Fatal("the revert's eval created no follow-up eval for the failed allocation")
						}
						last := e.h.CreatedEvals[len(e.h.CreatedEvals)-1]
						if last.TriggeredBy != state.EvalTriggerRetryFailedAlloc || !last.WaitUntil.After(e.h.Clock()) {
							e.t.Fatalf("last created eval %s due %v (now %v): want a delayed %s eval",
								last.TriggeredBy, last.WaitUntil, e.h.Clock(), state.EvalTriggerRetryFailedAlloc)
						}
					}},
				// The failed one is rescheduled after its delay, into the
				// revert's deployment.
				{do: func(e *deployEnv) { e.h.Advance(time.Hour) }, want: state.DesiredUpdates{Place: 1, Ignore: 2},
					check: func(e *deployEnv) {
						e.report(1, true)
						d := e.deployment()
						if g := d.TaskGroups["web"]; d.JobVersion != 2 || g.PlacedAllocs != 3 || g.HealthyAllocs != 3 {
							e.t.Fatalf("revert deployment v%d %+v: want 3 placed, 3 healthy", d.JobVersion, g)
						}
					}},
			},
		},
		{
			name: "in-place update stays in place, healthy", count: 3,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 1 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(func(j *state.Job) { j.TaskGroups[0].RestartPolicy.Attempts = 7 }) },
					want: state.DesiredUpdates{InPlaceUpdate: 3},
					check: func(e *deployEnv) {
						d := e.deployment()
						if ds := d.TaskGroups["web"]; d.JobVersion != 1 || ds.HealthyAllocs != 3 || ds.PlacedAllocs != 3 {
							e.t.Fatalf("deployment v%d %+v: want 3 in-place allocations counted healthy", d.JobVersion, ds)
						}
					}},
			},
		},
		{
			name: "paused deployment replaces nothing", count: 3,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 1 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 2}},
				{do: func(e *deployEnv) { e.report(1, true); e.setStatus(e.deployment().ID, state.DeploymentStatusPaused) },
					want: state.DesiredUpdates{Ignore: 3}},
				{do: func(e *deployEnv) { e.setStatus(e.deployment().ID, state.DeploymentStatusRunning) },
					want: state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 2}},
			},
		},
		{
			name: "scale during a deployment", count: 4,
			update: func(u *state.UpdateStrategy) { u.MaxParallel = 1 },
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 3}},
				// A new version (count 6) cancels the running deployment;
				// the two new allocations are placed at once, the
				// rollout goes on one at a time.
				{do: func(e *deployEnv) {
					first := e.deployment().ID
					e.register(func(j *state.Job) { j.TaskGroups[0].Count = 6 })
					old, _ := e.h.Store.DeploymentByID(nil, first)
					if old.Status != state.DeploymentStatusCancelled {
						e.t.Fatalf("older deployment %s, want cancelled", old.Status)
					}
				}, want: state.DesiredUpdates{Place: 2, InPlaceUpdate: 1, DestructiveUpdate: 1, Ignore: 2},
					check: func(e *deployEnv) {
						d := e.deployment()
						if d.JobVersion != 2 || d.TaskGroups["web"].DesiredTotal != 6 {
							e.t.Fatalf("deployment v%d %+v: want version 2 of 6", d.JobVersion, d.TaskGroups["web"])
						}
					}},
			},
		},
		{
			name: "batch jobs get no deployment", count: 3, batch: true,
			steps: []stepT{
				{do: func(e *deployEnv) { e.register(destructive) }, want: state.DesiredUpdates{DestructiveUpdate: 3},
					check: func(e *deployEnv) {
						if d := e.deployment(); d != nil {
							e.t.Fatalf("batch job got deployment %+v", d)
						}
					}},
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newDeployEnv(t)
			job := MockJob("web")
			if c.batch {
				job = MockBatchJob("web")
			}
			job.TaskGroups[0].Count = c.count
			if c.update != nil {
				c.update(job.TaskGroups[0].Update)
			}
			runEval(t, e.h, job)
			if d := e.deployment(); !c.batch && (d == nil || d.JobVersion != 0 || d.TaskGroups["web"].PlacedAllocs != c.count) {
				t.Fatalf("first deployment %+v: want one for version 0 with %d placed", d, c.count)
			}
			e.settle()
			for i, s := range c.steps {
				s.do(e)
				if got := e.eval(); got != s.want {
					t.Fatalf("step %d: eval did %+v, want %+v", i, got, s.want)
				}
				if s.check != nil {
					s.check(e)
				}
			}
		})
	}
}

// TestDeploymentOfOneChangedGroup: a version that changes one of two
// groups replaces that group's allocations one at a time, while the
// other's are updated in place and join the deployment healthy; a group
// of count 0 has nothing to roll out and stays out of it.
func TestDeploymentOfOneChangedGroup(t *testing.T) {
	e := newDeployEnv(t)
	job := MockJob("web")
	job.TaskGroups[0].Count = 2
	api := job.TaskGroups[0].Copy()
	api.Name = "api"
	idle := job.TaskGroups[0].Copy()
	idle.Name, idle.Count = "idle", 0
	job.TaskGroups = append(job.TaskGroups, api, idle)
	runEval(t, e.h, job)
	e.settle()
	e.register(func(j *state.Job) { j.TaskGroups[1].Tasks[0].Config = map[string]any{"run_for": "2h"} })
	e.eval()
	d := e.deployment()
	web, apiState := d.TaskGroups["web"], d.TaskGroups["api"]
	if d.JobVersion != 1 || len(d.TaskGroups) != 2 || web == nil || apiState == nil {
		t.Fatalf("deployment of version %d has groups %v, want web and api", d.JobVersion, slices.Sorted(maps.Keys(d.TaskGroups)))
	}
	if web.HealthyAllocs != 2 || apiState.PlacedAllocs != 1 || apiState.HealthyAllocs != 0 {
		t.Fatalf("web %+v, api %+v: want web 2 healthy in place, api 1 replaced", web, apiState)
	}
}
