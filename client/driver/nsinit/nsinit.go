// Package nsinit is the first process of an isolated (exec driver) task:
// the sched binary run again as "sched-task-init", already in new mount,
// PID, IPC and UTS namespaces (and a network namespace when asked) and in
// the task's cgroup, both arranged by the driver when it starts it. It
// builds the task's root, starts the task in it and stays as the PID
// namespace's init until the task exits.
//
// Its life:
//
//  1. Read the Spec (JSON) from fd 3; the driver writes it once the
//     process is in its cgroup, so nothing runs outside the limits.
//  2. Make every mount private, so nothing below reaches the host's mount
//     namespace; bind the task directory onto itself (the new root), then
//     bind each Mount into it (read-only ones remounted read-only;
//     nosuid and nodev always), mount a fresh /proc (this namespace's
//     processes only), a small /dev (null, zero, full, random, urandom,
//     tty, a /dev/shm of its own), set the host name, and pivot_root into
//     it, detaching the host's tree.
//  3. Start the task (its user's credentials, no new privileges) and
//     report "ok" or the error on fd 4.
//  4. As init, forward the signals it gets to the task and reap every
//     orphan; when the task exits, write its Status to fd 5 and exit. The
//     kernel then kills whatever is left in the namespace, and the
//     namespace's mounts go with it: nothing is left to unmount.
//
// Nothing here runs unless Requested: the binary's main (and a test
// binary's TestMain) call Main first when it is.
package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/schedhq/sched/client/cgroup"
)

// Arg0 is the argv[0] the driver starts the init with.
const Arg0 = "sched-task-init"

// JoinArg0 is the argv[0] of a command run inside a running task (alloc
// exec): the sched binary, run as [JoinArg0, cgroup path, program,
// args...], joins the task's cgroup, then becomes program (nsenter,
// which joins the task's namespaces and root), so that nothing the
// command starts is outside the task's limits.
const JoinArg0 = "sched-task-join"

// The init's file descriptors, after stdin, stdout and stderr.
const (
	SpecFD   = 3
	ReportFD = 4
	StatusFD = 5
)

// MaxSpecBytes bounds the spec the init reads.
const MaxSpecBytes = 4 << 20

// Mount is a host path bound into the task's root.
type Mount struct {
	// Source is the host path; Target the absolute path inside the root.
	Source, Target string
	ReadOnly       bool
}

// Spec is what the init does.
type Spec struct {
	// Root is the host path of the task's root (its task directory).
	Root string
	// Links are symbolic links to create inside the root (target path
	// inside the root → link text): a host's /bin that is a link to
	// usr/bin stays a link, to the /usr bound beside it.
	Links map[string]string
	// Mounts are bound in order.
	Mounts   []Mount
	Hostname string
	// Command is the program: an absolute path inside the root, a path
	// relative to Dir, or a name looked up in the PATH of Env.
	Command string
	Args    []string
	Env     []string
	// Dir is the working directory inside the root.
	Dir string
	// UID, GID and Groups the task runs as.
	UID, GID uint32
	Groups   []uint32
	// NetNS, when set, is a network namespace (a path) the task joins:
	// its allocation's, made by the client.
	NetNS string
	// Loopback brings up the loopback interface of the init's own new
	// network namespace (network mode none without one of the client's).
	Loopback bool
}

// Status is how the task ended, as the init writes it to StatusFD.
type Status struct {
	ExitCode int `json:"exit_code"`
	Signal   int `json:"signal"`
}

// Report is what the init writes to ReportFD once the task started (or
// could not).
type Report struct {
	Error string `json:"error,omitempty"`
}

// Requested reports whether this process was started as the init (or
// to join a task).
func Requested() bool { return len(os.Args) > 0 && (os.Args[0] == Arg0 || os.Args[0] == JoinArg0) }

// Main runs the init (or joins a task) and exits; it never returns.
func Main() {
	if os.Args[0] == JoinArg0 {
		join()
	}
	spec, err := readSpec()
	if err != nil {
		fail(err)
	}
	if err := joinNetwork(spec); err != nil {
		fail(err)
	}
	if err := setup(spec); err != nil {
		fail(err)
	}
	// Signals are caught before the task starts: one sent as soon as the
	// task runs waits in the channel for it instead of meeting the
	// runtime's default action.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	pid, err := start(spec)
	if err != nil {
		fail(err)
	}
	report(Report{})
	os.Exit(supervise(pid, sigs))
}

