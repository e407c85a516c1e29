package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/schedhq/sched/state"
)

// ExecRequest is a command to run inside a running task: with the task's
// environment, working directory and user, as an operator's shell into it.
type ExecRequest struct {
	// TaskID is the driver's task ID ("<alloc id>/<task>").
	TaskID string
	// Command is the program and its arguments; a bare name is looked up
	// in the task's PATH.
	Command []string
	// Env, Dir and User are the task's, as the task runner started it.
	Env  map[string]string
	Dir  string
	User string
	// WorkloadUID is the allocation's uid, as TaskConfig.WorkloadUID.
	WorkloadUID uint32
	// TTY runs the command on a new pseudo terminal (its stdin, stdout
	// and stderr), of Size when that is not zero.
	TTY  bool
	Size state.TerminalSize
	// Stdin is read until EOF; its end closes the command's standard
	// input (with TTY, an end-of-file character is sent instead). The
	// caller must make Stdin return once ExecTask has returned: ExecTask
	// does not wait for the goroutine that reads it.
	Stdin io.Reader
	// Stdout and Stderr receive the output; with TTY all of it goes to
	// Stdout. Writes come from one goroutine per stream.
	Stdout, Stderr io.Writer
	// Resize carries new terminal sizes (TTY only); nil is fine.
	Resize <-chan state.TerminalSize
}

// Execer is implemented by drivers that can run a command inside a task
// they run.
type Execer interface {
	// ExecTask runs req and returns the command's exit code (128+N for a
	// command killed by signal N). Ending ctx kills the command's whole
	// process group; ExecTask returns once it is gone. An error means
	// the command could not be started (it wraps ErrTaskNotFound when
	// the task does not run).
	ExecTask(ctx context.Context, req *ExecRequest) (int, error)
}

var _ Execer = (*RawExec)(nil)

// execOutputDrain bounds the wait for output still in a pipe after the
// command's process group is gone (a process that left the group may
// hold the pipe open).
const execOutputDrain = 2 * time.Second

