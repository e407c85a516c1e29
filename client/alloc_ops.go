package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// Errors of the operator requests on one allocation (exec, restart,
// signal). The agent maps them to 404 and 409.
var (
	// ErrUnknownTask: the allocation has no task of that name.
	ErrUnknownTask = errors.New("no such task in the allocation")
	// ErrTaskNotRunning: the task exists but does not run now.
	ErrTaskNotRunning = errors.New("task is not running")
	// ErrExecUnsupported: the task's driver cannot run commands in it.
	ErrExecUnsupported = errors.New("the task's driver does not support exec")
)

// ExecOptions is a command an operator runs inside a running task
// (Client.ExecTask): see driver.ExecRequest for the streams' contract.
type ExecOptions struct {
	Task    string
	Command []string
	TTY     bool
	Size    state.TerminalSize
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Resize  <-chan state.TerminalSize
}

// taskRunner finds the runner of task in allocation allocID.
func (c *Client) taskRunner(allocID, task string) (*allocRunner, *taskRunner, error) {
	ar, err := c.runner(allocID)
	if err != nil {
		return nil, nil, err
	}
	for _, tr := range ar.tasks {
		if tr.name == task {
			return ar, tr, nil
		}
	}
	return nil, nil, fmt.Errorf("%w: %q in allocation %s", ErrUnknownTask, task, allocID)
}

// running reports whether the task runs now.
func (tr *taskRunner) running() bool {
	return tr.taskState() == state.TaskStateRunning && !tr.killRequested()
}

// ExecTask runs a command inside a running task of allocation allocID,
// with the task's environment, working directory and user, and returns
// its exit code. Ending ctx kills the command and everything it started.
func (c *Client) ExecTask(ctx context.Context, allocID string, opts *ExecOptions) (int, error) {
	ar, tr, err := c.taskRunner(allocID, opts.Task)
	if err != nil {
		return 0, err
	}
	if !tr.running() {
		return 0, fmt.Errorf("%w: task %q of allocation %s", ErrTaskNotRunning, opts.Task, allocID)
	}
	ex, ok := tr.drv.(driver.Execer)
	if !ok {
		return 0, fmt.Errorf("%w (%s)", ErrExecUnsupported, tr.drv.Name())
	}
	tr.mu.Lock()
	env := maps.Clone(tr.env)
	user := tr.task.User
	tr.mu.Unlock()
	code, err := ex.ExecTask(ctx, &driver.ExecRequest{
		TaskID: tr.id, Command: opts.Command, Env: env, Dir: ar.dir.TaskDir(opts.Task), User: user,
		TTY: opts.TTY, Size: opts.Size, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
		Resize: opts.Resize, WorkloadUID: ar.workloadUID(),
	})
	if errors.Is(err, driver.ErrTaskNotFound) {
		return 0, fmt.Errorf("%w: task %q of allocation %s", ErrTaskNotRunning, opts.Task, allocID)
	}
	return code, err
}

// RestartAlloc restarts task of allocation allocID, or, when task is
// empty, its running tasks (every task when all is set: a task that ended
// is not started again by this client, so all restarts the running ones
// too). A restart is the operator's: it does not count against the
// restart policy.
func (c *Client) RestartAlloc(ctx context.Context, allocID, task string, all bool) error {
	ar, err := c.runner(allocID)
	if err != nil {
		return err
	}
	if task != "" {
		_, tr, err := c.taskRunner(allocID, task)
		if err != nil {
			return err
		}
		if !tr.running() {
			return fmt.Errorf("%w: task %q of allocation %s", ErrTaskNotRunning, task, allocID)
		}
		return tr.Restart(ctx, "User requested restart")
	}
	n := 0
	for _, tr := range ar.tasks {
		if tr.running() {
			n++
			_ = tr.Restart(ctx, "User requested restart")
		}
	}
	if n == 0 {
		return fmt.Errorf("%w: allocation %s has no running task", ErrTaskNotRunning, allocID)
	}
	return nil
}

// SignalAlloc sends sig (empty: SIGKILL, as Nomad) to task of allocation
// allocID, or to every running task when task is empty.
func (c *Client) SignalAlloc(allocID, task, sig string) error {
	if sig == "" {
		sig = "SIGKILL"
	}
	if _, err := driver.ParseSignal(sig); err != nil {
		return fmt.Errorf("%w: %v", state.ErrInvalid, err)
	}
	ar, err := c.runner(allocID)
	if err != nil {
		return err
	}
	var targets []*taskRunner
	if task != "" {
		_, tr, err := c.taskRunner(allocID, task)
		if err != nil {
			return err
		}
		if !tr.running() {
			return fmt.Errorf("%w: task %q of allocation %s", ErrTaskNotRunning, task, allocID)
		}
		targets = append(targets, tr)
	} else {
		for _, tr := range ar.tasks {
			if tr.running() {
				targets = append(targets, tr)
			}
		}
		if len(targets) == 0 {
			return fmt.Errorf("%w: allocation %s has no running task", ErrTaskNotRunning, allocID)
		}
	}
	for _, tr := range targets {
		tr.emit(eventSignaling(c.now(), sig, "User requested signal"))
		if err := tr.drv.SignalTask(tr.id, sig); err != nil {
			return fmt.Errorf("signal task %q: %w", tr.name, err)
		}
	}
	return nil
}
