package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// The operator's ways into running allocations: exec, stop, restart,
// signal and the allocation file system (docs/exec.md).

const allocExecHelp = `
Run COMMAND inside a running task of the allocation ID (or a unique prefix
of one): with the task's environment, working directory and user. TASK is
-task, or the group's only task. Standard input is sent to the command
(-i=false sends none); with -t the command runs on a terminal and the local
terminal is put in raw mode, its size following the window's. -t defaults
to on when standard input is a terminal.

The exit code is the command's. Closing the session (Ctrl-C without -t)
kills the command and everything it started.`

func (c *allocCLI) allocExec(args []string) int {
	fs, m := c.flagSet("alloc exec", "[options] ALLOC COMMAND [ARGS...]", allocExecHelp)
	interactive := fs.Bool("i", true, "send standard input to the command")
	local, isTerm := localTerminal(c.stdin)
	tty := fs.Bool("t", isTerm, "run the command on a terminal (raw local terminal, window size followed)")
	task := fs.String("task", "", "the task to run in (default: the group's only task)")
	verbose := fs.Bool("verbose", false, "print full IDs when listing ambiguous allocations")
	client, code := c.parseClient(fs, m, args, 2, 1<<16)
	if client == nil {
		return code
	}
	stub, taskName, code := c.allocTask(client, m, fs.Arg(0), *task, *verbose)
	if code != 0 {
		return code
	}
	streams := api.ExecStreams{Stdout: c.stdout, Stderr: c.stderr}
	if *interactive {
		streams.Stdin = c.stdin
	} else {
		streams.Stdin = strings.NewReader("")
	}
	opts := &api.ExecOptions{Task: taskName, Command: fs.Args()[1:], TTY: *tty}
	if *tty && local != nil {
		restore, size, resize, err := rawTerminal(c.ctx, local)
		if err != nil {
			return c.fail("setting up the terminal", err)
		}
		defer restore()
		opts.Size, streams.Resize = size, resize
	}
	opts.ExecStreams = streams
	exit, err := client.Allocations().Exec(c.ctx, stub.ID, opts, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return c.fail("running the command", err)
	}
	return exit
}

// allocTask resolves an allocation and the task to address in it: the
// named one, or the group's only task.
func (c *allocCLI) allocTask(client *api.Client, m *meta, id, task string, verbose bool) (*state.AllocListStub, string, int) {
	stub, err := c.resolveAlloc(client, m, id, verbose)
	if err != nil {
		return nil, "", 1
	}
	if task != "" {
		return stub, task, 0
	}
	a, _, err := client.Allocations().Info(c.ctx, stub.ID, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return nil, "", c.fail("querying allocation", err)
	}
	tasks := groupTasks(a)
	if len(tasks) != 1 {
		fmt.Fprintf(c.stderr, "Allocation %q has %d tasks (%s): name one with -task\n", shortID(stub.ID, verbose), len(tasks), strings.Join(tasks, ", "))
		return nil, "", 1
	}
	return stub, tasks[0], 0
}

// localTerminal returns in as a file when it is a terminal.
func localTerminal(in io.Reader) (*os.File, bool) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	return f, true
}

// rawTerminal puts f in raw mode and follows its window size (SIGWINCH)
// until ctx ends or restore is called.
func rawTerminal(ctx context.Context, f *os.File) (restore func(), size state.TerminalSize, resize <-chan state.TerminalSize, err error) {
	fd := int(f.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, size, nil, err
	}
	if w, h, err := term.GetSize(fd); err == nil {
		size = state.TerminalSize{Height: h, Width: w}
	}
	ch := make(chan state.TerminalSize, 1)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				if w, h, err := term.GetSize(fd); err == nil {
					select {
					case <-ch: // only the latest size matters
					default:
					}
					ch <- state.TerminalSize{Height: h, Width: w}
				}
			}
		}
	}()
	return func() {
		cancel()
		signal.Stop(winch)
		_ = term.Restore(fd, old)
	}, size, ch, nil
}

const allocStopHelp = `
Stop the allocation ID (or a unique prefix of one). The servers mark it to
migrate and evaluate its job, which stops it and places a replacement, as
a node drain would. Prints the evaluation's ID.`

func (c *allocCLI) allocStop(args []string) int {
	fs, m := c.flagSet("alloc stop", "[options] ALLOC", allocStopHelp)
	verbose := fs.Bool("verbose", false, "print full IDs")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, err := c.resolveAlloc(client, m, fs.Arg(0), *verbose)
	if err != nil {
		return 1
	}
	resp, err := client.Allocations().Stop(c.ctx, stub.ID, &api.WriteOptions{Namespace: stub.Namespace})
	if err != nil {
		return c.fail("stopping allocation", err)
	}
	fmt.Fprintf(c.stdout, "==> Allocation %q stop requested: evaluation %q\n", shortID(stub.ID, *verbose), shortID(resp.EvalID, *verbose))
	return 0
}

const allocRestartHelp = `
Restart a task of the allocation ID (or a unique prefix of one): TASK, or
-task, or every running task when none is named (-all-tasks: every task).
The restart is the operator's: it does not count against the task's
restart policy.`

