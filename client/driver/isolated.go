package driver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schedhq/sched/client/cgroup"
	"github.com/schedhq/sched/client/driver/nsinit"
	"github.com/schedhq/sched/state"
)

// ExecName is the isolated exec driver's name.
const ExecName = "exec"

// Defaults of Exec.
const (
	// DefaultCgroupParent holds the tasks' cgroups: /sched/<alloc>.<task>.
	DefaultCgroupParent = "/sched"
	// DefaultPIDsLimit caps the processes and threads of one task.
	DefaultPIDsLimit = 4096
	// DefaultExecUser runs the tasks that name no user when the
	// allocation has no workload uid.
	DefaultExecUser = "nobody"
	// initReportWait bounds the wait for the init to build the root and
	// start the task.
	initReportWait = 30 * time.Second
	// DefaultParallelStarts is how many tasks the driver starts at once.
	DefaultParallelStarts = 32
)

// DefaultChrootEnv is the host directories an exec task's root is built
// from (host path → path in the root), as Nomad's chroot_env: bound
// read-only; a host path that is a symbolic link (/bin → usr/bin) is the
// same link in the root; a path the host lacks is left out.
var DefaultChrootEnv = map[string]string{
	"/bin": "/bin", "/etc": "/etc", "/lib": "/lib", "/lib32": "/lib32", "/lib64": "/lib64",
	"/run/resolvconf": "/run/resolvconf", "/sbin": "/sbin", "/usr": "/usr",
}

var _ Driver = (*Exec)(nil)

// errExecDisabled answers tasks on a client that turned exec off.
var errExecDisabled = errors.New("exec is disabled on this client (client { exec { enabled = true } })")

// Exec runs a task isolated: in its own mount, PID, IPC and UTS
// namespaces (and a network namespace of its own when its group's network
// mode is "none"; the host's with "host" or no network), with the task
// directory as its root, built from ChrootEnv, its allocation's alloc/
// and its host volumes, as its allocation's workload user (or Task.User,
// or DefaultUser), in a cgroup of its own that enforces its cpu (shares),
// memory (memory_max the hard limit when set, memory the soft one) and a
// process cap. The client must run as root.
//
// The sched binary itself is the task's first process (package nsinit):
// the driver starts it in the new namespaces, puts it in the cgroup, then
// hands it the spec; it builds the root, pivots into it, starts the task
// and stays as the namespace's init. The task's namespaces, and so its
// mounts, end with it: the host's mount table never holds a task's mount.
//
// Restart recovery works as raw_exec's (the handle holds the init's pid,
// start time, cgroup and log pipes); the init writes the task's exit
// status to a file beside the task directory, so a recovered task's exit
// code is known too. A task over its memory limit is killed by the
// kernel; the cgroup's OOM kill counter turns its exit into ErrOOMKilled
// ("OOM Killed").
type Exec struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Disabled refuses every task and fingerprints the driver as not
	// detected (client { exec { enabled = false } }).
	Disabled bool
	// ChrootEnv maps host paths to paths in the task's root; nil means
	// DefaultChrootEnv.
	ChrootEnv map[string]string
	// CgroupParent is where task cgroups go; empty means
	// DefaultCgroupParent.
	CgroupParent string
	// PIDsLimit caps each task's processes; zero means DefaultPIDsLimit.
	PIDsLimit int64
	// DefaultUser runs tasks that name no user and have no workload uid;
	// empty means DefaultExecUser.
	DefaultUser string
	// DeniedUsers may not run tasks; "root" also denies uid 0.
	DeniedUsers []string
	// InitPath is the sched binary run as the task's init; empty means
	// this process's own executable (a test binary must call nsinit.Main
	// from TestMain when nsinit.Requested).
	InitPath string
	// RecoverPollInterval and KillWait are as RawExec's.
	RecoverPollInterval time.Duration
	KillWait            time.Duration
	// ParallelStarts bounds the tasks being started at once (their inits
	// starting, building their roots and reporting); zero means
	// DefaultParallelStarts. Each init is the sched binary starting up
	// (about 60 ms of CPU before it reads its spec): a hundred at once
	// starve the client agent itself (its heartbeats were answered up to
	// 1.5 s late), while 32 at once start a hundred tasks about as fast
	// (docs/drivers.md, Measured).
	ParallelStarts int

	tasks  taskTable[execTask]
	stop   chan struct{}
	starts chan struct{}
	once   sync.Once
}

