package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schedhq/sched/state"
)

// RawExecName is the raw_exec driver's name.
const RawExecName = "raw_exec"

// Defaults of RawExec.
const (
	// DefaultRecoverPollInterval is how often a recovered task's /proc
	// entry is checked.
	DefaultRecoverPollInterval = 500 * time.Millisecond
	// DefaultKillWait bounds the wait for a SIGKILLed task to be gone.
	DefaultKillWait = 10 * time.Second
	// logDrainWait bounds the wait for the last output of a task that
	// exited.
	logDrainWait = 2 * time.Second
	// defaultPath is the PATH given to a task whose environment has none
	// when the client has none either.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

var _ Driver = (*RawExec)(nil)

// RawExec runs a task as a plain child process of the client: no
// isolation, the client's user (or, when the client is root, Task.User
// or the allocation's workload uid: TaskConfig.WorkloadUID).
//
// Config: `command` (required; a bare name is looked up in the task's
// PATH, a relative path is relative to the task directory) and `args` (a
// string or a list of strings), both already interpolated by the task
// runner. The process runs in the task directory with exactly the task's
// environment (plus the client's PATH when it has none), stdin from
// /dev/null, and in its own process group so that stopping the task
// reaches every process it started. When the main process exits, the rest
// of its group is killed.
//
// Output goes through named pipes into rotated files (see rawexec_logs.go)
// so that a restarted client can re-attach to it.
//
// Restart recovery: the handle holds the pid and the process start time
// from /proc/<pid>/stat, so a pid recycled by another process is never
// mistaken for the task. A recovered task is not the new client's child:
// it cannot be waited on, so a ticker polls /proc every RecoverPollInterval,
// and its exit status is known only if the poll sees it as a zombie (else
// ExitResult.Err is ErrExitUnknown).
type RawExec struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// RecoverPollInterval is the /proc poll period of recovered tasks;
	// zero means DefaultRecoverPollInterval.
	RecoverPollInterval time.Duration
	// KillWait bounds StopTask's and DestroyTask's wait after SIGKILL;
	// zero means DefaultKillWait.
	KillWait time.Duration
	// Policy is what this client allows raw_exec tasks
	// (rawexec_policy.go); the zero value allows everything.
	Policy RawExecPolicy

	tasks taskTable[rawTask]
	stop  chan struct{} // closed by Shutdown
	once  sync.Once
}

// NewRawExec returns a raw_exec driver.
func NewRawExec(logger *slog.Logger) *RawExec {
	if logger == nil {
		logger = slog.Default()
	}
	return &RawExec{Logger: logger}
}

// rawHandleState is the driver-specific part of a TaskHandle.
type rawHandleState struct {
	PID        int     `json:"pid"`
	StartTicks uint64  `json:"start_ticks"`
	Logs       logSpec `json:"logs"`
}

// rawTask is one running (or exited, not yet destroyed) task.
type rawTask struct {
	id        string
	pid       int
	start     uint64 // start time in clock ticks after boot
	startedAt time.Time
	recovered bool
	logs      logSpec
	copier    *logCopier
	exit      *exitState

	mu       sync.Mutex // guards the CPU sample
	lastCPU  uint64
	lastTime time.Time
}

// Name implements Driver.
func (d *RawExec) Name() string { return RawExecName }

// Fingerprint implements Driver: raw_exec works on Linux.
func (d *RawExec) Fingerprint() *state.DriverInfo {
	if runtime.GOOS != "linux" {
		return &state.DriverInfo{Detected: false, Healthy: false, HealthDescription: "raw_exec needs Linux"}
	}
	if d.Policy.Disabled {
		return &state.DriverInfo{Detected: false, Healthy: false, HealthDescription: ErrRawExecDisabled.Error()}
	}
	return &state.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy",
		Attributes: map[string]string{"driver.raw_exec": "1"}}
}

func (d *RawExec) init() {
	d.once.Do(func() {
		d.stop = make(chan struct{})
		if d.Logger == nil {
			d.Logger = slog.Default()
		}
	})
}

