package client

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// keepTasks makes a client that leaves its tasks running on Shutdown, as
// a client that crashes or restarts does.
func keepTasks(cfg *Config) { cfg.DestroyOnShutdown = false }

// pidTask records each start's pid, then runs until stopped.
func pidTask() *state.Task {
	return sh("web", `echo $$ >> "$SCHED_ALLOC_DIR/pids"; exec sleep 300`)
}

func pids(t *testing.T, c *Client, allocID string) []string {
	return strings.Fields(readFile(t, allocPathOf(c, allocID, "alloc", "pids")))
}

func TestRestartedClientRecoversRunningTasks(t *testing.T) {
	fs := newFakeServer(t)
	dir := t.TempDir()
	c1 := testClient(t, fs, dir, keepTasks)
	j := job(state.JobTypeService, pidTask())
	a := allocFor(c1, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	pid := waitPID(t, allocPathOf(c1, a.ID, "alloc", "pids"))
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if !pidAlive(pid) {
		t.Fatal("the task did not survive the client's shutdown")
	}

	c2 := testClient(t, fs, dir)
	if c2.NodeID() != c1.NodeID() || c2.SecretID() != c1.SecretID() {
		t.Fatalf("node identity changed: %s -> %s", c1.NodeID(), c2.NodeID())
	}
	al, err := c2.Alloc(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	ts := al.TaskStates["web"]
	if ts.State != state.TaskStateRunning || ts.Restarts != 0 {
		t.Fatalf("recovered task: %s", statusOf(al))
	}
	// Give a duplicate every chance to appear: the watcher syncs and the
	// status goes out.
	testutil.WaitForErr(t, 5*time.Second, "a status report from the new client", func() error {
		if _, _, reqs, _ := fs.counts(); reqs == 0 {
			return fmt.Errorf("none")
		}
		return nil
	})
	if got := pids(t, c2, a.ID); len(got) != 1 {
		t.Fatalf("the task was started again: pids %v", got)
	}
	// The recovered task is really managed: stopping the alloc kills it.
	fs.stopAlloc(a.ID, true)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	testutil.WaitForErr(t, 10*time.Second, "the recovered process to be killed", func() error {
		if pidAlive(pid) {
			return fmt.Errorf("pid %d alive", pid)
		}
		return nil
	})
}

func TestAllocStoppedWhileClientWasAwayIsKilled(t *testing.T) {
	fs := newFakeServer(t)
	dir := t.TempDir()
	c1 := testClient(t, fs, dir, keepTasks)
	a := allocFor(c1, job(state.JobTypeService, pidTask()))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	pid := waitPID(t, allocPathOf(c1, a.ID, "alloc", "pids"))
	c1.Shutdown()

	fs.stopAlloc(a.ID, false)
	c2 := testClient(t, fs, dir)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	testutil.WaitForErr(t, 10*time.Second, "the process to be killed", func() error {
		if pidAlive(pid) {
			return fmt.Errorf("pid %d alive", pid)
		}
		return nil
	})
	if got := pids(t, c2, a.ID); len(got) != 1 {
		t.Fatalf("a stopped allocation was started again: pids %v", got)
	}
}

func TestAllocRemovedWhileClientWasAwayIsDestroyed(t *testing.T) {
	fs := newFakeServer(t)
	dir := t.TempDir()
	c1 := testClient(t, fs, dir, keepTasks)
	a := allocFor(c1, job(state.JobTypeService, pidTask()))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	pid := waitPID(t, allocPathOf(c1, a.ID, "alloc", "pids"))
	c1.Shutdown()

	fs.removeAlloc(a.ID)
	testClient(t, fs, dir)
	testutil.WaitForErr(t, 10*time.Second, "the process to be killed", func() error {
		if pidAlive(pid) {
			return fmt.Errorf("pid %d alive", pid)
		}
		return nil
	})
}

func TestTaskGoneWhileClientWasAwayIsRestarted(t *testing.T) {
	fs := newFakeServer(t)
	dir := t.TempDir()
	c1 := testClient(t, fs, dir, keepTasks)
	j := job(state.JobTypeService, pidTask())
	restartPolicy(j, 2, 10*time.Millisecond, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c1, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	pid := waitPID(t, allocPathOf(c1, a.ID, "alloc", "pids"))
	c1.Shutdown()
	killGroup(t, pid)
	testutil.WaitForErr(t, 5*time.Second, "the task to die", func() error {
		if pidAlive(pid) {
			return fmt.Errorf("alive")
		}
		return nil
	})

	c2 := testClient(t, fs, dir)
	testutil.WaitForErr(t, 10*time.Second, "a restart", func() error {
		if got := pids(t, c2, a.ID); len(got) != 2 {
			return fmt.Errorf("pids %v", got)
		}
		return nil
	})
	var got *state.Allocation
	testutil.WaitForErr(t, 10*time.Second, "the servers to see the restart", func() error {
		got = fs.alloc(a.ID)
		if ts := got.TaskStates["web"]; ts == nil || ts.Restarts != 1 || ts.State != state.TaskStateRunning {
			return fmt.Errorf("%s", statusOf(got))
		}
		return nil
	})
	ts := got.TaskStates["web"]
	if ev := eventOf(ts, state.TaskDriverMessage); ev == nil || !strings.Contains(ev.DriverMessage, "lost while the client was down") {
		t.Fatalf("no event says the task was lost: %v", eventTypes(ts))
	}
}

func TestRestoredMockTasksAndCompletedAllocs(t *testing.T) {
	fs := newFakeServer(t)
	dir := t.TempDir()
	c1 := testClient(t, fs, dir, keepTasks)
	done := allocFor(c1, job(state.JobTypeBatch, mock("x", map[string]any{"run_for": "1ms"})))
	fs.addAlloc(done)
	waitAllocStatus(t, fs, done.ID, state.AllocClientStatusComplete)
	running := allocFor(c1, job(state.JobTypeService, mock("y", nil)))
	fs.addAlloc(running)
	waitAllocStatus(t, fs, running.ID, state.AllocClientStatusRunning)
	c1.Shutdown()

	c2 := testClient(t, fs, dir)
	for _, tc := range []struct {
		id, status string
	}{{done.ID, state.AllocClientStatusComplete}, {running.ID, state.AllocClientStatusRunning}} {
		al, err := c2.Alloc(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if al.ClientStatus != tc.status {
			t.Fatalf("restored %s as %s", statusOf(al), al.ClientStatus)
		}
	}
	// The completed batch allocation must not run again.
	al, _ := c2.Alloc(done.ID)
	if n := strings.Count(strings.Join(eventTypes(al.TaskStates["x"]), ","), state.TaskStarted); n != 1 {
		t.Fatalf("completed task started %d times", n)
	}
}
