package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// lockedBuffer is a bytes.Buffer safe for the driver's copy goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runningTask starts a raw_exec service task with env FOO=bar and waits
// until it runs.
func runningTask(t *testing.T) (*Client, *state.Allocation) {
	t.Helper()
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	task := sh("web", "exec sleep 300")
	task.Env = map[string]string{"FOO": "bar"}
	j := job(state.JobTypeService, task)
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	return c, a
}

func TestExecTaskInTheTaskEnvironment(t *testing.T) {
	c, a := runningTask(t)
	ctx := context.Background()
	var out, errb lockedBuffer
	code, err := c.ExecTask(ctx, a.ID, &ExecOptions{Task: "web",
		Command: []string{"/bin/sh", "-c", `echo "$FOO $(pwd)"; read line; echo "got $line"; echo err >&2; exit 3`},
		Stdin:   strings.NewReader("typed\n"), Stdout: &out, Stderr: &errb})
	if err != nil || code != 3 {
		t.Fatalf("exec: %d, %v", code, err)
	}
	dir, _ := filepath.EvalSymlinks(allocPathOf(c, a.ID, "web"))
	if want := "bar " + dir + "\ngot typed\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if errb.String() != "err\n" {
		t.Errorf("stderr %q", errb.String())
	}

	// A terminal: the command sees one, of the size asked for.
	out = lockedBuffer{}
	resize := make(chan state.TerminalSize, 1)
	resize <- state.TerminalSize{Height: 33, Width: 99}
	stdinR, stdinW := io.Pipe()
	go func() {
		// The size arrives before the command reads it: wait for the prompt.
		testutil.WaitFor(t, 5*time.Second, "the prompt", func() bool { return strings.Contains(out.String(), "ready") })
		fmt.Fprintln(stdinW, "go")
	}()
	code, err = c.ExecTask(ctx, a.ID, &ExecOptions{Task: "web", TTY: true, Size: state.TerminalSize{Height: 20, Width: 70},
		Command: []string{"/bin/sh", "-c", `test -t 0 && test -t 1 && echo ready; read x; stty size; exit 0`},
		Stdin:   stdinR, Stdout: &out, Resize: resize})
	stdinW.Close()
	if err != nil || code != 0 {
		t.Fatalf("tty exec: %d, %v (%q)", code, err, out.String())
	}
	if !strings.Contains(out.String(), "ready") || !strings.Contains(out.String(), "33 99") {
		t.Errorf("tty output %q: want a terminal resized to 33x99", out.String())
	}

	// Errors: unknown task, missing program.
	if _, err := c.ExecTask(ctx, a.ID, &ExecOptions{Task: "nosuch", Command: []string{"true"}}); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := c.ExecTask(ctx, a.ID, &ExecOptions{Task: "web", Command: []string{"no-such-program-x"}}); err == nil {
		t.Error("a missing program ran")
	}
}

// Ending the context kills the command and what it started; the session
// leaves no process behind.
func TestExecTaskCancelKillsTheGroup(t *testing.T) {
	c, a := runningTask(t)
	pidFile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	go func() {
		_, err := c.ExecTask(ctx, a.ID, &ExecOptions{Task: "web", Stdin: stdinR,
			Command: []string{"/bin/sh", "-c", `sleep 300 & echo $! > ` + pidFile + `.tmp; echo $$ >> ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; wait`}})
		done <- err
	}()
	var pids []int
	testutil.WaitFor(t, 10*time.Second, "the session's processes", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		return len(pids) == 2
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exec: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ExecTask did not return after its context ended")
	}
	// SIGKILL is delivered asynchronously: a killed process may still be
	// listed for a moment after kill(2) returned.
	for _, pid := range pids {
		testutil.WaitFor(t, 5*time.Second, fmt.Sprintf("pid %d to be gone after the session ended", pid),
			func() bool { return !pidAlive(pid) })
	}
}

func TestRestartAndSignalAlloc(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	j := job(state.JobTypeService, sh("web", `trap 'echo hup >> "$SCHED_ALLOC_DIR/sig"' HUP; echo $$ >> "$SCHED_ALLOC_DIR/pids"; while :; do sleep 0.05; done`))
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	pids := allocPathOf(c, a.ID, "alloc", "pids")
	first := waitPID(t, pids)

	if err := c.SignalAlloc(a.ID, "web", "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the trap to record SIGHUP", func() bool {
		return strings.Contains(readFile(t, allocPathOf(c, a.ID, "alloc", "sig")), "hup")
	})
	if err := c.SignalAlloc(a.ID, "web", "SIGNOPE"); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("unknown signal: %v", err)
	}
	if err := c.RestartAlloc(context.Background(), a.ID, "nosuch", false); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("restart of an unknown task: %v", err)
	}
	if err := c.RestartAlloc(context.Background(), a.ID, "web", false); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "a second start", func() bool {
		return strings.Count(readFile(t, pids), "\n") == 2
	})
	testutil.WaitFor(t, 10*time.Second, "the first process to be gone", func() bool { return !pidAlive(first) })
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	if ts := got.TaskStates["web"]; ts.Restarts != 0 || eventOf(ts, "Restarting") == nil {
		t.Errorf("an operator's restart: %s", statusOf(got))
	}
}

// A terminal resized while its command exits: the resizer stops before
// the terminal is closed (under -race a resize racing the close was
// reported as a data race on the terminal's descriptor).
func TestExecTTYResizedWhileItExits(t *testing.T) {
	c, a := runningTask(t)
	for range 5 {
		resize := make(chan state.TerminalSize)
		stop := make(chan struct{})
		flooded := make(chan struct{})
		go func() {
			defer close(flooded)
			for i := 0; ; i++ {
				select {
				case resize <- state.TerminalSize{Height: 20 + i%10, Width: 80}:
				case <-stop:
					return
				}
			}
		}()
		var out lockedBuffer
		code, err := c.ExecTask(context.Background(), a.ID, &ExecOptions{Task: "web", TTY: true,
			Size: state.TerminalSize{Height: 20, Width: 80}, Command: []string{"/bin/sh", "-c", "exit 7"},
			Stdin: strings.NewReader(""), Stdout: &out, Resize: resize})
		close(stop)
		<-flooded
		if err != nil || code != 7 {
			t.Fatalf("tty exec resized while exiting: %d, %v (%q)", code, err, out.String())
		}
	}
}