// StartTask implements Driver.
func (d *RawExec) StartTask(cfg *TaskConfig) (*TaskHandle, error) {
	d.init()
	if err := d.tasks.reserve(cfg.ID); err != nil {
		return nil, err
	}
	t, err := d.start(cfg)
	d.tasks.commit(cfg.ID, t)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(rawHandleState{PID: t.pid, StartTicks: t.start, Logs: t.logs})
	if err != nil {
		return nil, err
	}
	return &TaskHandle{TaskID: cfg.ID, Driver: RawExecName, PID: t.pid, StartedAt: t.startedAt, State: b}, nil
}

// start builds and starts the child process.
func (d *RawExec) start(cfg *TaskConfig) (*rawTask, error) {
	if d.Policy.Disabled {
		return nil, ErrRawExecDisabled
	}
	tu, err := d.Policy.taskUser(cfg.User, cfg.WorkloadUID)
	if err != nil {
		return nil, err
	}
	if tu.cred != nil {
		if err := giveDirs(cfg, tu); err != nil {
			return nil, err
		}
	}
	tmp, err := taskTmpDir(cfg.TaskDir, tu.cred) // tmpdir.go
	if err != nil {
		return nil, err
	}
	cfg = ptrCopy(cfg)
	cfg.Env = withTmpDir(withVolumeEnv(tu.env(cfg.Env, cfg.TaskDir), cfg.Mounts), tmp)
	cmd, err := buildCommand(cfg, tu.cred)
	if err != nil {
		return nil, err
	}
	logs := newLogSpec(cfg)
	tl, err := openTaskLogs(logs)
	if err != nil {
		return nil, fmt.Errorf("task logs: %w", err)
	}
	cmd.Stdout, cmd.Stderr = tl.stdout, tl.stderr
	if err := cmd.Start(); err != nil {
		tl.abort()
		removeFifos(logs)
		return nil, fmt.Errorf("start %s as %s: %w", cmd.Path, tu.name, err)
	}
	tl.closeChildEnds()
	t := &rawTask{id: cfg.ID, pid: cmd.Process.Pid, startedAt: time.Now(), logs: logs,
		copier: tl.copier, exit: newExitState()}
	if s, err := readProcStat(t.pid); err == nil {
		t.start = s.StartTicks
	}
	go d.reap(t, cmd)
	return t, nil
}

// buildCommand turns a task config into an exec.Cmd that runs as cred
// (nil: the client's own user). cfg.User is not looked at.
func buildCommand(cfg *TaskConfig, cred *syscall.Credential) (*exec.Cmd, error) {
	command, err := configString(cfg.Config, "command")
	if err != nil {
		return nil, err
	}
	if command == "" {
		return nil, fmt.Errorf("%w: command is required", ErrBadConfig)
	}
	args, err := configStrings(cfg.Config, "args")
	if err != nil {
		return nil, err
	}
	env := make([]string, 0, len(cfg.Env)+1)
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	path, ok := cfg.Env["PATH"]
	if !ok {
		path = os.Getenv("PATH")
		if path == "" {
			path = defaultPath
		}
		env = append(env, "PATH="+path)
	}
	bin, err := lookCommand(command, path, cfg.TaskDir)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: bin, Args: append([]string{command}, args...), Env: env, Dir: cfg.TaskDir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	return cmd, nil
}

// lookCommand resolves command: a name without a slash is searched in
// path (the task's PATH, not the client's), a relative path is relative to
// the task directory.
func lookCommand(command, path, taskDir string) (string, error) {
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) {
			command = filepath.Join(taskDir, command)
		}
		if err := executable(command); err != nil {
			return "", fmt.Errorf("command %s: %w", command, err)
		}
		return command, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(taskDir, dir)
		}
		p := filepath.Join(dir, command)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %q", command, path)
}

