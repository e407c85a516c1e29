package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// The exec driver on the real binary: a dev agent (as root) whose client
// runs tasks isolated by namespaces and a cgroup, with a host volume.
// Every test ends with no cgroup of its own and no mount of its data dir.

// execAgent is a dev agent with the exec driver under a cgroup parent of
// the test's and a host volume "shared" holding the file hello.
func execAgent(t *testing.T) (*agent, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the exec driver needs root (namespaces, cgroups): run the e2e tests as root to exercise it")
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		t.Skip("the exec driver needs cgroups, and none are mounted")
	}
	a := newDevAgent(t)
	vol := t.TempDir()
	os.WriteFile(filepath.Join(vol, "hello"), []byte("from-the-host-volume\n"), 0o644)
	parent := fmt.Sprintf("/sched-e2e-%d-%s", os.Getpid(), t.Name())
	f, err := os.OpenFile(a.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `
client {
  exec { cgroup_parent = %q }
  host_volume "shared" {
    path      = %q
    read_only = true
  }
}
`, parent, vol)
	f.Close()
	t.Cleanup(func() {
		a.kill()
		if left := cgroupsUnder(parent); len(left) > 0 {
			t.Errorf("cgroups left behind: %v", left)
		}
		for _, d := range cgroupDirs(parent) {
			os.Remove(d)
		}
		if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), a.dataDir) {
			t.Errorf("a mount under the data dir %s is left in the host's mount table", a.dataDir)
		}
	})
	return a, parent
}

// cgroupDirs are the directories of cgroup p in every hierarchy.
func cgroupDirs(p string) []string {
	var out []string
	for _, pattern := range []string{"/sys/fs/cgroup" + p, "/sys/fs/cgroup/*" + p} {
		m, _ := filepath.Glob(pattern)
		out = append(out, m...)
	}
	return out
}

