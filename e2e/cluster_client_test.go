//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// startClientAgent runs a client-only agent (its own data dir and ports)
// against the cluster's servers, and stops it with the test.
func startClientAgent(t *testing.T, c *loopCluster) *testutil.SyncBuffer {
	t.Helper()
	return startClientAgentWith(t, c, "")
}

// startClientAgentWith is startClientAgent with extra appended inside the
// client block.
func startClientAgentWith(t *testing.T, c *loopCluster, extra string) *testutil.SyncBuffer {
	t.Helper()
	return startClientProcess(t, c, "c1", "warn", extra).out
}

// startClientProcess runs a client-only agent named name against the
// cluster's servers, logging at level, with extra appended inside its
// client block; it is killed with the test, its output logged if the test
// failed.
func startClientProcess(t *testing.T, c *loopCluster, name, level, extra string) *watchedClient {
	t.Helper()
	dir := t.TempDir()
	var servers []string
	for _, s := range c.servers {
		servers = append(servers, strconv.Quote("127.0.0.1:"+strconv.Itoa(s.http)))
	}
	w := &watchedClient{t: t, name: name, http: freePort(t), out: &testutil.SyncBuffer{}}
	cfg := fmt.Sprintf(`
name      = %q
data_dir  = %q
bind_addr = "127.0.0.1"
log_level = %q
ports {
  http   = %d
  raft   = %d
  gossip = %d
}
client {
  enabled = true
  servers = [%s]
  %s
}
`, name, filepath.Join(dir, "data"), level, w.http, freePort(t), freePort(t), strings.Join(servers, ", "), extra)
	path := filepath.Join(dir, "client.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(schedBin, "agent", "-config", path)
	cmd.Stdout, cmd.Stderr = w.out, w.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("%s output:\n%s", name, w.out.String())
		}
	})
	return w
}

// runningAllocs returns the IDs of the job's allocations that run.
func clusterRunningAllocs(cl *api.Client, jobID string) ([]string, error) {
	allocs, _, err := cl.Jobs().Allocations(context.Background(), jobID, false, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, a := range allocs {
		if a.ClientStatus == state.AllocClientStatusRunning && a.DesiredStatus == state.AllocDesiredStatusRun {
			ids = append(ids, a.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// TestClusterClientKeepsAllocationsOverWholeRestart: three servers and one
// client agent. A service job's allocations run on the client; all three
// servers are SIGKILLed and restarted; afterwards the same allocations are
// still running on the client — none lost, none replaced.
func TestClusterClientKeepsAllocationsOverWholeRestart(t *testing.T) {
	c := newLoopCluster(t, 3, "")
	c.startAll()
	leader := c.leader(20 * time.Second)
	startClientAgent(t, c)

	cl := leader.client()
	testutil.WaitForErr(t, 30*time.Second, "the client node to be ready", func() error {
		nodes, _, err := cl.Nodes().List(context.Background(), nil)
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
		ID: "kept", Type: state.JobTypeService,
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: 3,
			Tasks: []*state.Task{{Name: "t", Driver: "mock", Config: map[string]any{"run_for": "1h"},
				Resources: &state.Resources{CPU: 50, MemoryMB: 32}}},
		}},
	}
	if _, _, err := cl.Jobs().Register(context.Background(), job, nil, nil); err != nil {
		t.Fatal(err)
	}
	var before []string
	testutil.WaitForErr(t, 30*time.Second, "3 allocations running on the client", func() error {
		ids, err := clusterRunningAllocs(cl, "kept")
		if err != nil {
			return err
		}
		if len(ids) != 3 {
			return fmt.Errorf("%d running", len(ids))
		}
		before = ids
		return nil
	})

	for _, s := range c.servers {
		s.kill()
	}
	c.startAll()
	cl = c.leader(30 * time.Second).client()
	// The client re-registers with the new leader and keeps reporting; the
	// allocations must be the same ones, still running.
	testutil.WaitForErr(t, 30*time.Second, "the same allocations running after the restart", func() error {
		ids, err := clusterRunningAllocs(cl, "kept")
		if err != nil {
			return err
		}
		if !slices.Equal(ids, before) {
			return fmt.Errorf("running %v, want %v", ids, before)
		}
		return nil
	})
	all, _, err := cl.Jobs().Allocations(context.Background(), "kept", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("%d allocations after the restart, want the original 3 (none replaced)", len(all))
	}
}