// NewExec returns an exec driver with the defaults.
func NewExec(logger *slog.Logger) *Exec { return &Exec{Logger: logger} }

// execHandleState is the driver-specific part of a TaskHandle.
type execHandleState struct {
	PID        int     `json:"pid"`
	StartTicks uint64  `json:"start_ticks"`
	Cgroup     string  `json:"cgroup"`
	StatusFile string  `json:"status_file"`
	Logs       logSpec `json:"logs"`
	// NetNS is the allocation's network namespace the task joined, ""
	// when none.
	NetNS string `json:"netns,omitempty"`
}

// execTask is one task the driver runs (or ran, until destroyed).
type execTask struct {
	id         string
	pid        int // the init's, in the host's PID namespace
	start      uint64
	startedAt  time.Time
	recovered  bool
	cg         *cgroup.Group
	statusFile string
	netns      string
	logs       logSpec
	copier     *logCopier
	exit       *exitState

	mu       sync.Mutex
	lastCPU  time.Duration
	lastTime time.Time
}

// Name implements Driver.
func (d *Exec) Name() string { return ExecName }

// Fingerprint implements Driver: exec needs Linux, root and cgroups.
func (d *Exec) Fingerprint() *state.DriverInfo {
	unhealthy := func(why string) *state.DriverInfo {
		return &state.DriverInfo{Detected: false, Healthy: false, HealthDescription: why}
	}
	if d.Disabled {
		return unhealthy(errExecDisabled.Error())
	}
	if runtime.GOOS != "linux" {
		return unhealthy("exec needs Linux")
	}
	if os.Geteuid() != 0 {
		return unhealthy("exec needs a client running as root (namespaces, cgroups and the task's user)")
	}
	mode := cgroup.Detect()
	if mode == cgroup.Unavailable {
		return unhealthy("exec needs cgroups: no cgroup file system is mounted")
	}
	if _, err := d.initPath(); err != nil {
		return unhealthy("exec cannot find the sched binary to run as the task's init: " + err.Error())
	}
	return &state.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy",
		Attributes: map[string]string{"driver.exec": "1", "driver.exec.cgroup": mode.String()}}
}

func (d *Exec) initPath() (string, error) {
	if d.InitPath != "" {
		return d.InitPath, nil
	}
	return os.Executable()
}

func (d *Exec) init() {
	d.once.Do(func() {
		d.stop = make(chan struct{})
		d.starts = make(chan struct{}, cmp.Or(d.ParallelStarts, DefaultParallelStarts))
		if d.Logger == nil {
			d.Logger = slog.Default()
		}
	})
}

// StartTask implements Driver.
func (d *Exec) StartTask(cfg *TaskConfig) (*TaskHandle, error) {
	d.init()
	if err := d.tasks.reserve(cfg.ID); err != nil {
		return nil, err
	}
	t, err := d.start(cfg)
	d.tasks.commit(cfg.ID, t)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(execHandleState{PID: t.pid, StartTicks: t.start, Cgroup: t.cg.Path(),
		StatusFile: t.statusFile, Logs: t.logs, NetNS: t.netns})
	if err != nil {
		return nil, err
	}
	return &TaskHandle{TaskID: cfg.ID, Driver: ExecName, PID: t.pid, StartedAt: t.startedAt, State: b}, nil
}

// cloneFlags are the namespaces of a task of network mode mode; netns is
// the allocation's network namespace the client made, which the init
// joins instead of making one (newNet: the task gets a network
// namespace of its own, with only its loopback up).
func cloneFlags(mode, netns string) (flags uintptr, newNet bool, err error) {
	flags = uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	switch {
	case mode == "" || mode == "host":
		return flags, false, nil
	case (mode == "bridge" || mode == "none") && netns != "":
		return flags, false, nil
	case mode == "none":
		return flags | syscall.CLONE_NEWNET, true, nil
	case mode == "bridge":
		return 0, false, fmt.Errorf("%w: network mode bridge needs the allocation's network namespace, which the client did not make", ErrBadConfig)
	}
	return 0, false, fmt.Errorf("%w: the exec driver runs tasks in network mode host, bridge or none, not %q", ErrBadConfig, mode)
}