// cgroupsUnder lists the cgroups below p in every hierarchy.
func cgroupsUnder(p string) []string {
	var out []string
	for _, d := range cgroupDirs(p) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// cgroupPIDs are the processes in the cgroups below p (memory hierarchy
// on v1, the unified one on v2).
func cgroupPIDs(p string) []string {
	var out []string
	for _, d := range cgroupsUnder(p) {
		if !strings.Contains(d, "/memory/") && strings.Count(d, "/") > strings.Count("/sys/fs/cgroup"+p, "/")+1 {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		out = append(out, strings.Fields(string(b))...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// execJob is a job of one exec task running script with /bin/sh, whose
// group asks for the host volume source at /data.
func execJob(id, typ, source, script string, memoryMB int) *state.Job {
	return &state.Job{
		ID: id, Type: typ, Datacenters: []string{"*"},
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: 1,
			RestartPolicy: &state.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: state.RestartPolicyModeFail},
			Volumes:       map[string]*state.VolumeRequest{"data": {Name: "data", Type: "host", Source: source, ReadOnly: true}},
			Tasks: []*state.Task{{
				Name: "t", Driver: "exec",
				Config:       map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
				VolumeMounts: []*state.VolumeMount{{Volume: "data", Destination: "/data", ReadOnly: true}},
				KillTimeout:  2 * time.Second,
				Resources:    &state.Resources{CPU: 100, MemoryMB: memoryMB},
			}},
		}},
	}
}

// deadTask waits until the job's task is dead and returns its state.
func deadTask(t *testing.T, c *api.Client, job string) (*state.Allocation, *state.TaskState) {
	t.Helper()
	var al *state.Allocation
	testutil.WaitForErr(t, 2*time.Minute, job+"'s task to end", func() error {
		allocs, _, err := c.Jobs().Allocations(context.Background(), job, false, nil)
		if err != nil || len(allocs) == 0 {
			return fmt.Errorf("allocations: %v", err)
		}
		al, _, err = c.Allocations().Info(context.Background(), allocs[0].ID, nil)
		if err != nil {
			return err
		}
		if ts := al.TaskStates["t"]; ts == nil || ts.State != state.TaskStateDead {
			return fmt.Errorf("task state %+v", ts)
		}
		return nil
	})
	return al, al.TaskStates["t"]
}

// taskLog reads the task's stdout from the allocation's directory.
func taskLog(a *agent, allocID string) string {
	b, _ := os.ReadFile(filepath.Join(a.dataDir, "client", "alloc", allocID, "alloc", "logs", "t.stdout.0"))
	return string(b)
}

// TestExecIsolatedTask: an exec task sees only its own processes and its
// root (not the host's files), reads the host volume, and its stats come
// from its cgroup.
func TestExecIsolatedTask(t *testing.T) {
	a, parent := execAgent(t)
	a.startDev()
	c := a.client()
	marker := filepath.Join(filepath.Dir(a.dataDir), "host-only-marker")
	os.WriteFile(marker, []byte("x"), 0o644)
	script := fmt.Sprintf(`echo "pids:$(ls /proc | grep -cE '^[0-9]+$')"
test -e %s && echo SEES-HOST-FILE
test -e %s && echo SEES-DATA-DIR
cat /data/hello
echo x > /data/new 2>/dev/null && echo WROTE-READ-ONLY
echo ready; while :; do sleep 0.1; done`, marker, a.dataDir)
	if _, _, err := c.Jobs().Register(context.Background(), execJob("isolated", state.JobTypeService, "shared", script, 64), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, "isolated", 1)
	var out string
	testutil.WaitForErr(t, 30*time.Second, "the task's output", func() error {
		if out = taskLog(a, allocs[0].ID); !strings.Contains(out, "ready") {
			return fmt.Errorf("stdout %q", out)
		}
		return nil
	})
	if !strings.Contains(out, "from-the-host-volume") {
		t.Errorf("the task did not read the host volume:\n%s", out)
	}
	for _, bad := range []string{"SEES-HOST-FILE", "SEES-DATA-DIR", "WROTE-READ-ONLY"} {
		if strings.Contains(out, bad) {
			t.Errorf("isolation broken (%s):\n%s", bad, out)
		}
	}
	var n int
	if _, err := fmt.Sscanf(out[strings.Index(out, "pids:"):], "pids:%d", &n); err != nil || n > 10 {
		t.Errorf("the task sees %d processes (%v): the host's leak into its PID namespace", n, err)
	}
	if pids := cgroupPIDs(parent); len(pids) == 0 {
		t.Errorf("no process in the task's cgroup under %s", parent)
	}
	stats, err := c.Allocations().Stats(context.Background(), allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := stats.Tasks["t"]; ts == nil || ts.ResourceUsage.MemoryStats.RSS == 0 || ts.ResourceUsage.CpuStats.TotalTime == 0 {
		t.Errorf("stats of the exec task: %+v", ts)
	}
	if _, _, err := c.Jobs().Deregister(context.Background(), "isolated", true, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "the task's cgroup to go", func() bool { return len(cgroupsUnder(parent)) == 0 })
}

// TestExecOOMKilled: an exec task over its memory limit is killed and
// the task event says "OOM Killed".
func TestExecOOMKilled(t *testing.T) {
	a, parent := execAgent(t)
	a.startDev()
	c := a.client()
	if _, _, err := c.Jobs().Register(context.Background(), execJob("execoom", state.JobTypeBatch, "shared", `a=x; while :; do a="$a$a"; done`, 32), nil, nil); err != nil {
		t.Fatal(err)
	}
	_, ts := deadTask(t, c, "execoom")
	var ev *state.TaskEvent
	for _, e := range ts.Events {
		if e.Type == state.TaskTerminated {
			ev = e
		}
	}
	if ev == nil || ev.Details["oom_killed"] != "true" || !strings.Contains(ev.DisplayMessage, "OOM Killed") || !ts.Failed {
		t.Fatalf("terminated event %+v (failed %v), want OOM Killed", ev, ts.Failed)
	}
	testutil.WaitFor(t, time.Minute, "the task's cgroup to go", func() bool { return len(cgroupsUnder(parent)) == 0 })
}

// TestExecClientRestartReattaches: a client SIGKILLed and restarted on
// the same data dir finds its running exec task again: the same
// processes in the same cgroup, not restarted, still stoppable.
func TestExecClientRestartReattaches(t *testing.T) {
	a, parent := execAgent(t)
	a.startDev()
	c := a.client()
	if _, _, err := c.Jobs().Register(context.Background(), execJob("execkeep", state.JobTypeService, "shared",
		`trap 'exit 0' TERM INT; echo ready; while :; do sleep 0.2; done`, 32), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, "execkeep", 1)
	var before []string
	testutil.WaitFor(t, 30*time.Second, "the task in its cgroup", func() bool {
		before = cgroupPIDs(parent)
		return len(before) >= 2 // the init and the shell
	})
	a.kill()
	a.startDev()
	testutil.WaitForErr(t, 30*time.Second, "the restarted client to report", func() error {
		al, _, err := c.Allocations().Info(context.Background(), allocs[0].ID, nil)
		if err != nil {
			return err
		}
		if al.ModifyIndex <= allocs[0].ModifyIndex {
			return fmt.Errorf("no report yet")
		}
		return nil
	})
	al, _, err := c.Allocations().Info(context.Background(), allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := al.TaskStates["t"]; ts.Restarts != 0 || ts.State != state.TaskStateRunning {
		t.Fatalf("task state after the restart: %+v", ts)
	}
	after := cgroupPIDs(parent)
	if !slices.Contains(after, before[0]) {
		t.Fatalf("processes after the restart %v, want %v still there", after, before)
	}
	if _, _, err := c.Jobs().Deregister(context.Background(), "execkeep", true, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "the task's cgroup to go", func() bool { return len(cgroupsUnder(parent)) == 0 })
	_, ts := deadTask(t, c, "execkeep")
	for _, e := range ts.Events {
		if e.Type == state.TaskTerminated && e.ExitCode != 0 {
			t.Errorf("the recovered task ended with %q, want exit 0 from its trap", e.DisplayMessage)
		}
	}
}

// TestExecVolumeNoNodeHasIsBlocked: a group asking for a host volume no
// node has is not placed, and its evaluation says why.
func TestExecVolumeNoNodeHasIsBlocked(t *testing.T) {
	a, _ := execAgent(t)
	a.startDev()
	c := a.client()
	if _, _, err := c.Jobs().Register(context.Background(), execJob("novol", state.JobTypeService, "nowhere", "true", 32), nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, 30*time.Second, "the evaluation to report the missing volume", func() error {
		evals, _, err := c.Jobs().Evaluations(context.Background(), "novol", nil)
		if err != nil {
			return err
		}
		for _, ev := range evals {
			if m := ev.FailedTGAllocs["g"]; m != nil && m.ConstraintFiltered["missing compatible host volumes"] == 1 {
				return nil
			}
		}
		return fmt.Errorf("evaluations %d, none with the reason", len(evals))
	})
	if allocs, _, err := c.Jobs().Allocations(context.Background(), "novol", false, nil); err != nil || len(allocs) != 0 {
		t.Fatalf("allocations of a job whose volume no node has: %d, %v", len(allocs), err)
	}
}

// TestExecAgentStopLeavesNoCgroup: once its tasks are gone, an agent
// stopped cleanly removes its (empty) cgroup parent from every hierarchy,
// and leaves no mount and no process of its tasks.
func TestExecAgentStopLeavesNoCgroup(t *testing.T) {
	a, parent := execAgent(t)
	a.startDev()
	c := a.client()
	if _, _, err := c.Jobs().Register(context.Background(), execJob("execstop", state.JobTypeService, "shared",
		`echo ready; exec sleep 3600`, 32), nil, nil); err != nil {
		t.Fatal(err)
	}
	runningAllocs(t, c, "execstop", 1)
	testutil.WaitFor(t, 30*time.Second, "the task's cgroup", func() bool { return len(cgroupPIDs(parent)) > 0 })
	if _, _, err := c.Jobs().Deregister(context.Background(), "execstop", true, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "the task's cgroup to go", func() bool { return len(cgroupsUnder(parent)) == 0 })
	if len(cgroupDirs(parent)) == 0 {
		t.Fatalf("no cgroup parent %s while the agent runs: the test proves nothing", parent)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if left := cgroupDirs(parent); len(left) > 0 {
		t.Errorf("the agent stopped and left its empty cgroup parent: %v", left)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), a.dataDir) {
		t.Errorf("a mount under the data dir %s is left", a.dataDir)
	}
}
