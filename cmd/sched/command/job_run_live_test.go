package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
)

// A job no node can run (an unknown driver) against a real agent: job run
// prints why and exits 2 once the evaluation is done, well before the
// deployment's progress deadline (10 minutes); job restart, job allocs
// and job deployments then work on a job that does run.
func TestJobRunUnplaceableAgainstAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	addr := startDevAgent(t)
	// Far below the progress deadline: a command still waiting on the
	// deployment is canceled, and fails the test by its exit code.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	env := map[string]string{api.EnvAddress: addr}
	p := filepath.Join(t.TempDir(), "nodriver.hcl")
	src := `job "nodriver" {
  datacenters = ["*"]
  group "g" {
    task "t" {
      driver = "no-such-driver"
      resources {
        cpu    = 10
        memory = 10
      }
    }
  }
}
`
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, runOpts{ctx: ctx, env: env}, "job", "run", p)
	if r.code != exitPlacementFailed || !strings.Contains(r.stdout, "failed to place all allocations") ||
		!strings.Contains(r.stdout, `Task Group "g"`) {
		t.Fatalf("exit %d, want 2 with the failed placements\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "Monitoring deployment") {
		t.Errorf("job run followed the deployment of an unplaceable job:\n%s", r.stdout)
	}

	// A job that runs: restart its allocations in place, list them and its
	// deployments.
	ok := func(r result, has string) {
		t.Helper()
		if r.code != 0 || !strings.Contains(r.stdout, has) {
			t.Fatalf("exit %d, stdout lacks %q\nstdout:\n%s\nstderr:\n%s", r.code, has, r.stdout, r.stderr)
		}
	}
	p = filepath.Join(t.TempDir(), "web.hcl")
	src = strings.NewReplacer("%CANARY%", "0", "%OUT%", "hello").Replace(deployJobHCL)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(runCLI(t, nil, runOpts{ctx: ctx, env: env}, "job", "run", p), "Deployment completed successfully")
	ok(runCLI(t, nil, runOpts{ctx: ctx, env: env}, "job", "allocs", "web"), "running")
	ok(runCLI(t, nil, runOpts{ctx: ctx, env: env}, "job", "deployments", "web"), "successful")
	ok(runCLI(t, nil, runOpts{ctx: ctx, env: env}, "job", "restart", "-yes", "web"), "All allocations restarted successfully!")
	ok(runCLI(t, nil, runOpts{ctx: ctx, env: env}, "job", "eval", "web"), `finished with status "complete"`)
	ok(runCLI(t, nil, runOpts{ctx: ctx, env: env}, "job", "restart", "-reschedule", "-batch-size", "2", "web"), "All allocations restarted successfully!")
}
