package driver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver/logrotate"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// shTask is a raw_exec config running script with /bin/sh in a fresh task
// directory.
func shTask(t *testing.T, script string) *TaskConfig {
	t.Helper()
	dir := t.TempDir()
	taskDir := filepath.Join(dir, "web")
	for _, d := range []string{taskDir, filepath.Join(dir, "alloc", "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &TaskConfig{
		ID: "a1/web", AllocID: "a1", TaskName: "web",
		Config:  map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		Env:     map[string]string{"FOO": "bar"},
		TaskDir: taskDir, LocalDir: filepath.Join(taskDir, "local"),
		LogDir:    filepath.Join(dir, "alloc", "logs"),
		LogConfig: &state.LogConfig{MaxFiles: 2, MaxFileSizeMB: 1},
	}
}

// readLog is the content of every rotated file of stream, in order.
func readLog(t *testing.T, cfg *TaskConfig, stream string) string {
	t.Helper()
	idxs, err := logrotate.Indexes(cfg.LogDir, cfg.TaskName+"."+stream)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, i := range idxs {
		data, _ := os.ReadFile(logrotate.Path(cfg.LogDir, cfg.TaskName+"."+stream, i))
		b.Write(data)
	}
	return b.String()
}

// waitLog waits until stream's log contains want.
func waitLog(t *testing.T, cfg *TaskConfig, stream, want string) {
	t.Helper()
	testutil.WaitFor(t, 15*time.Second, stream+" to contain "+strconv.Quote(want), func() bool {
		return strings.Contains(readLog(t, cfg, stream), want)
	})
}

// start starts cfg on d and returns its exit channel.
func start(t *testing.T, d Driver, cfg *TaskConfig) (*TaskHandle, <-chan *ExitResult) {
	t.Helper()
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	ch, err := d.WaitTask(context.Background(), cfg.ID)
	if err != nil {
		t.Fatalf("WaitTask: %v", err)
	}
	t.Cleanup(func() { d.DestroyTask(cfg.ID, true) })
	return h, ch
}

// result waits for the exit.
func result(t *testing.T, ch <-chan *ExitResult) *ExitResult {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("exit channel closed without a result")
		}
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("timed out waiting for the task to exit")
	}
	return nil
}

// gone reports whether pid no longer runs (absent or a zombie).
func gone(pid int) bool {
	s, err := readProcStat(pid)
	return err != nil || s.State == 'Z' || s.State == 'X'
}

func TestRawExecExitCodes(t *testing.T) {
	for _, tc := range []struct {
		script     string
		code, sig  int
		successful bool
	}{
		{"exit 0", 0, 0, true},
		{"exit 3", 3, 0, false},
		{"kill -TERM $$", 128 + 15, 15, false},
	} {
		t.Run(tc.script, func(t *testing.T) {
			d := NewRawExec(nil)
			_, ch := start(t, d, shTask(t, tc.script))
			r := result(t, ch)
			if r.ExitCode != tc.code || r.Signal != tc.sig || r.Successful() != tc.successful || r.Err != nil {
				t.Fatalf("got %+v, want code %d signal %d", r, tc.code, tc.sig)
			}
		})
	}
}

func TestRawExecEnvCwdAndStreams(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `echo "$FOO|$(pwd)|$PATH|$HOME|$#|$1"; echo oops >&2`)
	cfg.Config["args"] = []any{"-c", cfg.Config["args"].([]any)[1], "zero", float64(1)}
	_, ch := start(t, d, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v", r)
	}
	want := "bar|" + cfg.TaskDir + "|" + os.Getenv("PATH") + "||1|1\n"
	if got := readLog(t, cfg, "stdout"); got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
	if got := readLog(t, cfg, "stderr"); got != "oops\n" {
		t.Fatalf("stderr %q", got)
	}
}