// executable checks that p is a regular file with an execute bit.
func executable(p string) error {
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// credentialFor is the credential to run as name, or nil when that is the
// client's own user. Another user needs a root client.
func credentialFor(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q: uid %q: %w", name, u.Uid, err)
	}
	if int(uid) == os.Geteuid() {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("task user %q differs from the client's user (uid %d): running tasks as another user needs a root client", name, os.Geteuid())
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q: gid %q: %w", name, u.Gid, err)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	return cred, nil
}

// reap waits for our child t: once it has exited (still a zombie, so its
// pid and group ID cannot be reused), the rest of its group is killed,
// then the child is reaped and its output drained.
func (d *RawExec) reap(t *rawTask, cmd *exec.Cmd) {
	if err := waitExitedNoReap(t.pid); err != nil {
		d.Logger.Warn("raw_exec: waitid", "task", t.id, "pid", t.pid, "error", err)
	}
	killGroup(t.pid, syscall.SIGKILL)
	err := cmd.Wait()
	res := &ExitResult{}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res = exitFromStatus(int(ee.Sys().(syscall.WaitStatus)))
	default:
		res.Err = err
	}
	t.copier.drain(logDrainWait)
	t.exit.set(res)
}

// killGroup signals every process of group pgid, ignoring a group that is
// already gone.
func killGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// RecoverTask implements Driver: it re-attaches to a task started by an
// earlier client on this machine, if the same process (pid and start time)
// still runs.
func (d *RawExec) RecoverTask(h *TaskHandle) error {
	var hs rawHandleState
	if err := json.Unmarshal(h.State, &hs); err != nil {
		return fmt.Errorf("raw_exec handle of %s: %w", h.TaskID, err)
	}
	if hs.PID <= 0 {
		return fmt.Errorf("raw_exec handle of %s has no pid: %w", h.TaskID, ErrTaskGone)
	}
	d.init()
	if err := d.tasks.reserve(h.TaskID); err != nil {
		return err
	}
	if alive, _ := procAlive(hs.PID, hs.StartTicks); !alive {
		d.tasks.commit(h.TaskID, nil)
		return fmt.Errorf("%s (pid %d): %w", h.TaskID, hs.PID, ErrTaskGone)
	}
	copier, err := reattachLogs(hs.Logs)
	if err != nil {
		d.Logger.Warn("raw_exec: recovered task's logs are lost", "task", h.TaskID, "error", err)
		copier = &logCopier{}
	}
	t := &rawTask{id: h.TaskID, pid: hs.PID, start: hs.StartTicks, startedAt: h.StartedAt,
		recovered: true, logs: hs.Logs, copier: copier, exit: newExitState()}
	d.tasks.commit(h.TaskID, t)
	go d.poll(t)
	return nil
}

// poll watches a recovered task through /proc until it is gone. It also
// ends, leaving the task running, when the driver shuts down.
func (d *RawExec) poll(t *rawTask) {
	every := d.RecoverPollInterval
	if every <= 0 {
		every = DefaultRecoverPollInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		alive, s := procAlive(t.pid, t.start)
		if !alive {
			res := &ExitResult{Err: ErrExitUnknown}
			if s != nil && s.ExitStatus >= 0 {
				res = exitFromStatus(s.ExitStatus)
			}
			killGroup(t.pid, syscall.SIGKILL)
			t.copier.drain(logDrainWait)
			t.exit.set(res)
			return
		}
		select {
		case <-tick.C:
		case <-d.stop:
			t.copier.close()
			return
		}
	}
}

// WaitTask implements Driver. When ctx ends first, the channel is closed
// without a value.
func (d *RawExec) WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error) {
	t, err := d.tasks.get(taskID)
	if err != nil {
		return nil, err
	}
	return t.exit.wait(ctx), nil
}