// limits are the cgroup limits of cfg.
func (d *Exec) limits(cfg *TaskConfig) cgroup.Limits {
	l := cgroup.Limits{CPUShares: uint64(max(cfg.CPU, 0)), PIDs: d.PIDsLimit}
	if l.PIDs <= 0 {
		l.PIDs = DefaultPIDsLimit
	}
	if cfg.MemoryMB > 0 {
		l.MemoryBytes = int64(cfg.MemoryMB) << 20
		if cfg.MemoryMaxMB > cfg.MemoryMB {
			l.MemoryBytes, l.MemorySoftBytes = int64(cfg.MemoryMaxMB)<<20, int64(cfg.MemoryMB)<<20
		}
	}
	return l
}

// taskUser is who the task runs as; it is never the client's own user
// unless that is what the task (or DefaultUser) names.
func (d *Exec) taskUser(cfg *TaskConfig) (taskUser, error) {
	def := d.DefaultUser
	if def == "" {
		def = DefaultExecUser
	}
	tu, err := RawExecPolicy{DefaultUser: def}.taskUser(cfg.User, cfg.WorkloadUID)
	if err != nil {
		return taskUser{}, err
	}
	uid := uint32(os.Geteuid())
	if tu.cred != nil {
		uid = tu.cred.Uid
	}
	if slices.Contains(d.DeniedUsers, tu.name) || uid == 0 && slices.Contains(d.DeniedUsers, "root") {
		return taskUser{}, fmt.Errorf("%w: user %q (uid %d) may not run exec tasks on this client (client.exec.denied_users)", ErrBadConfig, tu.name, uid)
	}
	return tu, nil
}

// spec is what the init builds and runs for cfg.
func (d *Exec) spec(cfg *TaskConfig, tu taskUser) (*nsinit.Spec, error) {
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
	s := &nsinit.Spec{Root: cfg.TaskDir, Links: map[string]string{}, Command: command, Args: args, Dir: "/"}
	chroot := d.ChrootEnv
	if chroot == nil {
		chroot = DefaultChrootEnv
	}
	// Parents before children: /usr before /usr/local.
	for _, src := range slices.SortedFunc(maps.Keys(chroot), func(a, b string) int { return strings.Compare(chroot[a], chroot[b]) }) {
		target := filepath.Clean("/" + chroot[src])
		fi, err := os.Lstat(src)
		switch {
		case err != nil:
			continue // the host has no such path
		case fi.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(src)
			if err != nil {
				return nil, fmt.Errorf("chroot_env %s: %w", src, err)
			}
			s.Links[target] = link
		default:
			s.Mounts = append(s.Mounts, nsinit.Mount{Source: src, Target: target, ReadOnly: true})
		}
	}
	if cfg.AllocDir != "" {
		s.Mounts = append(s.Mounts, nsinit.Mount{Source: cfg.AllocDir, Target: "/alloc"})
	}
	for _, m := range cfg.Mounts {
		s.Mounts = append(s.Mounts, nsinit.Mount{Source: m.HostPath, Target: m.TaskPath, ReadOnly: m.ReadOnly})
	}
	if len(cfg.AllocID) >= 8 {
		s.Hostname = cfg.AllocID[:8]
	}
	// The task sees its directories where its root puts them.
	inRoot := map[string]string{cfg.TaskDir: "/", cfg.LocalDir: "/local", cfg.SecretsDir: "/secrets", cfg.AllocDir: "/alloc"}
	env := tu.env(cfg.Env, cfg.TaskDir)
	if cfg.NetworkMode == "bridge" {
		env = bridgePortEnv(env, cfg.Ports)
	}
	env = withTmpDir(env, "/tmp") // the task's own tmp/, in its root (tmpdir.go)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		if p, ok := inRoot[v]; ok && v != "" {
			v = p
		}
		s.Env = append(s.Env, k+"="+v)
	}
	if _, ok := env["PATH"]; !ok {
		s.Env = append(s.Env, "PATH="+defaultPath)
	}
	if tu.cred != nil {
		s.UID, s.GID, s.Groups = tu.cred.Uid, tu.cred.Gid, tu.cred.Groups
	}
	return s, nil
}