// fail reports err to the driver and exits.
func fail(err error) {
	report(Report{Error: err.Error()})
	os.Exit(127)
}

func report(r Report) {
	f := os.NewFile(ReportFD, "report")
	json.NewEncoder(f).Encode(r)
	f.Close()
}

func readSpec() (*Spec, error) {
	f := os.NewFile(SpecFD, "spec")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read task spec: %w", err)
	}
	if len(b) > MaxSpecBytes {
		return nil, fmt.Errorf("task spec is over %d bytes", MaxSpecBytes)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("task spec: %w", err)
	}
	if !filepath.IsAbs(s.Root) || s.Command == "" {
		return nil, errors.New("task spec needs an absolute root and a command")
	}
	return &s, nil
}

// inside is the host path of p, a path inside the root; ".." cannot
// leave it.
func inside(root, p string) string {
	return filepath.Join(root, filepath.Clean("/"+p))
}

// setup builds the root and pivots into it.
func setup(s *Spec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// Mount points are checked against the root's real path.
	root, err := filepath.EvalSymlinks(s.Root)
	if err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	if err := syscall.Mount(root, root, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind root %s: %w", root, err)
	}
	for target, link := range s.Links {
		p := inside(root, target)
		if cur, err := os.Readlink(p); err == nil && cur == link {
			continue
		}
		removeStale(p)
		if err := os.Symlink(link, p); err != nil {
			return fmt.Errorf("link %s: %w", target, err)
		}
	}
	for _, m := range s.Mounts {
		if err := bind(root, m); err != nil {
			return err
		}
	}
	if err := mountProc(root); err != nil {
		return err
	}
	if err := mountDev(root); err != nil {
		return err
	}
	if err := os.MkdirAll(inside(root, "/tmp"), 0o1777); err != nil {
		return fmt.Errorf("tmp: %w", err)
	}
	os.Chmod(inside(root, "/tmp"), 0o1777|os.ModeSticky)
	if s.Hostname != "" {
		if err := syscall.Sethostname([]byte(s.Hostname)); err != nil {
			return fmt.Errorf("set host name: %w", err)
		}
	}
	return pivot(root)
}

// removeStale removes what a task may have left where a mount point or
// link goes: a link (it could lead the mount outside the root) or an
// empty directory.
func removeStale(p string) {
	if fi, err := os.Lstat(p); err == nil && (fi.Mode()&os.ModeSymlink != 0 || fi.IsDir()) {
		os.Remove(p)
	}
}

// bind binds m into the root, read-only when asked; nosuid and nodev
// always.
func bind(root string, m Mount) error {
	src, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("mount %s: %w", m.Source, err)
	}
	target := inside(root, m.Target)
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		os.Remove(target)
	}
	if src.IsDir() {
		err = os.MkdirAll(target, 0o755)
	} else {
		err = os.MkdirAll(filepath.Dir(target), 0o755)
		if err == nil {
			var f *os.File
			f, err = os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
		}
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	// The target is resolved again by mount(2): refuse one that a link
	// placed outside the root meanwhile.
	if real, err := filepath.EvalSymlinks(target); err != nil || !strings.HasPrefix(real+"/", root+"/") {
		return fmt.Errorf("mount point %s leaves the task's root", m.Target)
	}
	if err := syscall.Mount(m.Source, target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
	}
	flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_NOSUID | syscall.MS_NODEV)
	if m.ReadOnly {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s (read-only %v): %w", m.Target, m.ReadOnly, err)
	}
	return nil
}