func TestRawExecCommandResolution(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, "")
	if err := os.MkdirAll(filepath.Join(cfg.TaskDir, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho from-script \"$@\"\n"
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "local", "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Config = map[string]any{"command": "local/run.sh", "args": "single"}
	_, ch := start(t, d, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v", r)
	}
	if got := readLog(t, cfg, "stdout"); got != "from-script single\n" {
		t.Fatalf("stdout %q", got)
	}

	// A bare name is looked up in the task's PATH, not the client's.
	cfg2 := shTask(t, "")
	cfg2.ID = "a2/web"
	cfg2.Env["PATH"] = filepath.Join(cfg.TaskDir, "local")
	cfg2.Config = map[string]any{"command": "run.sh"}
	_, ch = start(t, d, cfg2)
	if r := result(t, ch); !r.Successful() || readLog(t, cfg2, "stdout") != "from-script\n" {
		t.Fatalf("exit %+v, stdout %q", r, readLog(t, cfg2, "stdout"))
	}

	for name, conf := range map[string]map[string]any{
		"missing command": {"args": []any{"x"}},
		"bad args":        {"command": "/bin/true", "args": []any{map[string]any{}}},
		"not found":       {"command": "no-such-command-anywhere"},
		"not executable":  {"command": "/etc/hostname"},
	} {
		cfg := shTask(t, "")
		cfg.ID = "bad/" + name
		cfg.Config = conf
		if _, err := d.StartTask(cfg); err == nil {
			t.Errorf("%s: StartTask succeeded", name)
		} else if name == "missing command" && !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v is not ErrBadConfig", name, err)
		}
		if _, err := d.WaitTask(context.Background(), cfg.ID); !errors.Is(err, ErrTaskNotFound) {
			t.Errorf("%s: failed start left the task behind: %v", name, err)
		}
	}
}

