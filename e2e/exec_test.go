//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	nomad "github.com/hashicorp/nomad/api"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// execWorld is three servers and a client agent with raw_exec on, running
// one allocation of job "shell" (a raw_exec task with an action), and a
// Go client of a follower.
type execWorld struct {
	follower *api.Client
	allocID  string
}

func newExecWorld(t *testing.T) *execWorld {
	t.Helper()
	c := newLoopCluster(t, 3, "")
	c.startAll()
	leader := c.leader(20 * time.Second)
	startClientAgentWith(t, c, `raw_exec {
    enabled      = true
    default_user = ""
    denied_users = []
  }
  users { dynamic = false } # the task runs as the test's user: it writes into t.TempDir`)
	follower := c.others(leader)[0].client()
	cmd := taskThatCleansUp(t)
	job := &state.Job{
		ID: "shell", Type: state.JobTypeService,
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: 1,
			Tasks: []*state.Task{{
				Name: "t", Driver: "raw_exec", Env: map[string]string{"GREETING": "hello from the task"},
				Config:    map[string]any{"command": "/bin/sh", "args": []any{"-c", cmd}},
				Resources: &state.Resources{CPU: 50, MemoryMB: 32},
				Actions: []*state.Action{
					{Name: "greet", Command: "/bin/sh", Args: []string{"-c", `echo "$GREETING"`}},
					{Name: "fail", Command: "/bin/sh", Args: []string{"-c", "exit 7"}},
				},
			}},
		}},
	}
	if _, _, err := leader.client().Jobs().Register(context.Background(), job, nil, nil); err != nil {
		t.Fatal(err)
	}
	w := &execWorld{follower: follower}
	testutil.WaitForErr(t, 60*time.Second, "the allocation to run on the client", func() error {
		ids, err := clusterRunningAllocs(follower, "shell")
		if err != nil {
			return err
		}
		if len(ids) != 1 {
			return fmt.Errorf("%d running", len(ids))
		}
		w.allocID = ids[0]
		return nil
	})
	return w
}

// taskThatCleansUp returns a shell script for a long-running raw_exec
// task that records its pid, and kills that process when the test ends:
// the client agent is SIGKILLed, and its tasks are meant to survive that.
func taskThatCleansUp(t *testing.T) string {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "task.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return "echo $$ > " + pidFile + "; exec sleep 3600"
}

// exec runs command in the task through the follower.
func (w *execWorld) exec(ctx context.Context, tty bool, stdin io.Reader, stdout io.Writer, command ...string) (int, error) {
	return w.follower.Allocations().Exec(ctx, w.allocID, &api.ExecOptions{Task: "t", Command: command, TTY: tty,
		ExecStreams: api.ExecStreams{Stdin: stdin, Stdout: stdout, Stderr: stdout}}, nil)
}

// syncWriter collects output for a test that polls it.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// processGone reports whether pid no longer runs (absent, or a zombie
// nobody reaps).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	return isZombie(b)
}