// start prepares and starts the task's init, and waits for its report.
func (d *Exec) start(cfg *TaskConfig) (*execTask, error) {
	if d.Disabled {
		return nil, errExecDisabled
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the exec driver needs a client running as root")
	}
	flags, newNet, err := cloneFlags(cfg.NetworkMode, cfg.NetNS)
	if err != nil {
		return nil, err
	}
	if err := checkTaskDirName(cfg.TaskName); err != nil || cfg.TaskDir == "" || cfg.AllocID == "" {
		return nil, fmt.Errorf("%w: task %q has no task directory of its own", ErrBadConfig, cfg.TaskName)
	}
	tu, err := d.taskUser(cfg)
	if err != nil {
		return nil, err
	}
	spec, err := d.spec(cfg, tu)
	if err != nil {
		return nil, err
	}
	spec.Loopback = newNet
	if cfg.NetNS != "" && (cfg.NetworkMode == "bridge" || cfg.NetworkMode == "none") {
		spec.NetNS = cfg.NetNS
	}
	if tu.cred != nil {
		if err := giveDirs(cfg, tu); err != nil {
			return nil, err
		}
	}
	initPath, err := d.initPath()
	if err != nil {
		return nil, err
	}
	parent := d.CgroupParent
	if parent == "" {
		parent = DefaultCgroupParent
	}
	cg, err := cgroup.Create(parent+"/"+cfg.AllocID+"."+cfg.TaskName, d.limits(cfg))
	if err != nil {
		return nil, err
	}
	t := &execTask{id: cfg.ID, cg: cg, logs: newLogSpec(cfg), exit: newExitState(), netns: spec.NetNS,
		statusFile: filepath.Join(filepath.Dir(cfg.TaskDir), "."+cfg.TaskName+".exec-status")}
	ok := false
	defer func() {
		if !ok {
			d.cleanup(t)
		}
	}()
	d.starts <- struct{}{}
	cmd, err := d.launch(t, initPath, flags, spec)
	<-d.starts
	if err != nil {
		return nil, err
	}
	ok = true
	go d.reap(t, cmd)
	return t, nil
}

// checkTaskDirName refuses a task name that is not one path element.
func checkTaskDirName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("task name %q is not a plain name", name)
	}
	return nil
}

// launch starts the init, puts it in t's cgroup, hands it spec and waits
// for its report. On success t has the init's pid and log copier.
func (d *Exec) launch(t *execTask, initPath string, flags uintptr, spec *nsinit.Spec) (*exec.Cmd, error) {
	status, err := os.OpenFile(t.statusFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("task status file: %w", err)
	}
	defer status.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specR.Close()
	defer specW.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer repR.Close()
	defer repW.Close()
	tl, err := openTaskLogs(t.logs)
	if err != nil {
		return nil, fmt.Errorf("task logs: %w", err)
	}
	cmd := &exec.Cmd{Path: initPath, Args: []string{nsinit.Arg0}, Env: []string{},
		Stdout: tl.stdout, Stderr: tl.stderr, ExtraFiles: []*os.File{specR, repW, status},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: flags, Setpgid: true}}
	if err := cmd.Start(); err != nil {
		tl.abort()
		return nil, fmt.Errorf("start the task's init %s: %w", initPath, err)
	}
	tl.closeChildEnds()
	t.copier = tl.copier
	t.pid, t.startedAt = cmd.Process.Pid, time.Now()
	if s, err := readProcStat(t.pid); err == nil {
		t.start = s.StartTicks
	}
	specR.Close()
	repW.Close()
	fail := func(err error) (*exec.Cmd, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	if err := t.cg.AddProc(t.pid); err != nil {
		return fail(fmt.Errorf("put the task in cgroup %s: %w", t.cg.Path(), err))
	}
	if err := json.NewEncoder(specW).Encode(spec); err != nil {
		return fail(fmt.Errorf("hand the task's init its spec: %w", err))
	}
	specW.Close()
	repR.SetReadDeadline(time.Now().Add(initReportWait))
	var rep nsinit.Report
	if err := json.NewDecoder(repR).Decode(&rep); err != nil {
		return fail(fmt.Errorf("the task's init did not report: %w", err))
	}
	if rep.Error != "" {
		return fail(errors.New(rep.Error))
	}
	return cmd, nil
}