func (c *allocCLI) allocRestart(args []string) int {
	fs, m := c.flagSet("alloc restart", "[options] ALLOC [TASK]", allocRestartHelp)
	task := fs.String("task", "", "the task to restart")
	all := fs.Bool("all-tasks", false, "restart every task, not only the running ones")
	verbose := fs.Bool("verbose", false, "print full IDs")
	if done, code := parseFlags(fs, args, 1, 2); done {
		return code
	}
	name, ok := c.taskArg(fs.Args(), *task)
	if !ok {
		return 1
	}
	if *all && name != "" {
		fmt.Fprintln(c.stderr, "Error: -all-tasks and a task name are exclusive")
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, err := c.resolveAlloc(client, m, fs.Arg(0), *verbose)
	if err != nil {
		return 1
	}
	if err := client.Allocations().Restart(c.ctx, stub.ID, name, *all, &api.WriteOptions{Namespace: stub.Namespace}); err != nil {
		return c.fail("restarting allocation", err)
	}
	fmt.Fprintf(c.stdout, "Restart requested for allocation %q\n", shortID(stub.ID, *verbose))
	return 0
}

const allocSignalHelp = `
Send a signal (-s, default SIGKILL) to a task of the allocation ID (or a
unique prefix of one): TASK, or -task, or every running task.`

func (c *allocCLI) allocSignal(args []string) int {
	fs, m := c.flagSet("alloc signal", "[options] ALLOC [TASK]", allocSignalHelp)
	sig := fs.String("s", "SIGKILL", "the signal, by name (SIGHUP, HUP) or number")
	task := fs.String("task", "", "the task to signal")
	verbose := fs.Bool("verbose", false, "print full IDs")
	if done, code := parseFlags(fs, args, 1, 2); done {
		return code
	}
	name, ok := c.taskArg(fs.Args(), *task)
	if !ok {
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, err := c.resolveAlloc(client, m, fs.Arg(0), *verbose)
	if err != nil {
		return 1
	}
	if err := client.Allocations().Signal(c.ctx, stub.ID, name, *sig, &api.WriteOptions{Namespace: stub.Namespace}); err != nil {
		return c.fail("signalling allocation", err)
	}
	fmt.Fprintf(c.stdout, "Sent %s to allocation %q\n", *sig, shortID(stub.ID, *verbose))
	return 0
}

// taskArg is the task named by -task or the second argument, which must
// agree.
func (c *allocCLI) taskArg(args []string, flagTask string) (string, bool) {
	if len(args) < 2 {
		return flagTask, true
	}
	if flagTask != "" && flagTask != args[1] {
		fmt.Fprintf(c.stderr, "Error: -task %q and the TASK argument %q disagree\n", flagTask, args[1])
		return "", false
	}
	return args[1], true
}

const allocFSHelp = `
Browse the directory of the allocation ID (or a unique prefix of one):
PATH (default "/", the allocation directory itself) is listed when it is a
directory and printed when it is a file. -stat describes PATH instead.
Paths are relative to the allocation directory; one that leaves it (.. or
a symbolic link pointing outside) is refused.`

func (c *allocCLI) allocFS(args []string) int {
	fs, m := c.flagSet("alloc fs", "[options] ALLOC [PATH]", allocFSHelp)
	stat := fs.Bool("stat", false, "describe PATH rather than list or print it")
	verbose := fs.Bool("verbose", false, "print full IDs")
	if done, code := parseFlags(fs, args, 1, 2); done {
		return code
	}
	path := "/"
	if fs.NArg() == 2 {
		path = fs.Arg(1)
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, err := c.resolveAlloc(client, m, fs.Arg(0), *verbose)
	if err != nil {
		return 1
	}
	q := &api.QueryOptions{Namespace: stub.Namespace}
	info, err := client.AllocFS().Stat(c.ctx, stub.ID, path, q)
	if err != nil {
		return c.fail("reading "+path, err)
	}
	rows := func(list []*state.AllocFileInfo) [][]string {
		out := make([][]string, 0, len(list))
		for _, f := range list {
			name := f.Name
			if f.IsDir {
				name += "/"
			}
			out = append(out, []string{f.FileMode, fmt.Sprint(f.Size), c.clock(f.ModTime), name})
		}
		return out
	}
	header := []string{"Mode", "Size", "Modified Time", "Name"}
	switch {
	case *stat:
		writeTable(c.stdout, header, rows([]*state.AllocFileInfo{info}))
	case info.IsDir:
		list, err := client.AllocFS().List(c.ctx, stub.ID, path, q)
		if err != nil {
			return c.fail("listing "+path, err)
		}
		writeTable(c.stdout, header, rows(list))
	default:
		body, err := client.AllocFS().Cat(c.ctx, stub.ID, path, q)
		if err != nil {
			return c.fail("reading "+path, err)
		}
		defer body.Close()
		if _, err := io.Copy(c.stdout, body); err != nil && !errors.Is(err, context.Canceled) {
			return c.fail("reading "+path, err)
		}
	}
	return 0
}
