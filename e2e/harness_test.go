package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
)

// schedBin is the sched binary built for this test run.
var schedBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sched-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	schedBin = filepath.Join(dir, "sched")
	build := exec.Command("go", "build", "-o", schedBin, "github.com/schedhq/sched/cmd/sched")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sched:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// handedOut are the ports freePort (and freeTCPUDPPort) gave this test
// process: a port closed after the kernel picked it may be picked again
// for the next caller, and two servers of one cluster then fight over it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// claimPort records port as handed out; false when it already was.
func claimPort(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	handedOut.ports[port] = true
	return true
}

// freePort returns a TCP port that was free a moment ago on 127.0.0.1
// and that no other caller in this process was given.
func freePort(t *testing.T) int {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if claimPort(port) {
			return port
		}
	}
}

// agent is one sched agent process.
type agent struct {
	t        *testing.T
	dataDir  string
	config   string
	httpPort int
	cmd      *exec.Cmd
	out      *testutil.SyncBuffer
	done     chan struct{}
}

// newServer writes a single-server config with its own data dir and ports.
func newServer(t *testing.T) *agent {
	t.Helper()
	dir := t.TempDir()
	a := &agent{t: t, dataDir: filepath.Join(dir, "data"), httpPort: freePort(t)}
	a.config = filepath.Join(dir, "server.hcl")
	cfg := fmt.Sprintf(`
name      = "e2e-server"
data_dir  = %q
bind_addr = "127.0.0.1"
log_level = "warn"
ports {
  http   = %d
  raft   = %d
  gossip = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
}
`, a.dataDir, a.httpPort, freePort(t), freePort(t))
	if err := os.WriteFile(a.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// start runs the agent and waits until it serves a consistent read.
func (a *agent) start() {
	a.t.Helper()
	a.run("agent to serve a consistent read", func(c *api.Client) error {
		_, _, err := c.Jobs().List(context.Background(), nil)
		return err
	}, "agent", "-config", a.config)
}

// run starts the sched binary with args and waits until ready passes,
// failing the test at once if the process exits first.
func (a *agent) run(what string, ready func(*api.Client) error, args ...string) {
	a.t.Helper()
	a.out = &testutil.SyncBuffer{}
	a.cmd = exec.Command(schedBin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	if err := a.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	a.done = make(chan struct{})
	go func() { a.cmd.Wait(); close(a.done) }()
	a.t.Cleanup(a.killTasks) // runs after a.kill: cleanups run last first
	a.t.Cleanup(a.kill)

	c := a.client()
	testutil.WaitForErr(a.t, 30*time.Second, what, func() error {
		select {
		case <-a.done:
			a.t.Fatalf("agent exited during start:\n%s", a.out.String())
		default:
		}
		return ready(c)
	})
}

// kill sends SIGKILL and waits for the process to go.
func (a *agent) kill() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	select {
	case <-a.done:
		return
	default:
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
}

// killTasks kills what the agent's tasks left running: raw_exec tasks
// outlive an agent that is killed or stopped (a restarted client
// re-attaches to them), so a test that ends with its jobs running would
// leave them behind. A task is any process whose working directory is
// under the agent's data dir.
func (a *agent) killTasks() {
	if a.dataDir == "" {
		return
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		if cwd == a.dataDir || strings.HasPrefix(cwd, a.dataDir+string(filepath.Separator)) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (a *agent) stop() error {
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("agent did not exit within 30s of SIGTERM")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("agent exited %d:\n%s", code, a.out.String())
	}
	return nil
}

func (a *agent) addr() string { return fmt.Sprintf("http://127.0.0.1:%d", a.httpPort) }

func (a *agent) client() *api.Client {
	c, err := api.NewClient(api.Config{Address: a.addr()})
	if err != nil {
		a.t.Fatal(err)
	}
	return c
}