// ExecTask implements Execer: the command runs as a child of the client in
// its own process group (its own session with TTY), as the task's user,
// like the task itself. When the command exits, the rest of its group is
// killed, as for tasks: a session leaves nothing behind.
func (d *RawExec) ExecTask(ctx context.Context, req *ExecRequest) (int, error) {
	if d.Policy.Disabled {
		return 0, ErrRawExecDisabled
	}
	t, err := d.tasks.get(req.TaskID)
	if err != nil {
		return 0, err
	}
	if t.exit.get() != nil {
		return 0, fmt.Errorf("%s has exited: %w", req.TaskID, ErrTaskNotFound)
	}
	if len(req.Command) == 0 || req.Command[0] == "" {
		return 0, fmt.Errorf("%w: no command", ErrBadConfig)
	}
	tu, err := d.Policy.taskUser(req.User, req.WorkloadUID)
	if err != nil {
		return 0, err
	}
	args := make([]any, 0, len(req.Command)-1)
	for _, a := range req.Command[1:] {
		args = append(args, a)
	}
	cfg := &TaskConfig{ID: req.TaskID, Config: map[string]any{"command": req.Command[0], "args": args},
		Env: tu.env(req.Env, req.Dir), TaskDir: req.Dir}
	cmd, err := buildCommand(cfg, tu.cred)
	if err != nil {
		if errors.Is(err, ErrBadConfig) {
			return 0, err
		}
		// A program that is not there is the caller's mistake.
		return 0, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	if req.TTY {
		return runOnPTY(ctx, cmd, req)
	}
	return runOnPipes(ctx, cmd, req)
}

// runOnPipes runs cmd with its standard streams on pipes to req's.
func runOnPipes(ctx context.Context, cmd *exec.Cmd, req *ExecRequest) (int, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return 0, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return 0, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return 0, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	closeAll(inR, outW, errW) // the child's ends
	growPipe(outR)
	var stdinOnce sync.Once
	closeStdin := func() { stdinOnce.Do(func() { inW.Close() }) }
	go func() {
		if req.Stdin != nil {
			_, _ = io.Copy(inW, req.Stdin)
		}
		closeStdin()
	}()
	var copies sync.WaitGroup
	copies.Add(2)
	go copyOut(&copies, req.Stdout, outR)
	go copyOut(&copies, req.Stderr, errR)
	code, err := waitCommand(ctx, cmd)
	closeStdin()
	drain(&copies, execOutputDrain, outR, errR)
	return code, err
}

// runOnPTY runs cmd as the leader of a new session whose controlling
// terminal is a new pseudo terminal, relaying it to req's streams.
func runOnPTY(ctx context.Context, cmd *exec.Cmd, req *ExecRequest) (int, error) {
	attrs := cmd.SysProcAttr
	attrs.Setpgid = false // the new session is the group
	attrs.Setsid, attrs.Setctty = true, true
	var size *pty.Winsize
	if req.Size.Height > 0 && req.Size.Width > 0 {
		size = &pty.Winsize{Rows: uint16(req.Size.Height), Cols: uint16(req.Size.Width)}
	}
	ptmx, err := pty.StartWithAttrs(cmd, size, attrs)
	if err != nil {
		return 0, fmt.Errorf("start %s on a terminal: %w", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() {
		if req.Stdin != nil {
			if _, err := io.Copy(ptmx, req.Stdin); err == nil {
				_, _ = ptmx.Write([]byte{4}) // ^D: end of input on a terminal
			}
		}
	}()
	// The resizer stops before the terminal is closed: Setsize reads
	// ptmx's descriptor, which a concurrent Close invalidates (a data
	// race under -race, and an ioctl on a reused descriptor without it).
	resizerDone := make(chan struct{})
	go func() {
		defer close(resizerDone)
		for {
			select {
			case sz, ok := <-req.Resize:
				if !ok {
					return
				}
				if sz.Height > 0 && sz.Width > 0 {
					_ = pty.Setsize(ptmx, &pty.Winsize{Rows: uint16(sz.Height), Cols: uint16(sz.Width)})
				}
			case <-done:
				return
			}
		}
	}()
	var copies sync.WaitGroup
	copies.Add(1)
	go copyOut(&copies, req.Stdout, ptmx) // EIO once the terminal's last user is gone
	code, err := waitCommand(ctx, cmd)
	close(done)
	<-resizerDone
	drain(&copies, execOutputDrain, ptmx)
	return code, err
}

// waitCommand waits for cmd to exit or ctx to end (then kills its group),
// kills what is left of the group, and reaps cmd.
func waitCommand(ctx context.Context, cmd *exec.Cmd) (int, error) {
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		_ = waitExitedNoReap(pid)
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		_ = killGroup(pid, syscall.SIGKILL)
		<-exited
	}
	// The child is a zombie: its pid, the group's ID, is not reused yet.
	_ = killGroup(pid, syscall.SIGKILL)
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return exitFromStatus(int(ee.Sys().(syscall.WaitStatus))).ExitCode, nil
	}
	return 0, err
}

// execCopyBuffer is the largest chunk of output read at once: each chunk
// becomes one frame, so bulk output (cat of a large file) pays the
// per-frame cost rarely, while a keystroke's echo still goes out at once.
const execCopyBuffer = 256 << 10

// copyOut copies r to w (nil: discarded) until r ends.
func copyOut(wg *sync.WaitGroup, w io.Writer, r io.Reader) {
	defer wg.Done()
	if w == nil {
		w = io.Discard
	}
	_, _ = io.CopyBuffer(onlyWriter{w}, onlyReader{r}, make([]byte, execCopyBuffer))
}

// onlyReader and onlyWriter hide ReadFrom and WriteTo, so io.CopyBuffer
// uses its buffer (an *os.File would splice through its own 32 KiB one).
type onlyReader struct{ io.Reader }
type onlyWriter struct{ io.Writer }

// growPipe asks the kernel for a pipe buffer as large as a copy chunk,
// so a fast writer fills whole chunks; failing leaves the default.
func growPipe(f *os.File) {
	const fSetPipeSz = 1031
	rc, err := f.SyscallConn() // not Fd(): that would make reads blocking
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, execCopyBuffer)
	})
}

// drain waits up to d for the output copies, then closes their sources,
// which ends copies still blocked on a pipe some escaped process holds.
func drain(wg *sync.WaitGroup, d time.Duration, sources ...*os.File) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	closeAll(sources...)
	<-done
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