// TestExecThroughFollower: exec into a real raw_exec task through a
// follower, which relays the session to the client agent: stdin comes
// back, exit codes propagate, a TTY is a terminal, closing the socket kills
// the process, and actions list and run through the Go client.
func TestExecThroughFollower(t *testing.T) {
	w := newExecWorld(t)
	ctx := context.Background()

	var out syncWriter
	code, err := w.exec(ctx, false, strings.NewReader("echo me\nand me\n"), &out, "cat")
	if err != nil || code != 0 || out.String() != "echo me\nand me\n" {
		t.Errorf("cat: %q, exit %d, %v", out.String(), code, err)
	}
	out = syncWriter{}
	code, err = w.exec(ctx, false, strings.NewReader(""), &out, "/bin/sh", "-c", `echo "$GREETING in $(basename "$PWD")"; exit 3`)
	if err != nil || code != 3 || out.String() != "hello from the task in t\n" {
		t.Errorf("exit 3: %q, exit %d, %v", out.String(), code, err)
	}
	out = syncWriter{}
	code, err = w.exec(ctx, true, strings.NewReader(""), &out, "/bin/sh", "-c", `if test -t 0 && test -t 1; then echo terminal; else echo none; fi`)
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != "terminal" {
		t.Errorf("tty: %q, exit %d, %v", out.String(), code, err)
	}

	// Closing the socket kills the command and what it started.
	out = syncWriter{}
	sctx, cancel := context.WithCancel(ctx)
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	done := make(chan error, 1)
	go func() {
		_, err := w.exec(sctx, false, stdinR, &out, "/bin/sh", "-c", `sleep 3600 & echo "$$ $!"; wait`)
		done <- err
	}()
	var pids []int
	testutil.WaitForErr(t, 20*time.Second, "the session's pids", func() error {
		f := strings.Fields(out.String())
		if len(f) != 2 {
			return fmt.Errorf("output %q", out.String())
		}
		pids = nil
		for _, s := range f {
			n, _ := strconv.Atoi(s)
			pids = append(pids, n)
		}
		return nil
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled session: %v", err)
	}
	testutil.WaitForErr(t, 20*time.Second, "the session's processes to be gone", func() error {
		for _, pid := range pids {
			if !processGone(pid) {
				return fmt.Errorf("pid %d still runs", pid)
			}
		}
		return nil
	})

	// Actions through the Go client, via the follower.
	acts, _, err := w.follower.Jobs().Actions(ctx, "shell", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range acts {
		names = append(names, a.TaskGroupName+"/"+a.TaskName+"/"+a.Name)
	}
	if !slices.Equal(names, []string{"g/t/greet", "g/t/fail"}) {
		t.Errorf("actions %v", names)
	}
	out = syncWriter{}
	code, err = w.follower.Jobs().RunAction(ctx, "shell", &api.ActionOptions{AllocID: w.allocID, Task: "t", Action: "greet",
		ExecStreams: api.ExecStreams{Stdout: &out}}, nil)
	if err != nil || code != 0 || out.String() != "hello from the task\n" {
		t.Errorf("greet: %q, exit %d, %v", out.String(), code, err)
	}
	code, err = w.follower.Jobs().RunAction(ctx, "shell", &api.ActionOptions{AllocID: w.allocID, Task: "t", Action: "fail"}, nil)
	if err != nil || code != 7 {
		t.Errorf("fail: exit %d, %v", code, err)
	}

	// The file system of the allocation, through the follower.
	list, err := w.follower.AllocFS().List(ctx, w.allocID, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, f := range list {
		entries = append(entries, f.Name)
	}
	if !slices.Contains(entries, "alloc") || !slices.Contains(entries, "t") {
		t.Errorf("ls /: %v", entries)
	}
	if _, err := w.follower.AllocFS().Stat(ctx, w.allocID, "../../..", nil); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("an escape through the follower: %v", err)
	}
}

// TestMeasureExec measures, through a follower relaying to the client
// agent: the round trip of one byte (sent as stdin of `cat`, until it comes
// back as stdout) and the throughput of `cat` of a 100 MiB file.
func TestMeasureExec(t *testing.T) {
	if os.Getenv("SCHED_MEASURE") == "" {
		t.Skip("a measurement: run with SCHED_MEASURE=1 (make bench-cluster)")
	}
	w := newExecWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Round trip: one session, 2000 keystrokes.
	stdinR, stdinW := io.Pipe()
	echoed := make(chan struct{}, 1)
	var seen int
	var mu sync.Mutex
	out := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		seen += len(p)
		mu.Unlock()
		echoed <- struct{}{}
		return len(p), nil
	})
	go func() { _, _ = w.exec(ctx, false, stdinR, out, "cat") }()
	const n = 2000
	lat := make([]time.Duration, 0, n)
	for i := range n + 50 {
		t0 := time.Now()
		if _, err := stdinW.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-echoed:
		case <-time.After(10 * time.Second):
			t.Fatal("no echo within 10s")
		}
		if i >= 50 { // warm-up
			lat = append(lat, time.Since(t0))
		}
	}
	stdinW.Close()
	slices.Sort(lat)
	t.Logf("exec round trip through a follower (%d keystrokes): p50 %v, p99 %v, max %v",
		len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])

	// Throughput: cat of a 100 MiB file.
	const size = 100 << 20
	if code, err := w.exec(ctx, false, strings.NewReader(""), io.Discard, "/bin/sh", "-c", "head -c "+strconv.Itoa(size)+" /dev/urandom > big"); err != nil || code != 0 {
		t.Fatalf("make the file: %d %v", code, err)
	}
	var got int64
	count := writerFunc(func(p []byte) (int, error) { got += int64(len(p)); return len(p), nil })
	t0 := time.Now()
	code, err := w.exec(ctx, false, strings.NewReader(""), count, "cat", "big")
	d := time.Since(t0)
	if err != nil || code != 0 || got != size {
		t.Fatalf("cat: %d bytes, exit %d, %v", got, code, err)
	}
	t.Logf("exec cat of 100 MiB through a follower: %v, %.1f MiB/s", d.Round(time.Millisecond), float64(size)/(1<<20)/d.Seconds())
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestNomadGoClientExec: Nomad's own Go client runs a command in a
// raw_exec task of a dev agent (its exec stream, handshake frame and
// all) and gets the output and exit code, and runs a job action.
func TestNomadGoClientExec(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	cfg := nomad.DefaultConfig()
	cfg.Address = nomadProxy(t, a.addr())
	c, err := nomad.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := nomad.NewServiceJob("nomadexec", "nomadexec", "global", 50)
	job.Datacenters = []string{"*"}
	tg := nomad.NewTaskGroup("g", 1)
	task := nomad.NewTask("t", "raw_exec")
	task.Config = map[string]any{"command": "/bin/sh", "args": []string{"-c", taskThatCleansUp(t)}}
	task.Resources = &nomad.Resources{CPU: ptr(10), MemoryMB: ptr(10)}
	task.Actions = []*nomad.Action{{Name: "hi", Command: "/bin/echo", Args: []string{"hi"}}}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("Register: %v", err)
	}
	// Exec needs the allocation's ID and node, read here with this
	// project's client (Nomad's cannot decode these servers'
	// AllocatedResources yet).
	var alloc *nomad.Allocation
	testutil.WaitForErr(t, 30*time.Second, "a running allocation", func() error {
		allocs, _, err := a.client().Jobs().Allocations(context.Background(), "nomadexec", false, nil)
		if err != nil {
			return err
		}
		for _, s := range allocs {
			if s.ClientStatus == state.AllocClientStatusRunning {
				alloc = &nomad.Allocation{ID: s.ID, NodeID: s.NodeID, Namespace: s.Namespace}
				return nil
			}
		}
		return fmt.Errorf("%d allocations, none running", len(allocs))
	})
	var out, errOut syncWriter
	code, err := c.Allocations().Exec(context.Background(), alloc, "t", false,
		[]string{"/bin/sh", "-c", "cat; echo to-stderr >&2; exit 4"}, strings.NewReader("from nomad\n"), &out, &errOut, nil, nil)
	if err != nil || code != 4 || out.String() != "from nomad\n" || errOut.String() != "to-stderr\n" {
		t.Errorf("Nomad Exec: %q %q, exit %d, %v", out.String(), errOut.String(), code, err)
	}
	out = syncWriter{}
	code, err = c.Jobs().ActionExec(context.Background(), alloc, "nomadexec", "t", false, nil, "hi",
		strings.NewReader(""), &out, &errOut, nil, nil)
	if err != nil || code != 0 || out.String() != "hi\n" {
		t.Errorf("Nomad ActionExec: %q, exit %d, %v", out.String(), code, err)
	}
}