// cleanup removes what a task that will not run left: its cgroup, pipes
// and status file.
func (d *Exec) cleanup(t *execTask) {
	if t.copier != nil {
		t.copier.close()
	}
	if err := t.cg.Destroy(d.killWait()); err != nil {
		d.Logger.Warn("exec: cgroup left behind", "task", t.id, "error", err)
	}
	removeFifos(t.logs)
	os.Remove(t.statusFile)
}

func (d *Exec) killWait() time.Duration {
	if d.KillWait > 0 {
		return d.KillWait
	}
	return DefaultKillWait
}

// reap waits for the init, our child.
func (d *Exec) reap(t *execTask, cmd *exec.Cmd) {
	err := cmd.Wait()
	res := readStatus(t.statusFile)
	if res == nil {
		// The init itself was killed (StopTask's SIGKILL to the group,
		// or the OOM killer): its own status is the task's.
		res = &ExitResult{}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			res = exitFromStatus(int(ee.Sys().(syscall.WaitStatus)))
		default:
			res.Err = err
		}
	}
	d.finish(t, res)
}

// readStatus reads the status the init wrote; nil when there is none.
func readStatus(path string) *ExitResult {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	var st nsinit.Status
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	return &ExitResult{ExitCode: st.ExitCode, Signal: st.Signal}
}

// finish records t's exit: an OOM kill in its cgroup marks it, then the
// cgroup goes and the last output is drained.
func (d *Exec) finish(t *execTask, res *ExitResult) {
	if u, err := t.cg.Usage(); err == nil && u.OOMKills > 0 && !res.Successful() {
		res.OOMKilled, res.Err = true, ErrOOMKilled
	}
	if err := t.cg.Destroy(d.killWait()); err != nil {
		d.Logger.Warn("exec: cgroup left behind", "task", t.id, "error", err)
	}
	t.copier.drain(logDrainWait)
	t.exit.set(res)
}

// RecoverTask implements Driver.
func (d *Exec) RecoverTask(h *TaskHandle) error {
	var hs execHandleState
	if err := json.Unmarshal(h.State, &hs); err != nil {
		return fmt.Errorf("exec handle of %s: %w", h.TaskID, err)
	}
	if hs.PID <= 0 || hs.Cgroup == "" {
		return fmt.Errorf("exec handle of %s has no pid or cgroup: %w", h.TaskID, ErrTaskGone)
	}
	d.init()
	if err := d.tasks.reserve(h.TaskID); err != nil {
		return err
	}
	cg, err := cgroup.Load(hs.Cgroup)
	if err != nil {
		// No cgroup: the task ended and a client destroyed it.
		d.tasks.commit(h.TaskID, nil)
		removeFifos(hs.Logs)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %w: %w", h.TaskID, ErrTaskGone, err)
		}
		return fmt.Errorf("%s: %w", h.TaskID, err)
	}
	t := &execTask{id: h.TaskID, pid: hs.PID, start: hs.StartTicks, startedAt: h.StartedAt, recovered: true,
		cg: cg, statusFile: hs.StatusFile, logs: hs.Logs, exit: newExitState(), netns: hs.NetNS}
	if alive, _ := procAlive(hs.PID, hs.StartTicks); !alive {
		d.cleanup(t)
		d.tasks.commit(h.TaskID, nil)
		return fmt.Errorf("%s (pid %d): %w", h.TaskID, hs.PID, ErrTaskGone)
	}
	copier, err := reattachLogs(hs.Logs)
	if err != nil {
		d.Logger.Warn("exec: recovered task's logs are lost", "task", h.TaskID, "error", err)
		copier = &logCopier{}
	}
	t.copier = copier
	d.tasks.commit(h.TaskID, t)
	go d.poll(t)
	return nil
}

