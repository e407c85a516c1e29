package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// deployed places j with a deployment whose update block checks health.
func deployed(t *testing.T, fs *fakeServer, c *Client, j *state.Job, check string, minHealthy time.Duration) *state.Allocation {
	t.Helper()
	j.TaskGroups[0].Update = &state.UpdateStrategy{HealthCheck: check, MinHealthyTime: minHealthy, HealthyDeadline: 5 * time.Second}
	a := allocFor(c, j)
	a.DeploymentID = state.NewID()
	fs.addAlloc(a)
	return a
}

func waitHealth(t *testing.T, fs *fakeServer, id string) (bool, time.Time) {
	t.Helper()
	var ds *state.AllocDeploymentStatus
	testutil.WaitForErr(t, 10*time.Second, "a health verdict", func() error {
		if a := fs.alloc(id); a != nil && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			ds = a.DeploymentStatus
			return nil
		}
		return fmt.Errorf("none yet")
	})
	return *ds.Healthy, ds.Timestamp
}

func TestDeploymentHealthFromTaskStates(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	a := deployed(t, fs, c, job(state.JobTypeService, mock("web", nil)), state.UpdateHealthCheckTaskStates, 200*time.Millisecond)
	running := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	healthy, at := waitHealth(t, fs, a.ID)
	started := running.TaskStates["web"].StartedAt
	if !healthy || at.Sub(started) < 200*time.Millisecond {
		t.Fatalf("healthy=%v at %v, %v after the start (min_healthy_time 200ms)", healthy, at, at.Sub(started))
	}
}

func TestDeploymentHealthFailsWithTheTask(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, mock("web", map[string]any{"run_for": "20ms", "exit_code": 1}))
	restartPolicy(j, 0, 0, time.Minute, state.RestartPolicyModeFail)
	a := deployed(t, fs, c, j, state.UpdateHealthCheckChecks, time.Second)
	if healthy, _ := waitHealth(t, fs, a.ID); healthy {
		t.Fatal("a failed allocation was reported healthy")
	}
}

func TestDeploymentHealthWaitsForChecks(t *testing.T) {
	fs := newFakeServer(t)
	svcs := &healthServices{fakeServices: &fakeServices{}, watch: make(chan struct{})}
	c := testClient(t, fs, "", func(cfg *Config) { cfg.Services = svcs })
	task := mock("web", nil)
	task.Services = []*state.Service{{Name: "web"}}
	a := deployed(t, fs, c, job(state.JobTypeService, task), state.UpdateHealthCheckChecks, 10*time.Millisecond)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	// The watcher saw the task running and asked for the checks, which
	// fail: no verdict.
	testutil.WaitForErr(t, 5*time.Second, "a look at the checks", func() error {
		svcs.mu.Lock()
		defer svcs.mu.Unlock()
		if svcs.asked == 0 {
			return fmt.Errorf("not asked yet")
		}
		return nil
	})
	if al := fs.alloc(a.ID); al.DeploymentStatus != nil {
		t.Fatalf("verdict %+v while checks fail", al.DeploymentStatus)
	}
	svcs.pass()
	if healthy, _ := waitHealth(t, fs, a.ID); !healthy {
		t.Fatal("unhealthy once checks pass")
	}
}

// healthServices is fakeServices whose checks fail until pass.
type healthServices struct {
	*fakeServices
	healthy bool
	asked   int
	watch   chan struct{}
}

func (h *healthServices) Health(string) (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked++
	return h.healthy, ""
}

func (h *healthServices) Watch(string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watch
}

func (h *healthServices) pass() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.healthy = true
	close(h.watch)
	h.watch = make(chan struct{})
}

// TestDeploymentHealthAfterInPlaceJoin checks that an allocation updated in
// place into a new deployment, which the servers could not count healthy
// (it was not running then), is judged again for that deployment: a fresh
// verdict, at least min_healthy_time after it joined, whatever it had been
// told before.
func TestDeploymentHealthAfterInPlaceJoin(t *testing.T) {
	const minHealthy = 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		first string // the deployment the allocation is placed by; "" none
	}{
		{name: "placed without a deployment"},
		{name: "judged healthy in an earlier deployment", first: state.NewID()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t)
			c := testClient(t, fs, "")
			j := job(state.JobTypeService, mock("web", nil))
			j.TaskGroups[0].Update = &state.UpdateStrategy{HealthCheck: state.UpdateHealthCheckTaskStates,
				MinHealthyTime: minHealthy, HealthyDeadline: 5 * time.Second}
			a := allocFor(c, j)
			a.DeploymentID = tc.first
			fs.addAlloc(a)
			waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
			if tc.first != "" {
				if healthy, _ := waitHealth(t, fs, a.ID); !healthy {
					t.Fatal("unhealthy in the first deployment")
				}
			}

			joined := time.Now()
			fs.mutateAlloc(a.ID, func(a *state.Allocation) {
				// As the reconciler writes an in-place update of an
				// allocation that was not running.
				a.DeploymentID = state.NewID()
				a.DeploymentStatus = &state.AllocDeploymentStatus{}
			})
			healthy, at := waitHealth(t, fs, a.ID)
			if !healthy || at.Sub(joined) < minHealthy {
				t.Fatalf("healthy=%v at %v after joining, want healthy at least %v after", healthy, at.Sub(joined), minHealthy)
			}
		})
	}
}