func mountProc(root string) error {
	p := inside(root, "/proc")
	removeStale(p)
	if err := os.MkdirAll(p, 0o555); err != nil {
		return fmt.Errorf("proc: %w", err)
	}
	if err := syscall.Mount("proc", p, "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	return nil
}

// devices are the host's device nodes a task gets.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

func mountDev(root string) error {
	dev := inside(root, "/dev")
	removeStale(dev)
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	if err := syscall.Mount("tmpfs", dev, "tmpfs", syscall.MS_NOSUID|syscall.MS_NOEXEC, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mount dev: %w", err)
	}
	for _, d := range devices {
		p := filepath.Join(dev, d)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return fmt.Errorf("dev/%s: %w", d, err)
		}
		f.Close()
		if err := syscall.Mount("/dev/"+d, p, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", d, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("dev/%s: %w", name, err)
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return fmt.Errorf("dev/shm: %w", err)
	}
	if err := syscall.Mount("shm", shm, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mount dev/shm: %w", err)
	}
	return nil
}

// pivot makes root the root and detaches the host's tree.
func pivot(root string) error {
	if err := os.Chdir(root); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// "." then leaves only the new root.
	if err := syscall.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root %s: %w", root, err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	return os.Chdir("/")
}

// start resolves the command inside the root and starts it.
func start(s *Spec) (int, error) {
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	path, err := lookPath(s.Command, envPath(s.Env), dir)
	if err != nil {
		return 0, err
	}
	// No new privileges: a setuid binary reachable in the root cannot
	// give the task more than it has.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0); errno != 0 {
		return 0, fmt.Errorf("no_new_privs: %w", errno)
	}
	cred := &syscall.Credential{Uid: s.UID, Gid: s.GID, Groups: s.Groups}
	if cred.Groups == nil {
		cred.Groups = []uint32{}
	}
	pid, err := syscall.ForkExec(path, append([]string{s.Command}, s.Args...), &syscall.ProcAttr{
		Dir: dir, Env: s.Env, Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Credential: cred, Setsid: true},
	})
	if err != nil {
		return 0, fmt.Errorf("start %s as uid %d: %w", s.Command, s.UID, err)
	}
	return pid, nil
}

func envPath(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
}

// lookPath finds command inside the root.
func lookPath(command, path, dir string) (string, error) {
	check := func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return errors.New("not an executable file")
		}
		return nil
	}
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) {
			command = filepath.Join(dir, command)
		}
		if err := check(command); err != nil {
			return "", fmt.Errorf("command %s in the task's root: %w", command, err)
		}
		return command, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, command); check(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in the task's root (PATH %q)", command, path)
}

// forwarded are the signals the init passes on to the task.
var forwarded = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGWINCH, syscall.SIGCONT,
	syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGABRT, syscall.SIGPIPE,
	syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGIO}

// supervise forwards the signals of sigs to pid and reaps every child
// until pid exits; it writes pid's status and returns the init's exit
// code.
func supervise(pid int, sigs <-chan os.Signal) int {
	go func() {
		for sig := range sigs {
			syscall.Kill(pid, sig.(syscall.Signal))
		}
	}()
	var st Status
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			st = Status{ExitCode: 255}
			break
		}
		if got != pid {
			continue // an orphan the task left
		}
		switch {
		case ws.Exited():
			st.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			st.Signal = int(ws.Signal())
			st.ExitCode = 128 + st.Signal
		}
		break
	}
	f := os.NewFile(StatusFD, "status")
	json.NewEncoder(f).Encode(st)
	f.Sync()
	f.Close()
	return st.ExitCode
}

// join puts this process in the cgroup os.Args[1], then executes
// os.Args[2:].
func join() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "sched-task-join: usage: sched-task-join CGROUP PROGRAM [ARGS...]")
		os.Exit(127)
	}
	g, err := cgroup.Load(os.Args[1])
	if err == nil {
		err = g.AddProc(os.Getpid())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sched-task-join: the task's cgroup:", err)
		os.Exit(127)
	}
	err = syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "sched-task-join:", err)
	os.Exit(127)
}

// joinNetwork joins the spec's network namespace, or brings up the
// loopback of the init's own. A network namespace is a thread's: the
// init's goroutine stays locked to the thread that joined it, and the
// task is forked from that thread (start runs on it), so the task is in
// it; the Go runtime starts its other threads from a clean template
// thread.
func joinNetwork(s *Spec) error {
	if s.NetNS != "" {
		runtime.LockOSThread()
		fd, err := unix.Open(s.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("network namespace %s: %w", s.NetNS, err)
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("join network namespace %s: %w", s.NetNS, err)
		}
		return nil
	}
	if s.Loopback {
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("loopback up: %w", err)
		}
	}
	return nil
}