// poll watches a recovered task's init until it is gone, or the driver
// shuts down.
func (d *Exec) poll(t *execTask) {
	every := d.RecoverPollInterval
	if every <= 0 {
		every = DefaultRecoverPollInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if alive, _ := procAlive(t.pid, t.start); !alive {
			res := readStatus(t.statusFile)
			if res == nil {
				res = &ExitResult{Err: ErrExitUnknown}
			}
			d.finish(t, res)
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

// WaitTask implements Driver.
func (d *Exec) WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error) {
	t, err := d.tasks.get(taskID)
	if err != nil {
		return nil, err
	}
	return t.exit.wait(ctx), nil
}

// signal sends sig to the init, which passes it on to the task.
func (t *execTask) signal(sig syscall.Signal) error {
	if t.exit.get() != nil {
		return nil
	}
	if alive, _ := procAlive(t.pid, t.start); !alive {
		return nil
	}
	if err := syscall.Kill(t.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// StopTask implements Driver: signal (default SIGINT) to the task, up to
// timeout for it to exit, then SIGKILL to everything in its cgroup.
func (d *Exec) StopTask(taskID string, timeout time.Duration, signal string) error {
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

func (d *Exec) kill(t *execTask) error {
	if t.exit.get() != nil {
		return nil
	}
	if err := t.cg.Kill(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kill %s: %w", t.id, err)
	}
	if !t.exit.waitFor(d.killWait()) {
		return fmt.Errorf("task %s (init pid %d) still running %s after SIGKILL", t.id, t.pid, d.killWait())
	}
	return nil
}

// SignalTask implements Driver.
func (d *Exec) SignalTask(taskID string, signal string) error {
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

// DestroyTask implements Driver: with force a running task is killed
// first; its cgroup, pipes and status file are removed.
func (d *Exec) DestroyTask(taskID string, force bool) error {
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
	d.cleanup(t)
	d.tasks.commit(taskID, nil)
	return nil
}

// Stats implements Driver: the task's cgroup's CPU time and resident
// memory. The CPU percent is over the time since the previous call (or
// the start); 100 is one core.
func (d *Exec) Stats(taskID string) (*state.TaskResourceUsage, error) {
	t, err := d.tasks.get(taskID)
	if err != nil {
		return nil, err
	}
	if t.exit.get() != nil {
		return nil, fmt.Errorf("stats %s: task has exited", taskID)
	}
	u, err := t.cg.Usage()
	if err != nil {
		return nil, fmt.Errorf("stats %s: %w", taskID, err)
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	prevCPU, prevTime := t.lastCPU, t.lastTime
	if prevTime.IsZero() {
		prevTime = t.startedAt
	}
	var percent float64
	if wall := now.Sub(prevTime); !prevTime.IsZero() && wall > 0 && u.CPU >= prevCPU {
		percent = 100 * float64(u.CPU-prevCPU) / float64(wall)
	}
	t.lastCPU, t.lastTime = u.CPU, now
	return measured(u.RSS, percent, u.CPU, now), nil
}

// Shutdown detaches the driver from its tasks without stopping them, as
// RawExec.Shutdown, and removes the cgroup parent when no task's cgroup
// is left in it.
func (d *Exec) Shutdown() {
	d.init()
	defer cgroup.RemoveEmpty(cmp.Or(d.CgroupParent, DefaultCgroupParent))
	d.tasks.locked(func(tasks map[string]*execTask) {
		select {
		case <-d.stop:
			return
		default:
			close(d.stop)
		}
		for _, t := range tasks {
			if t != nil && t.copier != nil {
				t.copier.close()
			}
		}
	})
}

// bridgePortEnv is env with each port's SCHED_PORT_<label> (and Nomad's
// name) the port the task listens on inside the allocation's namespace:
// its `to`, or its own value when `to` is unset. SCHED_HOST_PORT_<label>
// stays the host's port.
func bridgePortEnv(env map[string]string, ports []state.AllocatedPort) map[string]string {
	if len(ports) == 0 {
		return env
	}
	out := maps.Clone(env)
	for _, p := range ports {
		if p.To <= 0 {
			continue
		}
		l := portEnvName(p.Label)
		for _, k := range []string{"SCHED_PORT_" + l, "NOMAD_PORT_" + l} {
			if _, ok := out[k]; ok {
				out[k] = strconv.Itoa(p.To)
			}
		}
	}
	return out
}

// portEnvName is label as the client names its variables: every byte
// other than a letter, digit or '_' made '_'.
func portEnvName(label string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, label)
}