func TestRawExecStopHonoursSignal(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.05; done`)
	_, ch := start(t, d, cfg)
	waitLog(t, cfg, "stdout", "ready")
	began := time.Now()
	if err := d.StopTask(cfg.ID, 10*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("stop took %s: SIGINT was not honoured", took)
	}
	r := result(t, ch)
	if r.ExitCode != 7 || r.Signal != 0 {
		t.Fatalf("exit %+v, want code 7 from the INT trap", r)
	}
	if got := readLog(t, cfg, "stdout"); !strings.Contains(got, "got-int") {
		t.Fatalf("stdout %q lacks the trap's output", got)
	}
}

func TestRawExecStopCustomSignal(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `trap 'exit 5' HUP; trap '' INT; echo ready; while :; do sleep 0.05; done`)
	_, ch := start(t, d, cfg)
	waitLog(t, cfg, "stdout", "ready")
	if err := d.StopTask(cfg.ID, 10*time.Second, "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); r.ExitCode != 5 {
		t.Fatalf("exit %+v, want 5 from the HUP trap", r)
	}
	if err := d.StopTask(cfg.ID, time.Second, "SIGNOPE"); err == nil {
		t.Fatal("unknown signal accepted")
	}
}

func TestRawExecStopKillsAfterTimeout(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `trap '' INT; echo ready; while :; do sleep 0.05; done`)
	_, ch := start(t, d, cfg)
	waitLog(t, cfg, "stdout", "ready")
	began := time.Now()
	if err := d.StopTask(cfg.ID, 300*time.Millisecond, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Fatalf("killed after %s, before the timeout", took)
	}
	if r := result(t, ch); r.Signal != int(syscall.SIGKILL) {
		t.Fatalf("exit %+v, want SIGKILL", r)
	}
}

// childPid waits for the task to write its background child's pid.
func childPid(t *testing.T, cfg *TaskConfig) int {
	t.Helper()
	var pid int
	testutil.WaitFor(t, 15*time.Second, "child.pid", func() bool {
		b, err := os.ReadFile(filepath.Join(cfg.TaskDir, "child.pid"))
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

func TestRawExecStopKillsWholeGroup(t *testing.T) {
	d := NewRawExec(nil)
	// The background sleep ignores SIGINT (a non-interactive shell's
	// background jobs do): only the group SIGKILL ends it.
	cfg := shTask(t, `trap 'exit 0' INT; sleep 1000 & echo $! > child.pid; while :; do sleep 0.05; done`)
	_, ch := start(t, d, cfg)
	child := childPid(t, cfg)
	if gone(child) {
		t.Fatal("child not running")
	}
	if err := d.StopTask(cfg.ID, 5*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	result(t, ch)
	testutil.WaitFor(t, 15*time.Second, "the child to be killed", func() bool { return gone(child) })
}

func TestRawExecExitKillsLeftoverChildren(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `sleep 1000 & echo $! > child.pid`)
	_, ch := start(t, d, cfg)
	child := childPid(t, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v", r)
	}
	testutil.WaitFor(t, 15*time.Second, "the orphaned child to be killed", func() bool { return gone(child) })
}

func TestRawExecLogRotation(t *testing.T) {
	d := NewRawExec(nil)
	// 3.5 MB through 1 MB files, keeping 2: files 0..3 are written and
	// only 2 and 3 remain.
	cfg := shTask(t, `head -c 3500000 /dev/zero | tr '\0' 'x'`)
	_, ch := start(t, d, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v", r)
	}
	idxs, err := logrotate.Indexes(cfg.LogDir, "web.stdout")
	if err != nil {
		t.Fatal(err)
	}
	if len(idxs) != 2 || idxs[0] != 2 || idxs[1] != 3 {
		t.Fatalf("log indexes %v, want [2 3]", idxs)
	}
	sizes := map[int]int64{2: 1 << 20, 3: 3500000 - 3<<20}
	for i, want := range sizes {
		info, err := os.Stat(logrotate.Path(cfg.LogDir, "web.stdout", i))
		if err != nil || info.Size() != want {
			t.Fatalf("web.stdout.%d: %v, size %d, want %d", i, err, info.Size(), want)
		}
	}
}

func TestRawExecLogsDisabled(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `echo hello; echo err >&2`)
	cfg.LogConfig.Disabled = true
	_, ch := start(t, d, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v", r)
	}
	entries, err := os.ReadDir(cfg.LogDir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("log dir has %v (%v), want nothing", entries, err)
	}
}

func TestRawExecRecoverAfterRestart(t *testing.T) {
	d1 := NewRawExec(nil)
	cfg := shTask(t, `trap 'echo got-usr1' USR1; echo ready; while :; do sleep 0.05; done`)
	h, err := d1.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, cfg, "stdout", "ready")
	// The client "restarts": the old driver lets go, a new one recovers
	// the task from its handle alone.
	d1.Shutdown()
	d2 := &RawExec{RecoverPollInterval: 20 * time.Millisecond}
	if err := d2.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if err := d2.RecoverTask(h); !errors.Is(err, ErrTaskExists) {
		t.Fatalf("second RecoverTask: %v, want ErrTaskExists", err)
	}
	ch, err := d2.WaitTask(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The new driver signals the same process and reads its output.
	if err := d2.SignalTask(cfg.ID, "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, cfg, "stdout", "got-usr1")
	if u, err := d2.Stats(cfg.ID); err != nil || u.ResourceUsage.MemoryStats.RSS == 0 {
		t.Fatalf("stats of the recovered task: %+v, %v", u, err)
	}
	if err := d2.StopTask(cfg.ID, 5*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	r := result(t, ch)
	// The process was the old driver's child, so its status may be gone
	// before the new driver sees it; either way the exit is reported.
	if r.Err != nil && !errors.Is(r.Err, ErrExitUnknown) || r.Err == nil && r.Signal != int(syscall.SIGINT) {
		t.Fatalf("exit %+v", r)
	}
	if !gone(h.PID) {
		t.Fatal("process still running")
	}
	// Once gone, the handle recovers nothing.
	d3 := NewRawExec(nil)
	if err := d3.RecoverTask(h); !errors.Is(err, ErrTaskGone) {
		t.Fatalf("RecoverTask of an exited task: %v, want ErrTaskGone", err)
	}
}

func TestRawExecRecoverRefusesRecycledPid(t *testing.T) {
	d := NewRawExec(nil)
	// A live pid whose start time is not the task's: our own process.
	self, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for name, hs := range map[string]rawHandleState{
		"recycled pid": {PID: os.Getpid(), StartTicks: self.StartTicks + 1},
		"no pid":       {},
	} {
		b, _ := json.Marshal(hs)
		err := d.RecoverTask(&TaskHandle{TaskID: "x/" + name, Driver: RawExecName, PID: hs.PID, State: b})
		if !errors.Is(err, ErrTaskGone) {
			t.Errorf("%s: %v, want ErrTaskGone", name, err)
		}
		if _, err := d.WaitTask(context.Background(), "x/"+name); !errors.Is(err, ErrTaskNotFound) {
			t.Errorf("%s: refused task left behind: %v", name, err)
		}
	}
	if err := d.RecoverTask(&TaskHandle{TaskID: "bad", State: []byte("{")}); err == nil {
		t.Error("malformed handle accepted")
	}
}

func TestRawExecStats(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `sleep 1000 & while :; do :; done`)
	h, _ := start(t, d, cfg)
	s1, err := d.Stats(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	u1 := s1.ResourceUsage.CpuStats
	// Let the busy loop burn 200ms of CPU, then sample again: the percent
	// is over the time between the samples.
	testutil.WaitFor(t, 15*time.Second, "200ms of CPU use", func() bool {
		ticks, _, _, err := groupUsage(h.PID)
		return err == nil && ticksToDuration(ticks) >= u1.TotalTime+200*time.Millisecond
	})
	s2, err := d.Stats(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	u2 := s2.ResourceUsage.CpuStats
	if u2.TotalTime < u1.TotalTime+200*time.Millisecond || u2.Percent <= 0 || u2.Percent > 150 {
		t.Fatalf("implausible usage %+v after %+v (one busy loop uses at most one core)", u2, u1)
	}
	if rss := s2.ResourceUsage.MemoryStats.RSS; rss < 4096 || s2.Timestamp <= s1.Timestamp {
		t.Fatalf("implausible usage: rss %d at %d after %d", rss, s2.Timestamp, s1.Timestamp)
	}
	// Both processes of the group (the shell and its sleep) are counted.
	if _, rss, members, err := groupUsage(h.PID); err != nil || members != 2 || rss == 0 {
		t.Fatalf("group of %d: %d members, rss %d, %v", h.PID, members, rss, err)
	}
	if _, err := d.Stats("nope"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("stats of an unknown task: %v", err)
	}
}

func TestRawExecUser(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `id -u`)
	cfg.User = "nobody"
	if os.Geteuid() != 0 {
		if _, err := d.StartTask(cfg); err == nil || !strings.Contains(err.Error(), "root") {
			t.Fatalf("non-root client ran a task as nobody: %v", err)
		}
		return
	}
	// nobody must be able to enter the task directory.
	for p := cfg.TaskDir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	_, ch := start(t, d, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v, stderr %q", r, readLog(t, cfg, "stderr"))
	}
	if got := strings.TrimSpace(readLog(t, cfg, "stdout")); got == "0" || got == "" {
		t.Fatalf("task ran as uid %q, want nobody's", got)
	}
	cfg2 := shTask(t, `true`)
	cfg2.User = "no-such-user-here"
	if _, err := d.StartTask(cfg2); err == nil {
		t.Fatal("unknown user accepted")
	}
}

func TestRawExecWaitDestroySignal(t *testing.T) {
	d := NewRawExec(nil)
	cfg := shTask(t, `echo ready; while :; do sleep 0.05; done`)
	start(t, d, cfg)
	waitLog(t, cfg, "stdout", "ready")

	ctx, cancel := context.WithCancel(context.Background())
	ch, err := d.WaitTask(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if r, ok := <-ch; ok {
		t.Fatalf("canceled wait delivered %+v", r)
	}
	if _, err := d.StartTask(cfg); !errors.Is(err, ErrTaskExists) {
		t.Fatalf("duplicate start: %v", err)
	}
	if err := d.SignalTask(cfg.ID, "BOGUS"); err == nil {
		t.Fatal("bad signal accepted")
	}
	if err := d.DestroyTask(cfg.ID, false); !errors.Is(err, ErrTaskRunning) {
		t.Fatalf("destroy without force: %v", err)
	}
	ch, _ = d.WaitTask(context.Background(), cfg.ID)
	if err := d.DestroyTask(cfg.ID, true); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); r.Signal != int(syscall.SIGKILL) {
		t.Fatalf("forced destroy: %+v", r)
	}
	if _, err := d.WaitTask(context.Background(), cfg.ID); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("destroyed task still known: %v", err)
	}
	if _, err := os.Stat(newLogSpec(cfg).fifoPath("stdout")); !os.IsNotExist(err) {
		t.Fatalf("fifo left behind: %v", err)
	}
}

func TestRawExecFingerprint(t *testing.T) {
	fp := NewRawExec(nil).Fingerprint()
	if !fp.Detected || !fp.Healthy {
		t.Fatalf("fingerprint %+v", fp)
	}
}

// BenchmarkRawExecRunTrue starts /bin/true with logging and waits for its
// exit: the driver's whole per-start overhead (pipes, fork/exec, reap,
// log drain).
func BenchmarkRawExecRunTrue(b *testing.B) {
	d := NewRawExec(nil)
	dir := b.TempDir()
	for i := range b.N {
		cfg := &TaskConfig{ID: "t" + strconv.Itoa(i), TaskName: "t" + strconv.Itoa(i), TaskDir: dir, LogDir: dir,
			Config: map[string]any{"command": "/bin/true"}}
		if _, err := d.StartTask(cfg); err != nil {
			b.Fatal(err)
		}
		ch, _ := d.WaitTask(context.Background(), cfg.ID)
		if r := <-ch; !r.Successful() {
			b.Fatalf("exit %+v", r)
		}
		d.DestroyTask(cfg.ID, false)
	}
}
