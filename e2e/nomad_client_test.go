//go:build e2e

package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/schedhq/sched/internal/testutil"
)

// nomadProxy serves the agent's API to Nomad's own Go client with only the
// header names translated (X-Nomad-* ↔ X-Sched-*), as the issue asks.
func nomadProxy(t *testing.T, agentAddr string) string {
	t.Helper()
	target, err := url.Parse(agentAddr)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	direct := rp.Director
	rp.Director = func(r *http.Request) {
		direct(r)
		for name, vs := range r.Header {
			if rest, ok := strings.CutPrefix(name, "X-Nomad-"); ok {
				r.Header.Del(name)
				r.Header["X-Sched-"+rest] = vs
			}
		}
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		for name, vs := range resp.Header {
			if rest, ok := strings.CutPrefix(name, "X-Sched-"); ok {
				resp.Header.Del(name)
				resp.Header["X-Nomad-"+rest] = vs
			}
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNomadGoClientDrivesDeployments: Nomad's Go client registers a mock
// job, follows its deployment to successful, rolls out a canary version
// and promotes it, reverts to version 0 and scales a group.
func TestNomadGoClientDrivesDeployments(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	cfg := nomad.DefaultConfig()
	cfg.Address = nomadProxy(t, a.addr())
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	jobs, deps := c.Jobs(), c.Deployments()

	job := nomad.NewServiceJob("nomadweb", "nomadweb", "global", 50)
	job.Datacenters = []string{"*"}
	tg := nomad.NewTaskGroup("g", 2)
	tg.Update = &nomad.UpdateStrategy{
		MaxParallel: ptr(1), HealthCheck: ptr("task_states"),
		MinHealthyTime: ptr(50 * time.Millisecond), HealthyDeadline: ptr(10 * time.Second),
		ProgressDeadline: ptr(30 * time.Second),
	}
	task := nomad.NewTask("t", "mock")
	task.Config = map[string]any{"run_for": "1h"}
	task.Resources = &nomad.Resources{CPU: ptr(10), MemoryMB: ptr(10)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)

	latest := func(version uint64, status string) *nomad.Deployment {
		t.Helper()
		var d *nomad.Deployment
		testutil.WaitFor(t, 30*time.Second, "the Nomad client to see the deployment "+status, func() bool {
			got, _, err := jobs.LatestDeployment("nomadweb", nil)
			if err != nil {
				t.Fatalf("LatestDeployment: %v", err)
			}
			d = got
			return d != nil && d.JobVersion == version && d.Status == status
		})
		return d
	}

	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	d := latest(0, "successful")
	if info, _, err := deps.Info(d.ID, nil); err != nil || info.TaskGroups["g"].HealthyAllocs != 2 {
		t.Fatalf("Deployments().Info: %+v, %v", info, err)
	}

	// A canary version, promoted once its canary is healthy.
	tg.Update.Canary = ptr(1)
	task.Config = map[string]any{"run_for": "2h"}
	if _, _, err := jobs.Register(job, nil); err != nil {
		t.Fatalf("Register v1: %v", err)
	}
	testutil.WaitFor(t, 30*time.Second, "a healthy canary", func() bool {
		d, _, err := jobs.LatestDeployment("nomadweb", nil)
		return err == nil && d != nil && d.JobVersion == 1 && d.TaskGroups["g"].HealthyAllocs == 1
	})
	d, _, _ = jobs.LatestDeployment("nomadweb", nil)
	if _, _, err := deps.PromoteAll(d.ID, nil); err != nil {
		t.Fatalf("PromoteAll: %v", err)
	}
	latest(1, "successful")

	// Revert to version 0 (check-and-set on version 1), then scale.
	prior := uint64(1)
	if _, _, err := jobs.Revert("nomadweb", 0, &prior, nil, "", ""); err != nil {
		t.Fatalf("Revert: %v", err)
	}
	latest(2, "successful")
	if _, _, err := jobs.Scale("nomadweb", "g", ptr(3), "more", false, nil, nil); err != nil {
		t.Fatalf("Scale: %v", err)
	}
	latest(3, "successful")
	st, _, err := jobs.ScaleStatus("nomadweb", nil)
	if err != nil || st.TaskGroups["g"].Desired != 3 || len(st.TaskGroups["g"].Events) != 1 || st.TaskGroups["g"].Events[0].Message != "more" {
		t.Fatalf("ScaleStatus: %+v, %v", st, err)
	}
	versions, _, _, err := jobs.Versions("nomadweb", false, nil)
	if err != nil || len(versions) != 4 || !*versions[0].Stable {
		t.Fatalf("Versions: %d, %v", len(versions), err)
	}
}

func ptr[T any](v T) *T { return &v }
