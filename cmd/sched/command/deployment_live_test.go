package command

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/agent"
	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// startDevAgent runs a server with a client (mock driver) on free
// loopback ports and returns its address.
func startDevAgent(t *testing.T) string {
	t.Helper()
	var ports []int
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	cfg := &agent.Config{
		Name: "deploy-cli-test", DataDir: t.TempDir(), BindAddr: "127.0.0.1", LogLevel: "warn", DevMode: true,
		Ports:  agent.Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Server: agent.ServerConfig{Enabled: true, BootstrapExpect: 1},
		Client: agent.ClientConfig{Enabled: true},
	}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := a.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	// The client's node must be ready before a job runs: job run exits 2
	// when the scheduler cannot place everything at once.
	c, err := api.NewClient(api.Config{Address: "http://" + a.HTTPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 20*time.Second, "the dev client's node", func() bool {
		nodes, _, err := c.Nodes().List(ctx, nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == state.NodeStatusReady
	})
	return "http://" + a.HTTPAddr()
}

const deployJobHCL = `
job "web" {
  datacenters = ["*"]
  group "g" {
    count = 2
    update {
      max_parallel      = 1
      canary            = %CANARY%
      health_check      = "task_states"
      min_healthy_time  = "50ms"
      healthy_deadline  = "10s"
      progress_deadline = "30s"
    }
    task "t" {
      driver = "mock"
      config {
        stdout_string = "%OUT%"
      }
      resources {
        cpu    = 10
        memory = 10
      }
    }
  }
}
`

// TestDeploymentCLIAgainstAgent drives the deployment commands against a
// real server and client.
func TestDeploymentCLIAgainstAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	addr := startDevAgent(t)
	env := map[string]string{api.EnvAddress: addr}
	sched := func(args ...string) result {
		t.Helper()
		return runCLI(t, nil, runOpts{env: env}, args...)
	}
	ok := func(r result, stdoutHas ...string) {
		t.Helper()
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		for _, s := range stdoutHas {
			if !strings.Contains(r.stdout, s) {
				t.Fatalf("stdout lacks %q:\n%s", s, r.stdout)
			}
		}
	}
	file := func(canary int, out string) string {
		p := filepath.Join(t.TempDir(), "web.hcl")
		src := strings.NewReplacer("%CANARY%", itoa(canary), "%OUT%", out).Replace(deployJobHCL)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deployments := func() []*state.Deployment {
		t.Helper()
		r := sched("deployment", "list", "-json")
		ok(r)
		var ds []*state.Deployment
		if err := json.Unmarshal([]byte(r.stdout), &ds); err != nil {
			t.Fatalf("deployment list -json: %v\n%s", err, r.stdout)
		}
		return ds
	}

	// job run follows the deployment to its end.
	ok(sched("job", "run", file(0, "v0")), "Monitoring deployment", "successful (Deployment completed successfully)")
	ok(sched("job", "history", "web"), "Stable      = true")
	if ds := deployments(); len(ds) != 1 || ds[0].Status != state.DeploymentStatusSuccessful {
		t.Fatalf("deployments %+v", ds)
	}
	ok(sched("job", "status", "web"), "Latest Deployment", "successful")
	var st struct {
		Job              state.Job
		LatestDeployment *state.Deployment
	}
	r0 := sched("job", "status", "-json", "web")
	ok(r0)
	if err := json.Unmarshal([]byte(r0.stdout), &st); err != nil || st.LatestDeployment == nil || !st.Job.Stable {
		t.Fatalf("job status -json: %v\n%s", err, r0.stdout)
	}
	var hist state.JobVersionsResponse
	r0 = sched("job", "history", "-json", "web")
	ok(r0)
	if err := json.Unmarshal([]byte(r0.stdout), &hist); err != nil || len(hist.Versions) != 1 || !hist.Versions[0].Stable {
		t.Fatalf("job history -json: %v\n%s", err, r0.stdout)
	}

	// A canary version waits for promotion; pause and resume it on the
	// way, then promote it once the canary is healthy.
	// job run follows it until the canary is healthy and says how to go on.
	ok(sched("job", "run", file(1, "v1")), "Monitoring deployment", "sched deployment promote")
	var d *state.Deployment
	testutil.WaitFor(t, 20*time.Second, "the canary deployment's canary to be healthy", func() bool {
		ds := deployments()
		d = ds[0]
		return d.JobVersion == 1 && d.TaskGroups["g"].HealthyAllocs == 1
	})
	ok(sched("deployment", "status", d.ID[:8]), "Job Version = 1", "requires manual promotion", "Canaries")
	ok(sched("deployment", "pause", d.ID), "paused")
	ok(sched("deployment", "status", d.ID), "Status      = paused")
	ok(sched("deployment", "resume", d.ID), "resumed")
	ok(sched("deployment", "promote", d.ID), "promoted")
	testutil.WaitFor(t, 20*time.Second, "the promoted deployment to succeed", func() bool {
		return deployments()[0].Status == state.DeploymentStatusSuccessful
	})

	// Scale, then revert to version 0; a deployment can be failed.
	ok(sched("job", "scale", "-detach", "web", "g", "3"), "Evaluation ID")
	testutil.WaitFor(t, 20*time.Second, "the scale's deployment to succeed", func() bool {
		d := deployments()[0]
		return d.JobVersion == 2 && d.Status == state.DeploymentStatusSuccessful
	})
	r := sched("job", "scale", "-json", "web", "4")
	ok(r, `"EvalID"`)
	ok(sched("job", "revert", "-detach", "-check-version", "3", "web", "0"), "reverted to version 0")
	r = sched("job", "revert", "-check-version", "1", "web", "0")
	if r.code != 1 || !strings.Contains(r.stderr, "EnforcePriorVersion") {
		t.Fatalf("revert with a stale version: exit %d, stderr %q", r.code, r.stderr)
	}
	testutil.WaitFor(t, 20*time.Second, "the revert's deployment", func() bool {
		return deployments()[0].JobVersion == 4
	})
	if latest := deployments()[0]; latest.Active() {
		ok(sched("deployment", "fail", latest.ID), "marked as failed")
	}
	ok(sched("job", "history", "web"), "Version     = 4")
}
