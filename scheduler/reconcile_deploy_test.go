package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

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
