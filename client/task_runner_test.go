package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

func TestRestartPolicyModeFail(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, sh("crash", `echo run >> "$SCHED_ALLOC_DIR/runs"; exit 7`))
	restartPolicy(j, 2, 20*time.Millisecond, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	ts := got.TaskStates["crash"]
	if ts.Restarts != 2 || !ts.Failed || ts.State != state.TaskStateDead {
		t.Fatalf("%s", statusOf(got))
	}
	if runs := strings.Count(readFile(t, allocPathOf(c, a.ID, "alloc", "runs")), "run"); runs != 3 {
		t.Fatalf("the task ran %d times, want 3 (1 + 2 restarts)", runs)
	}
	nr := eventOf(ts, state.TaskNotRestarting)
	if nr == nil || !nr.FailsTask || !strings.Contains(nr.RestartReason, "Exceeded allowed attempts 2") {
		t.Fatalf("Not Restarting event %+v", nr)
	}
	rs := eventOf(ts, state.TaskRestarting)
	if rs == nil || rs.StartDelay < int64(20*time.Millisecond) || rs.StartDelay > int64(25*time.Millisecond) {
		t.Fatalf("Restarting event %+v: StartDelay should be the delay plus at most 25%% jitter", rs)
	}
	if te := eventOf(ts, state.TaskTerminated); te == nil || te.ExitCode != 7 {
		t.Fatalf("Terminated event %+v", te)
	}
}

func TestRestartPolicyModeDelay(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, mock("crash", map[string]any{"run_for": "1ms", "exit_code": 1}))
	restartPolicy(j, 1, 10*time.Millisecond, 400*time.Millisecond, state.RestartPolicyModeDelay)
	a := allocFor(c, j)
	fs.addAlloc(a)
	var got *state.Allocation
	testutil.WaitForErr(t, 10*time.Second, "three restarts", func() error {
		got = fs.alloc(a.ID)
		if got == nil || got.TaskStates["crash"] == nil || got.TaskStates["crash"].Restarts < 3 {
			return errString(statusOf(got))
		}
		return nil
	})
	ts := got.TaskStates["crash"]
	if ts.Failed || got.ClientStatus == state.AllocClientStatusFailed {
		t.Fatalf("mode delay never fails: %s", statusOf(got))
	}
	var delayed *state.TaskEvent
	for _, e := range ts.Events {
		if e.Type == state.TaskRestarting && strings.Contains(e.RestartReason, `mode is "delay"`) {
			delayed = e
		}
	}
	if delayed == nil || delayed.StartDelay < int64(100*time.Millisecond) {
		t.Fatalf("no Restarting event that waits out the interval: %v", eventTypes(ts))
	}
}

func TestBatchSuccessIsNotRestarted(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeBatch, mock("once", map[string]any{"run_for": "10ms"}))
	restartPolicy(j, 3, time.Millisecond, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	ts := got.TaskStates["once"]
	if ts.Restarts != 0 || ts.Failed || !containsInOrder(eventTypes(ts), state.TaskReceived, state.TaskSetup, state.TaskStarted, state.TaskTerminated) {
		t.Fatalf("%s", statusOf(got))
	}
	if ts.StartedAt.IsZero() || ts.FinishedAt.Before(ts.StartedAt) {
		t.Fatalf("StartedAt %v FinishedAt %v", ts.StartedAt, ts.FinishedAt)
	}
}

func TestUnknownDriverFailsValidation(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeBatch, &state.Task{Name: "x", Driver: "docker"})
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	ev := eventOf(got.TaskStates["x"], state.TaskFailedValidation)
	if ev == nil || !ev.FailsTask || !strings.Contains(ev.ValidationError, `driver "docker"`) {
		t.Fatalf("%s", statusOf(got))
	}
}

func TestDriverFailureRestartsThenFails(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, mock("x", map[string]any{"start_error": "no luck"}))
	restartPolicy(j, 1, time.Millisecond, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	ts := got.TaskStates["x"]
	ev := eventOf(ts, state.TaskDriverFailure)
	if ev == nil || !strings.Contains(ev.DriverError, "no luck") || ts.Restarts != 1 {
		t.Fatalf("%s", statusOf(got))
	}
}

func TestBadDriverConfigIsNotRetried(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, mock("x", map[string]any{"run_for": 12.5}))
	restartPolicy(j, 5, time.Millisecond, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	ts := got.TaskStates["x"]
	if ts.Restarts != 0 || eventOf(ts, state.TaskFailedValidation) == nil {
		t.Fatalf("%s", statusOf(got))
	}
}

