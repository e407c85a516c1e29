package services

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func TestHTTPCheck(t *testing.T) {
	var code atomic.Int32
	var gotMethod, gotHeader atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotMethod.Store(r.Method)
		gotHeader.Store(r.Header.Get("X-Probe"))
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(code.Load()))
		w.Write([]byte("body text"))
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	check := &state.ServiceCheck{Type: "http", Path: "ready", Method: "POST", Header: map[string][]string{"X-Probe": {"yes"}}}
	ctx := context.Background()
	for _, c := range []struct {
		code int32
		want string
	}{{200, StatusPassing}, {204, StatusPassing}, {429, StatusWarning}, {500, StatusCritical}, {301, StatusCritical}, {404, StatusCritical}} {
		code.Store(c.code)
		status, out := HTTPCheck(ctx, check, host, port)
		if status != c.want {
			t.Errorf("HTTP %d: %s (%s), want %s", c.code, status, out, c.want)
		}
		if !strings.Contains(out, strconv.Itoa(int(c.code))) {
			t.Errorf("HTTP %d: output %q does not say the status", c.code, out)
		}
	}
	if gotMethod.Load() != "POST" || gotHeader.Load() != "yes" {
		t.Errorf("request method %v header %v", gotMethod.Load(), gotHeader.Load())
	}
	code.Store(200)
	if status, _ := HTTPCheck(ctx, &state.ServiceCheck{Path: "/ready"}, host, port); status != StatusPassing || gotMethod.Load() != "GET" {
		t.Errorf("default method: %s %v", status, gotMethod.Load())
	}

	// Nothing listening, and a server slower than the timeout.
	srv.Close()
	if status, out := HTTPCheck(ctx, check, host, port); status != StatusCritical || out == "" {
		t.Errorf("closed server: %s %q", status, out)
	}
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer slow.Close()
	defer close(release)
	host, port = hostPort(t, slow.Listener.Addr().String())
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if status, out := HTTPCheck(tctx, &state.ServiceCheck{Path: "/"}, host, port); status != StatusCritical || !strings.Contains(out, "deadline") {
		t.Errorf("slow server: %s %q", status, out)
	}
}

func TestTCPCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port := hostPort(t, ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if status, out := TCPCheck(ctx, host, port); status != StatusPassing {
		t.Errorf("open port: %s %q", status, out)
	}
	ln.Close()
	if status, out := TCPCheck(ctx, host, port); status != StatusCritical || !strings.Contains(out, "refused") {
		t.Errorf("closed port: %s %q", status, out)
	}
}

func TestScriptCheck(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"GREETING": "hi"}
	ctx := context.Background()
	sh := func(script string) *state.ServiceCheck {
		return &state.ServiceCheck{Type: "script", Command: "/bin/sh", Args: []string{"-c", script}}
	}
	cases := []struct {
		script, status, output string
	}{
		{`echo "$GREETING from $(pwd)"`, StatusPassing, "hi from " + dir},
		{`echo degraded >&2; exit 1`, StatusWarning, "degraded"},
		{`echo broken; exit 2`, StatusCritical, "broken"},
		{`test -z "$HOME"`, StatusPassing, ""}, // exactly the task's env, not the client's
	}
	for _, c := range cases {
		status, out := ScriptCheck(ctx, sh(c.script), env, dir)
		if status != c.status || out != c.output {
			t.Errorf("%s: %s %q, want %s %q", c.script, status, out, c.status, c.output)
		}
	}
	if status, out := ScriptCheck(ctx, &state.ServiceCheck{Command: "/does/not/exist"}, env, dir); status != StatusCritical || out == "" {
		t.Errorf("missing command: %s %q", status, out)
	}
	if status, _ := ScriptCheck(ctx, &state.ServiceCheck{}, env, dir); status != StatusCritical {
		t.Errorf("no command: %s", status)
	}

	// A script that outlives its timeout is killed with its children.
	pidFile := filepath.Join(dir, "child.pid")
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	status, out := ScriptCheck(tctx, sh(`sleep 30 & echo $! > child.pid; wait`), env, dir)
	if status != StatusCritical || !strings.Contains(out, "timed out") || time.Since(start) > 10*time.Second {
		t.Errorf("timeout: %s %q after %v", status, out, time.Since(start))
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	testutil.WaitFor(t, 5*time.Second, "the script's child to die", func() bool {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		// Killed but not reaped yet (its parent died too): a zombie.
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(stat), ") Z ")
	})

	// Output is bounded.
	_, out = ScriptCheck(ctx, sh(`head -c 100000 /dev/zero | tr '\0' x`), env, dir)
	if len(out) != maxCheckOutput {
		t.Errorf("output of %d bytes kept, want %d", len(out), maxCheckOutput)
	}
}

// A check whose own port label names another port of the allocation
// probes that port; an unknown label makes it critical.
func TestCheckPortLabel(t *testing.T) {
	_, c := newFakeCatalog(t)
	m := newTestManager(t, c, nil)
	alloc := testAllocation()
	svc := &state.Service{Name: "web", PortLabel: "http", Checks: []*state.ServiceCheck{
		{Name: "admin", Type: "tcp", PortLabel: "admin"},
		{Name: "bad", Type: "tcp", PortLabel: "nope"},
	}}
	regs, err := m.Entries(alloc, "server", []*state.Service{svc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	admin := m.newCheckRunner(alloc, "server", svc, svc.Checks[0], regs[0], nil, "")
	if admin.addr != "10.1.1.2" || admin.port != 25001 || admin.portErr != nil {
		t.Errorf("admin check probes %s:%d (%v)", admin.addr, admin.port, admin.portErr)
	}
	bad := m.newCheckRunner(alloc, "server", svc, svc.Checks[1], regs[0], nil, "")
	if status, out := bad.run(context.Background()); status != StatusCritical || !strings.Contains(out, `"nope"`) {
		t.Errorf("bad label check: %s %q", status, out)
	}
	if r := bad.result(); r.Status != StatusPending {
		t.Errorf("status before the first run %q", r.Status)
	}
}
