//go:build e2e

package e2e

import (
	"context"
	"errors"
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

// The multi-server tests run only under `make e2e` (build tag e2e): they
// start real sched processes, kill them, and take a few minutes.

// server is one sched server process of a loopback cluster.
type server struct {
	t       *testing.T
	name    string
	dataDir string
	config  string
	http    int
	raft    int
	gossip  int
	// tls, when set, is the cluster's PKI: the server serves HTTPS (and
	// raft over mutual TLS) and its clients present the CLI certificate.
	tls *clusterPKI
	// mu guards the process of the current run: launch replaces them
	// (a restart) while fault injectors and clients ask alive().
	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *testutil.SyncBuffer
	done chan struct{}
}

// proc returns the current run's process, output and exit channel (nil
// before the first launch).
func (s *server) proc() (*exec.Cmd, *testutil.SyncBuffer, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd, s.out, s.done
}

// loopCluster is n servers on loopback ports, each with its own data dir,
// joined by gossip (retry_join lists every server) and bootstrapped
// together (bootstrap_expect = n).
type loopCluster struct {
	t       *testing.T
	servers []*server
}

// freeTCPUDPPort returns a port free for both TCP and UDP a moment ago, as
// gossip needs both.
func freeTCPUDPPort(t *testing.T) int {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		l.Close()
		if err == nil {
			u.Close()
			if claimPort(port) {
				return port
			}
		}
	}
}

// newLoopCluster writes the configs of n servers; start them with
// startAll. extra is appended inside each server block.
func newLoopCluster(t *testing.T, n int, extra string) *loopCluster {
	t.Helper()
	c := &loopCluster{t: t}
	for i := range n {
		dir := t.TempDir()
		s := &server{
			t:       t,
			name:    fmt.Sprintf("s%d", i+1),
			dataDir: filepath.Join(dir, "data"),
			config:  filepath.Join(dir, "server.hcl"),
			http:    freePort(t),
			raft:    freePort(t),
			gossip:  freeTCPUDPPort(t),
		}
		c.servers = append(c.servers, s)
	}
	var join []string
	for _, s := range c.servers {
		join = append(join, fmt.Sprintf("%q", "127.0.0.1:"+strconv.Itoa(s.gossip)))
	}
	for _, s := range c.servers {
		cfg := fmt.Sprintf(`
name      = %q
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
  bootstrap_expect = %d
  retry_join       = [%s]
  retry_interval   = "500ms"
  %s
}
`, s.name, s.dataDir, s.http, s.raft, s.gossip, n, strings.Join(join, ", "), extra)
		if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// startAll launches every server, then waits until each serves a
// consistent read (a leader exists and each can reach it).
func (c *loopCluster) startAll() {
	c.t.Helper()
	for _, s := range c.servers {
		s.launch()
	}
	for _, s := range c.servers {
		s.waitReady(60 * time.Second)
	}
}

// launch starts the process without waiting for it to serve.
func (s *server) launch() {
	s.t.Helper()
	out := &testutil.SyncBuffer{}
	cmd := exec.Command(schedBin, "agent", "-config", s.config)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.out, s.done = cmd, out, done
	s.mu.Unlock()
	go func() { cmd.Wait(); close(done) }()
	s.t.Cleanup(func() {
		s.kill()
		if s.t.Failed() {
			s.t.Logf("%s output:\n%s", s.name, out.String())
		}
	})
}

// waitReady waits until the server answers a consistent read.
func (s *server) waitReady(d time.Duration) {
	s.t.Helper()
	c := s.client()
	_, out, done := s.proc()
	testutil.WaitForErr(s.t, d, s.name+" to serve a consistent read", func() error {
		select {
		case <-done:
			s.t.Fatalf("%s exited during start:\n%s", s.name, out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, err := c.Jobs().List(ctx, nil)
		return err
	})
}

// alive reports whether the process is running.
func (s *server) alive() bool {
	_, _, done := s.proc()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to go.
func (s *server) kill() {
	if !s.alive() {
		return
	}
	cmd, _, done := s.proc()
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() error {
	if !s.alive() {
		return nil
	}
	cmd, out, done := s.proc()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not exit within 30s of SIGTERM", s.name)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited %d:\n%s", s.name, code, out.String())
	}
	return nil
}

func (s *server) addr() string {
	if s.tls != nil {
		return "https://127.0.0.1:" + strconv.Itoa(s.http)
	}
	return "http://127.0.0.1:" + strconv.Itoa(s.http)
}

func (s *server) raftAddr() string { return "127.0.0.1:" + strconv.Itoa(s.raft) }

func (s *server) client() *api.Client {
	c, err := api.NewClient(api.Config{Address: s.addr(), TLS: s.tls.apiTLS()})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// alive returns the running servers.
func (c *loopCluster) alive() []*server {
	var out []*server
	for _, s := range c.servers {
		if s.alive() {
			out = append(out, s)
		}
	}
	return out
}

// leader waits until every running server names the same leader, one of
// them, and returns it.
func (c *loopCluster) leader(d time.Duration) *server {
	c.t.Helper()
	var leader *server
	testutil.WaitForErr(c.t, d, "an agreed leader", func() error {
		leader = nil
		var seen []string
		for _, s := range c.alive() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			addr, err := s.client().Status().Leader(ctx)
			cancel()
			if err != nil {
				return err
			}
			seen = append(seen, addr)
		}
		for _, s := range c.alive() {
			if len(seen) > 0 && s.raftAddr() == seen[0] {
				leader = s
			}
		}
		for _, a := range seen {
			if leader == nil || a != seen[0] {
				return fmt.Errorf("leaders seen: %v", seen)
			}
		}
		return nil
	})
	return leader
}

// others returns the running servers other than s.
func (c *loopCluster) others(s *server) []*server {
	var out []*server
	for _, o := range c.alive() {
		if o != s {
			out = append(out, o)
		}
	}
	return out
}

// isRetryable reports whether a failed request may be retried elsewhere:
// the server is down, has no leader, or leadership moved mid-request.
func isRetryable(err error) bool {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Code == 503 || se.Code == 502
	}
	return true // connection refused or reset: the server is gone
}