func TestTaskEnvironmentAndDirs(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	task := sh("web", `env > "$SCHED_ALLOC_DIR/env.$SCHED_TASK_NAME"; echo "$1" > "$SCHED_ALLOC_DIR/arg"; pwd > "$SCHED_ALLOC_DIR/pwd"`)
	task.Config["args"] = append(task.Config["args"].([]any), "sh", "${SCHED_PORT_http}/${attr.kernel.name}")
	task.Env = map[string]string{"GREETING": "hello ${SCHED_JOB_ID}"}
	j := job(state.JobTypeBatch, task)
	j.Meta = map[string]string{"team": "core"}
	a := allocFor(c, j)
	a.AllocatedResources.Shared.Networks = []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "http", Value: 24567}}}}
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	env := map[string]string{}
	for _, line := range strings.Split(readFile(t, allocPathOf(c, a.ID, "alloc", "env.web")), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	for k, want := range map[string]string{
		"SCHED_ALLOC_ID": a.ID, "SCHED_ALLOC_INDEX": "0", "SCHED_JOB_ID": j.ID, "SCHED_TASK_NAME": "web",
		"SCHED_GROUP_NAME": "g", "SCHED_NAMESPACE": "default", "SCHED_DC": "dc1",
		"SCHED_CPU_LIMIT": strconv.Itoa(task.Resources.CPU), "SCHED_MEMORY_LIMIT": strconv.Itoa(task.Resources.MemoryMB),
		"SCHED_PORT_http": "24567", "SCHED_IP_http": "127.0.0.1", "SCHED_ADDR_http": "127.0.0.1:24567",
		"SCHED_META_team": "core", "GREETING": "hello " + j.ID,
		"SCHED_ALLOC_DIR": allocPathOf(c, a.ID, "alloc"), "SCHED_TASK_DIR": allocPathOf(c, a.ID, "web", "local"),
		"SCHED_SECRETS_DIR": allocPathOf(c, a.ID, "web", "secrets"),
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if got := strings.TrimSpace(readFile(t, allocPathOf(c, a.ID, "alloc", "arg"))); got != "24567/linux" {
		t.Errorf("interpolated arg = %q", got)
	}
	if got := strings.TrimSpace(readFile(t, allocPathOf(c, a.ID, "alloc", "pwd"))); got != allocPathOf(c, a.ID, "web") {
		t.Errorf("cwd = %q", got)
	}
	for _, d := range []string{"alloc/logs", "web/local", "web/secrets"} {
		if fi, err := os.Stat(allocPathOf(c, a.ID, filepath.FromSlash(d))); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if fi, _ := os.Stat(allocPathOf(c, a.ID, "web", "secrets")); fi.Mode().Perm() != 0o700 {
		t.Errorf("secrets mode %v", fi.Mode().Perm())
	}
}

// pidAlive reports whether a process exists and is not a zombie (a
// killed process whose parent died stays a zombie until init reaps it,
// which a container's init may never do).
func pidAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat := readFileQuiet(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if i := strings.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return stat != ""
}

func readFileQuiet(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func readPID(t *testing.T, path string) int {
	pid, _ := strconv.Atoi(strings.TrimSpace(readFile(t, path)))
	return pid
}

func TestKillSignalThenTimeoutThenSIGKILL(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	// "polite" leaves on SIGTERM (its kill_signal); "stubborn" ignores
	// SIGINT and has a child in its group, so both need the SIGKILL.
	polite := sh("polite", `trap 'echo term > "$SCHED_ALLOC_DIR/polite"; exit 0' TERM; : > "$SCHED_ALLOC_DIR/polite-ready"; while :; do sleep 0.05; done`)
	polite.KillSignal = "SIGTERM"
	stubborn := sh("stubborn", `trap '' INT; sleep 300 & echo $! > "$SCHED_ALLOC_DIR/child"; while :; do sleep 0.05; done`)
	stubborn.KillTimeout = 300 * time.Millisecond
	j := job(state.JobTypeService, polite, stubborn)
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	var child int
	testutil.WaitForErr(t, 5*time.Second, "child pid", func() error {
		if child = readPID(t, allocPathOf(c, a.ID, "alloc", "child")); child == 0 {
			return errString("no pid yet")
		}
		return nil
	})
	// Running means started, not that the shell has set its trap yet.
	waitExists(t, allocPathOf(c, a.ID, "alloc", "polite-ready"))
	start := time.Now()
	fs.stopAlloc(a.ID, false)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	if readFile(t, allocPathOf(c, a.ID, "alloc", "polite")) != "term\n" {
		t.Error("polite did not get its kill_signal SIGTERM")
	}
	testutil.WaitForErr(t, 5*time.Second, "the stubborn task's child to be gone", func() error {
		if pidAlive(child) {
			return errString("child " + strconv.Itoa(child) + " is alive")
		}
		return nil
	})
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("stubborn was gone after %v, before its kill_timeout", d)
	}
	k := eventOf(got.TaskStates["stubborn"], state.TaskKilling)
	if k == nil || k.KillTimeout != 300*time.Millisecond {
		t.Fatalf("Killing event %+v", k)
	}
	for name, ts := range got.TaskStates {
		if ts.Failed || eventOf(ts, state.TaskKilled) == nil {
			t.Errorf("%s: %s", name, statusOf(got))
		}
	}
}

func TestShutdownDelay(t *testing.T) {
	for _, noDelay := range []bool{false, true} {
		t.Run("NoShutdownDelay="+strconv.FormatBool(noDelay), func(t *testing.T) {
			fs := newFakeServer(t)
			svcs := &fakeServices{}
			c := testClient(t, fs, "", func(cfg *Config) { cfg.Services = svcs })
			task := mock("web", nil)
			task.ShutdownDelay = 400 * time.Millisecond
			task.Services = []*state.Service{{Name: "web"}}
			j := job(state.JobTypeService, task)
			a := allocFor(c, j)
			fs.addAlloc(a)
			waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
			start := time.Now()
			fs.stopAlloc(a.ID, noDelay)
			got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
			killing := eventOf(got.TaskStates["web"], state.TaskKilling)
			waited := time.Unix(0, killing.Time).Sub(start)
			if !noDelay && waited < 400*time.Millisecond {
				t.Fatalf("killed %v after the stop, within the 400ms shutdown delay", waited)
			}
			if noDelay && waited > 300*time.Millisecond {
				t.Fatalf("NoShutdownDelay: killed only %v after the stop", waited)
			}
			log := svcs.log()
			if !containsInOrder(log, "register web", "deregister web") {
				t.Fatalf("services: %v", log)
			}
		})
	}
}

func TestGroupShutdownDelay(t *testing.T) {
	fs := newFakeServer(t)
	svcs := &fakeServices{}
	c := testClient(t, fs, "", func(cfg *Config) { cfg.Services = svcs })
	j := job(state.JobTypeService, mock("web", nil))
	d := 300 * time.Millisecond
	j.TaskGroups[0].ShutdownDelay = &d
	j.TaskGroups[0].Services = []*state.Service{{Name: "g"}}
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	testutil.WaitForErr(t, 5*time.Second, "group services", func() error {
		if !containsInOrder(svcs.log(), "register group") {
			return errString("not registered")
		}
		return nil
	})
	start := time.Now()
	fs.stopAlloc(a.ID, false)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	killing := eventOf(got.TaskStates["web"], state.TaskKilling)
	if waited := time.Unix(0, killing.Time).Sub(start); waited < d {
		t.Fatalf("killed %v after the stop, within the group's %v shutdown delay", waited, d)
	}
	if !containsInOrder(svcs.log(), "register group", "deregister group") {
		t.Fatalf("services: %v", svcs.log())
	}
}

func TestTemplateChangeSignalsTheTask(t *testing.T) {
	fs := newFakeServer(t)
	mockDrv := driver.NewMock()
	c := testClient(t, fs, "", func(cfg *Config) { cfg.Drivers = []driver.Driver{mockDrv} })
	task := mock("web", nil)
	task.Templates = []*state.Template{{EmbeddedTmpl: `{{ meta "v" }}`, DestPath: "local/v", ChangeMode: "signal", ChangeSignal: "SIGHUP", Splay: time.Millisecond}}
	j := job(state.JobTypeService, task)
	j.Meta = map[string]string{"v": "1"}
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	fs.mutateAlloc(a.ID, func(a *state.Allocation) {
		a.Job = a.Job.Copy()
		a.Job.Version++
		a.Job.Meta = map[string]string{"v": "2"}
	})
	var got *state.Allocation
	testutil.WaitForErr(t, 10*time.Second, "the Signaling event", func() error {
		got = fs.alloc(a.ID)
		if eventOf(got.TaskStates["web"], state.TaskSignaling) == nil {
			return errString(statusOf(got))
		}
		return nil
	})
	if sigs, _ := mockDrv.Signals(a.ID + "/web"); len(sigs) != 1 || sigs[0] != "SIGHUP" {
		t.Fatalf("signals delivered: %v", sigs)
	}
	if ev := eventOf(got.TaskStates["web"], state.TaskSignaling); ev.TaskSignal != "SIGHUP" {
		t.Fatalf("Signaling event %+v", ev)
	}
	if readFile(t, allocPathOf(c, a.ID, "web", "local", "v")) != "2" || got.TaskStates["web"].Restarts != 0 {
		t.Fatalf("%s", statusOf(got))
	}
}

func TestDefaultKillSignalIsSIGINT(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, sh("web", `trap 'echo int > "$SCHED_ALLOC_DIR/sig"; exit 0' INT; : > "$SCHED_ALLOC_DIR/ready"; while :; do sleep 0.05; done`))
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	// Running means started, not that the shell has set its trap yet.
	waitExists(t, allocPathOf(c, a.ID, "alloc", "ready"))
	fs.stopAlloc(a.ID, true)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	if got := readFile(t, allocPathOf(c, a.ID, "alloc", "sig")); got != "int\n" {
		t.Fatalf("the task saw %q, want the default kill signal SIGINT", got)
	}
}

func TestTemplateEscapingTheTaskDirIsASetupFailure(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	task := mock("web", nil)
	task.Templates = []*state.Template{{EmbeddedTmpl: "x", DestPath: "../../../escape", ChangeMode: "noop"}}
	j := job(state.JobTypeService, task)
	restartPolicy(j, 3, time.Millisecond, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	ts := got.TaskStates["web"]
	ev := eventOf(ts, state.TaskSetupFailure)
	if ev == nil || !ev.FailsTask || ts.Restarts != 0 || !ts.StartedAt.IsZero() {
		t.Fatalf("%s", statusOf(got))
	}
}

// TestTemplateSourceChangeWhileRunningSignalsTheTask: a running task's
// templates are rendered again every TemplateInterval; when the source
// file changes under the running task, the new content is written and the
// task is signalled per ChangeMode, without a restart.
func TestTemplateSourceChangeWhileRunningSignalsTheTask(t *testing.T) {
	fs := newFakeServer(t)
	mockDrv := driver.NewMock()
	c := testClient(t, fs, "", func(cfg *Config) {
		cfg.Drivers = []driver.Driver{mockDrv}
		cfg.TemplateInterval = 20 * time.Millisecond
	})
	srcDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(srcDir, "src.tpl"), []byte("port=1"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := mock("web", nil)
	// The artifact delivers the template source into local/ once, before
	// the first render.
	task.Artifacts = []*state.TaskArtifact{{GetterSource: "file://" + filepath.Join(srcDir, "src.tpl"), RelativeDest: "local/"}}
	task.Templates = []*state.Template{{SourcePath: "local/src.tpl", DestPath: "local/out", ChangeMode: "signal", ChangeSignal: "SIGUSR1"}}
	a := allocFor(c, job(state.JobTypeService, task))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	if got := readFile(t, allocPathOf(c, a.ID, "web", "local", "out")); got != "port=1" {
		t.Fatalf("first render %q", got)
	}
	if sigs, _ := mockDrv.Signals(a.ID + "/web"); len(sigs) != 0 {
		t.Fatalf("signalled before any change: %v", sigs)
	}

	if err := os.WriteFile(allocPathOf(c, a.ID, "web", "local", "src.tpl"), []byte("port=2"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, 10*time.Second, "the re-rendered file and the signal", func() error {
		if got := readFile(t, allocPathOf(c, a.ID, "web", "local", "out")); got != "port=2" {
			return errString("out is " + got)
		}
		if sigs, _ := mockDrv.Signals(a.ID + "/web"); len(sigs) != 1 || sigs[0] != "SIGUSR1" {
			return errString("no SIGUSR1 yet")
		}
		return nil
	})
	got := fs.alloc(a.ID)
	if got.TaskStates["web"].Restarts != 0 || got.ClientStatus != state.AllocClientStatusRunning {
		t.Fatalf("a signal-mode change restarted the task: %s", statusOf(got))
	}
}

// waitExists waits for the file at path to exist.
func waitExists(t *testing.T, path string) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, path+" to exist", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}
