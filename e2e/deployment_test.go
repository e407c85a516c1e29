//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// TestRollingUpdateAutoReverts is issue 12's end-to-end test against the
// real binary: a raw_exec service job rolls out a new version one
// allocation at a time; a broken version after it fails on its first
// allocation and the job is reverted to the stable version, while the
// processes of the allocations the broken version did not reach keep
// running (same PIDs) throughout.
func TestRollingUpdateAutoReverts(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	ctx := context.Background()

	job := httpServerJob("roll", 3)
	tg := job.TaskGroups[0]
	tg.Update = &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthCheckTaskStates,
		MinHealthyTime: 200 * time.Millisecond, HealthyDeadline: 10 * time.Second, ProgressDeadline: 30 * time.Second, AutoRevert: true}
	tg.ReschedulePolicy = &state.ReschedulePolicy{Delay: 200 * time.Millisecond, DelayFunction: state.DelayFunctionConstant, Unlimited: true}
	register := func(j *state.Job) {
		t.Helper()
		if _, _, err := c.Jobs().Register(ctx, j, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	var ports []int
	t.Cleanup(func() { killServers(ports) })

	register(job)
	waitDeployment(t, c, "roll", 0, state.DeploymentStatusSuccessful)
	v1 := job.Copy()
	v1.Meta = map[string]string{"release": "1"}
	register(v1)
	waitDeployment(t, c, "roll", 1, state.DeploymentStatusSuccessful)

	// The stable version's processes.
	pids := map[string]int{} // allocation ID → server PID
	byPort := map[string]int{}
	for _, al := range runningAllocs(t, c, "roll", 3) {
		p := allocPort(al, "http")
		ports = append(ports, p)
		testutil.WaitForErr(t, 20*time.Second, fmt.Sprintf("HTTP on port %d", p), func() error { return serves(p) })
		got := serverPIDs(p)
		if len(got) != 1 {
			t.Fatalf("processes on port %d: %v", p, got)
		}
		pids[al.ID], byPort[al.ID] = got[0], p
	}

	broken := v1.Copy()
	broken.Meta = map[string]string{"release": "2"}
	broken.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/nonexistent/sched-e2e-broken"}
	broken.TaskGroups[0].RestartPolicy = &state.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: 100 * time.Millisecond, Mode: state.RestartPolicyModeFail}
	register(broken)
	failed := waitDeployment(t, c, "roll", 2, state.DeploymentStatusFailed)
	if want := "Failed due to unhealthy allocations - rolling back to job version 1"; failed.StatusDescription != want {
		t.Fatalf("deployment of the broken version: %q, want %q", failed.StatusDescription, want)
	}
	waitDeployment(t, c, "roll", 3, state.DeploymentStatusSuccessful)
	cur, _, err := c.Jobs().Info(ctx, "roll", nil)
	if err != nil || cur.Meta["release"] != "1" || !cur.Stable {
		t.Fatalf("job after the revert: %+v, %v; want version 1's spec, stable", cur, err)
	}

	// max_parallel = 1: the broken version replaced one allocation; the
	// other two kept their processes.
	kept := 0
	for id, pid := range pids {
		al, _, err := c.Allocations().Info(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if al.ServerTerminal() {
			continue
		}
		if now := serverPIDs(byPort[id]); !slices.Equal(now, []int{pid}) || serves(byPort[id]) != nil {
			t.Fatalf("allocation %s kept but its process changed: %v, was %d", id, now, pid)
		}
		kept++
	}
	if kept != 2 {
		t.Fatalf("%d allocations of the stable version kept running, want 2", kept)
	}
	runningAllocs(t, c, "roll", 3)
}

// waitDeployment waits until the deployment of a job version has status.
func waitDeployment(t *testing.T, c *api.Client, job string, version uint64, status string) *state.Deployment {
	t.Helper()
	var found *state.Deployment
	testutil.WaitForErr(t, 60*time.Second, fmt.Sprintf("deployment of %s version %d %s", job, version, status), func() error {
		ds, _, err := c.Jobs().Deployments(context.Background(), job, false, nil)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if d.JobVersion == version {
				found = d
				if d.Status == status {
					return nil
				}
				return fmt.Errorf("status %s (%s)", d.Status, d.StatusDescription)
			}
		}
		return fmt.Errorf("no deployment yet")
	})
	return found
}

// TestClusterDeploymentResumesAfterFailover: three servers and one client
// agent; a rolling update is under way (one batch healthy, the rest to
// go) when the leader is SIGKILLed. The new leader's deployment watcher
// picks the rollout up from state and it completes.
func TestClusterDeploymentResumesAfterFailover(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	leader := c.leader(20 * time.Second)
	startClientAgent(t, c)
	cl := leader.client()
	ctx := context.Background()
	testutil.WaitForErr(t, 30*time.Second, "the client node to be ready", func() error {
		nodes, _, err := cl.Nodes().List(ctx, nil)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.Status == state.NodeStatusReady {
				return nil
			}
		}
		return fmt.Errorf("%d nodes, none ready", len(nodes))
	})

	job := &state.Job{
		ID: "failover-roll", Type: state.JobTypeService,
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: 4,
			Update: &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthCheckTaskStates,
				MinHealthyTime: 2 * time.Second, HealthyDeadline: 30 * time.Second, ProgressDeadline: time.Minute},
			Tasks: []*state.Task{{Name: "t", Driver: "mock", Config: map[string]any{"run_for": "1h"},
				Resources: &state.Resources{CPU: 50, MemoryMB: 32}}},
		}},
	}
	if _, _, err := cl.Jobs().Register(ctx, job, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitDeployment(t, cl, job.ID, 0, state.DeploymentStatusSuccessful)
	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "2h"}
	if _, _, err := cl.Jobs().Register(ctx, v1, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, 60*time.Second, "the rollout half way", func() error {
		d := waitDeployment(t, cl, job.ID, 1, state.DeploymentStatusRunning)
		if h := d.TaskGroups["g"].HealthyAllocs; h < 1 || h > 2 {
			return fmt.Errorf("%d healthy", h)
		}
		return nil
	})
	leader.kill()
	cl = c.leader(30 * time.Second).client()
	d := waitDeployment(t, cl, job.ID, 1, state.DeploymentStatusSuccessful)
	if g := d.TaskGroups["g"]; g.HealthyAllocs < 4 {
		t.Fatalf("deployment after failover: %+v", g)
	}
	testutil.WaitForErr(t, 30*time.Second, "4 allocations of version 1 running", func() error {
		allocs, _, err := cl.Jobs().Allocations(ctx, job.ID, false, nil)
		if err != nil {
			return err
		}
		n := 0
		for _, a := range allocs {
			if !a.Terminal() && a.ClientStatus == state.AllocClientStatusRunning && a.JobVersion == 1 {
				n++
			}
		}
		if n != 4 {
			return fmt.Errorf("%d running at version 1", n)
		}
		return nil
	})
}