// signal sends sig to the task's main process, after checking (for a
// recovered task) that the pid is still the task's.
func (t *rawTask) signal(sig syscall.Signal) error {
	if t.exit.get() != nil {
		return nil
	}
	if t.recovered {
		if alive, _ := procAlive(t.pid, t.start); !alive {
			return nil
		}
	}
	if err := syscall.Kill(t.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// StopTask implements Driver: signal (default SIGINT) to the main
// process, up to timeout for it to exit, then SIGKILL to the whole
// process group; it returns once the task has exited, or fails after
// KillWait more.
func (d *RawExec) StopTask(taskID string, timeout time.Duration, signal string) error {
	t, err := d.tasks.get(taskID)
	if err != nil {
		return err
	}
	sig, err := ParseSignal(signal)
	if err != nil {
		return err
	}
	if err := t.signal(sig); err != nil {
		return fmt.Errorf("stop %s: %w", taskID, err)
	}
	if t.exit.waitFor(timeout) {
		return nil
	}
	return d.kill(t)
}

// kill SIGKILLs t's group and waits for its exit.
func (d *RawExec) kill(t *rawTask) error {
	if t.exit.get() != nil {
		return nil
	}
	if !t.recovered || func() bool { alive, _ := procAlive(t.pid, t.start); return alive }() {
		if err := killGroup(t.pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill %s: %w", t.id, err)
		}
	}
	wait := d.KillWait
	if wait <= 0 {
		wait = DefaultKillWait
	}
	if !t.exit.waitFor(wait) {
		return fmt.Errorf("task %s (pid %d) still running %s after SIGKILL", t.id, t.pid, wait)
	}
	return nil
}

// SignalTask implements Driver: sig goes to the task's main process.
func (d *RawExec) SignalTask(taskID string, signal string) error {
	t, err := d.tasks.get(taskID)
	if err != nil {
		return err
	}
	if t.exit.get() != nil {
		return fmt.Errorf("signal %s: task has exited", taskID)
	}
	sig, err := ParseSignal(signal)
	if err != nil {
		return err
	}
	return t.signal(sig)
}

// DestroyTask implements Driver. Without force a running task is an
// ErrTaskRunning; with force it is killed first. The task's pipes are
// removed; its log files stay.
func (d *RawExec) DestroyTask(taskID string, force bool) error {
	t, err := d.tasks.get(taskID)
	if err != nil {
		return err
	}
	if t.exit.get() == nil {
		if !force {
			return fmt.Errorf("destroy %s: %w", taskID, ErrTaskRunning)
		}
		if err := d.kill(t); err != nil {
			return err
		}
	}
	removeFifos(t.logs)
	d.tasks.commit(taskID, nil)
	return nil
}

// Stats implements Driver: CPU and resident memory summed over the task's
// process group. The CPU percent is over the time since the previous Stats
// call, or since the task started on the first call; 100 is one core.
func (d *RawExec) Stats(taskID string) (*state.TaskResourceUsage, error) {
	t, err := d.tasks.get(taskID)
	if err != nil {
		return nil, err
	}
	if t.exit.get() != nil {
		return nil, fmt.Errorf("stats %s: task has exited", taskID)
	}
	if t.recovered {
		if alive, _ := procAlive(t.pid, t.start); !alive {
			return nil, fmt.Errorf("stats %s: task has exited", taskID)
		}
	}
	ticks, rss, members, err := groupUsage(t.pid)
	if err != nil {
		return nil, err
	}
	if members == 0 {
		return nil, fmt.Errorf("stats %s: no process left in group %d", taskID, t.pid)
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	prevCPU, prevTime := t.lastCPU, t.lastTime
	if prevTime.IsZero() {
		// First sample: the average since the process started.
		if up, err := uptime(); err == nil {
			prevTime = now.Add(-(up - ticksToDuration(t.start)))
		}
	}
	var percent float64
	if wall := now.Sub(prevTime); !prevTime.IsZero() && wall > 0 && ticks >= prevCPU {
		percent = 100 * float64(ticksToDuration(ticks-prevCPU)) / float64(wall)
	}
	t.lastCPU, t.lastTime = ticks, now
	return measured(rss, percent, ticksToDuration(ticks), now), nil
}

// Shutdown detaches the driver from its tasks without stopping them, as a
// client that exits does: log copiers stop reading (output waits in the
// pipes for the next client) and recovered tasks stop being polled. A
// client that restarts in the same process (tests) calls it before
// building the new driver. The driver should not be used afterwards.
func (d *RawExec) Shutdown() {
	d.init()
	d.tasks.locked(func(tasks map[string]*rawTask) {
		select {
		case <-d.stop:
			return
		default:
			close(d.stop)
		}
		for _, t := range tasks {
			if t != nil {
				t.copier.close()
			}
		}
	})
}
