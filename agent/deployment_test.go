package agent

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// TestDevAgentRollsOutDeployments drives deployments end to end in one
// process (server, watcher, client health): a first version and a rolling
// update succeed and become stable, a broken version fails on an
// unhealthy allocation and is reverted to the stable one, whose
// allocations that were not replaced keep running.
func TestDevAgentRollsOutDeployments(t *testing.T) {
	a := startDevAgent(t)
	c := apiClient(t, a.HTTPAddr())
	ctx := context.Background()
	job := mockJob("web", 3)
	// Failed allocations are replaced quickly (the default waits 30s).
	job.TaskGroups[0].ReschedulePolicy = &state.ReschedulePolicy{Delay: 100 * time.Millisecond, DelayFunction: state.DelayFunctionConstant, Unlimited: true}
	job.TaskGroups[0].Update = &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthCheckTaskStates,
		MinHealthyTime: 50 * time.Millisecond, HealthyDeadline: 10 * time.Second, ProgressDeadline: 30 * time.Second, AutoRevert: true}
	// of returns the deployment of a job version, nil when none.
	of := func(version uint64) *state.Deployment {
		ds, _, err := c.Jobs().Deployments(ctx, "web", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.JobVersion == version {
				return d
			}
		}
		return nil
	}
	waitDeployment := func(version uint64, status string) *state.Deployment {
		t.Helper()
		var d *state.Deployment
		defer func() {
			if t.Failed() {
				t.Logf("latest deployment: %+v", d)
				if d != nil {
					t.Logf("groups: %+v", d.TaskGroups["g"])
				}
				allocs, _, _ := c.Jobs().Allocations(ctx, "web", false, nil)
				for _, a := range allocs {
					h := "nil"
					if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
						h = strconv.FormatBool(*a.DeploymentStatus.Healthy)
					}
					t.Logf("alloc %s %s v%d %s/%s dep=%s healthy=%s create=%d modify=%d prev=%s", a.ID[:8], a.Name, a.JobVersion, a.DesiredStatus, a.ClientStatus, a.DeploymentID, h, a.CreateIndex, a.ModifyIndex, a.PreviousAllocation)
				}
				evals, _, _ := c.Jobs().Evaluations(ctx, "web", nil)
				for _, e := range evals {
					t.Logf("eval %s %s %s create=%d wait=%v", e.ID[:8], e.TriggeredBy, e.Status, e.CreateIndex, e.WaitUntil)
				}
			}
		}()
		testutil.WaitFor(t, 30*time.Second, "deployment of version "+itoaU(version)+" "+status, func() bool {
			d = of(version)
			return d != nil && d.Status == status
		})
		return d
	}
	register := func(j *state.Job) {
		t.Helper()
		if _, _, err := c.Jobs().Register(ctx, j, nil, nil); err != nil {
			t.Fatal(err)
		}
	}

	register(job)
	waitDeployment(0, state.DeploymentStatusSuccessful)

	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"stdout_string": "v1\n"}
	register(v1)
	d := waitDeployment(1, state.DeploymentStatusSuccessful)
	if g := d.TaskGroups["g"]; g.DesiredTotal != 3 || g.HealthyAllocs != 3 {
		t.Fatalf("deployment of version 1: %+v", g)
	}
	running := runningByVersion(t, c)
	if running[1] != 3 || len(running) != 1 {
		t.Fatalf("running by version %v, want 3 of version 1", running)
	}
	if j, _, _ := c.Jobs().Info(ctx, "web", nil); !j.Stable {
		t.Fatal("version 1 not marked stable")
	}
	survivors := map[string]bool{}
	for _, al := range liveAllocs(t, c) {
		survivors[al.ID] = true
	}

	broken := v1.Copy()
	broken.TaskGroups[0].Tasks[0].Config = map[string]any{"start_error": "broken on purpose"}
	broken.TaskGroups[0].RestartPolicy = &state.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: "fail"}
	register(broken)
	failed := waitDeployment(2, state.DeploymentStatusFailed)
	if want := "Failed due to unhealthy allocations - rolling back to job version 1"; failed.StatusDescription != want {
		t.Fatalf("failed deployment says %q, want %q", failed.StatusDescription, want)
	}
	waitDeployment(3, state.DeploymentStatusSuccessful)
	j, _, _ := c.Jobs().Info(ctx, "web", nil)
	if j.Version != 3 || j.TaskGroups[0].Tasks[0].Config["stdout_string"] != "v1\n" {
		t.Fatalf("job at version %d with %v, want version 3 with version 1's config", j.Version, j.TaskGroups[0].Tasks[0].Config)
	}
	kept := 0
	for _, al := range liveAllocs(t, c) {
		if survivors[al.ID] && al.ClientStatus == state.AllocClientStatusRunning {
			kept++
		}
	}
	// max_parallel 1: one allocation of version 1 was replaced by the
	// broken one, the other two kept running throughout.
	if kept != 2 {
		t.Fatalf("%d allocations of version 1 still running, want 2", kept)
	}
}

func itoaU(v uint64) string { return strconv.FormatUint(v, 10) }

func liveAllocs(t *testing.T, c *api.Client) []*state.AllocListStub {
	t.Helper()
	allocs, _, err := c.Jobs().Allocations(context.Background(), "web", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []*state.AllocListStub
	for _, a := range allocs {
		if !a.Terminal() {
			out = append(out, a)
		}
	}
	return out
}

func runningByVersion(t *testing.T, c *api.Client) map[uint64]int {
	t.Helper()
	out := map[uint64]int{}
	for _, a := range liveAllocs(t, c) {
		if a.ClientStatus == state.AllocClientStatusRunning {
			out[a.JobVersion]++
		}
	}
	return out
}
