package services

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schedhq/sched/state"
)

// Check defaults, for checks that leave them out (validation requires an
// interval for every check type the client runs, so they seldom apply).
const (
	defaultCheckInterval = 10 * time.Second
	defaultCheckTimeout  = 5 * time.Second
	// maxCheckOutput bounds what a check keeps of a script's output or an
	// HTTP body.
	maxCheckOutput = 4 << 10
)

// checkRunner runs one check on its interval in a goroutine of its own,
// from start until stop. It owns that goroutine.
type checkRunner struct {
	check   *state.ServiceCheck
	allocID string
	task    string
	service string
	// addr and port are where http and tcp checks connect.
	addr string
	port int
	// portErr is set when the check's own port label cannot be resolved:
	// the check then reports critical with it.
	portErr error
	env     map[string]string
	dir     string

	// mu guards res and the goroutine's handles.
	mu  sync.Mutex
	res CheckResult
	// stopped is set by stop: a runner stopped before it started (the
	// Manager closed meanwhile) never starts.
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// newCheckRunner prepares c, a check of service s (whose entry is reg).
func (m *Manager) newCheckRunner(alloc *state.Allocation, task string, s *state.Service, c *state.ServiceCheck, reg *state.ServiceRegistration, env map[string]string, dir string) *checkRunner {
	allocID := alloc.ID
	r := &checkRunner{
		check: c, allocID: allocID, task: task, service: reg.ServiceName,
		addr: reg.Address, port: reg.Port, env: env, dir: dir,
	}
	if c.PortLabel != "" && c.PortLabel != s.PortLabel {
		// The check probes a port of its own.
		r.addr, r.port, r.portErr = m.addressOf(alloc, task, c.PortLabel, env)
	}
	status := StatusPending
	switch c.InitialStatus {
	case StatusPassing, StatusWarning, StatusCritical:
		status = c.InitialStatus
	}
	r.res = CheckResult{
		AllocID: allocID, Task: task, Service: reg.ServiceName,
		Check: checkName(c, reg.ServiceName), CheckType: c.Type, Status: status,
	}
	return r
}

// checkName is a check's name, or the name Nomad gives an unnamed one.
func checkName(c *state.ServiceCheck, service string) string {
	if c.Name != "" {
		return c.Name
	}
	return "service: \"" + service + "\" check"
}

// start launches the check's goroutine: the first run is immediate, the
// next ones every Interval.
func (r *checkRunner) start(m *Manager) {
	ctx, cancel := context.WithCancel(m.ctx)
	done := make(chan struct{})
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		cancel()
		return
	}
	r.cancel, r.done = cancel, done
	r.mu.Unlock()
	interval := r.check.Interval
	if interval <= 0 {
		interval = defaultCheckInterval
	}
	go func() {
		defer close(done)
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			status, output := r.run(ctx)
			if ctx.Err() != nil {
				return // stopped mid-run: the result means nothing
			}
			if res, changed := r.record(status, output, time.Now()); changed {
				m.checkChanged(res)
			}
			t.Reset(interval)
		}
	}()
}

// stop ends the check's goroutine and waits for it (a running script is
// killed). It may be called before start, and more than once.
func (r *checkRunner) stop() {
	r.mu.Lock()
	r.stopped = true
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return // never started, and now never will
	}
	cancel()
	<-done
}

// record stores a result and reports whether the status or output
// changed.
func (r *checkRunner) record(status, output string, now time.Time) (CheckResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := r.res.Time.IsZero() || r.res.Status != status || r.res.Output != output
	r.res.Status, r.res.Output, r.res.Time = status, output, now
	return r.res, changed
}

// result returns the latest result.
func (r *checkRunner) result() CheckResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res
}

// run runs the check once within its timeout.
func (r *checkRunner) run(ctx context.Context) (status, output string) {
	timeout := r.check.Timeout
	if timeout <= 0 {
		timeout = defaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if r.portErr != nil {
		return StatusCritical, r.portErr.Error()
	}
	switch r.check.Type {
	case state.ServiceCheckHTTP:
		return HTTPCheck(ctx, r.check, r.addr, r.port)
	case state.ServiceCheckTCP:
		return TCPCheck(ctx, r.addr, r.port)
	case state.ServiceCheckScript:
		return ScriptCheck(ctx, r.check, r.env, r.dir)
	}
	return StatusCritical, fmt.Sprintf("check type %q is not run by this client", r.check.Type)
}

// HTTPCheck requests c.Path (with c.Method, GET by default, and c.Header)
// from addr:port over c.Protocol (http by default; https does not verify
// the certificate, as checks of self-signed services must pass). A 2xx
// answer passes, 429 warns, anything else (or no answer) is critical. ctx
// bounds the request.
func HTTPCheck(ctx context.Context, c *state.ServiceCheck, addr string, port int) (status, output string) {
	scheme := c.Protocol
	if scheme == "" {
		scheme = "http"
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	target := scheme + "://" + net.JoinHostPort(addr, strconv.Itoa(port)) + path
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return StatusCritical, err.Error()
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:             nil,
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // see the doc comment
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return StatusCritical, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxCheckOutput))
	out := fmt.Sprintf("HTTP %s %s: %s", method, target, resp.Status)
	if b := strings.TrimSpace(string(body)); b != "" {
		out += " Output: " + b
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return StatusPassing, out
	case resp.StatusCode == http.StatusTooManyRequests:
		return StatusWarning, out
	}
	return StatusCritical, out
}

// TCPCheck passes when a TCP connection to addr:port opens before ctx
// ends.
func TCPCheck(ctx context.Context, addr string, port int) (status, output string) {
	target := net.JoinHostPort(addr, strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return StatusCritical, err.Error()
	}
	conn.Close()
	return StatusPassing, "TCP connect " + target + ": Success"
}

// ScriptCheck runs c.Command with c.Args in dir with exactly env (the
// task's environment), in a process group of its own that is killed when
// ctx ends. Exit 0 passes, exit 1 warns, any other exit, a timeout or a
// command that cannot start is critical. The output is the combined
// stdout and stderr, bounded.
func ScriptCheck(ctx context.Context, c *state.ServiceCheck, env map[string]string, dir string) (status, output string) {
	if c.Command == "" {
		return StatusCritical, "script check has no command"
	}
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Dir = dir
	cmd.Env = make([]string, 0, len(env)+1)
	hasPath := false
	for _, k := range sortedKeys(env) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
		hasPath = hasPath || k == "PATH"
	}
	if !hasPath {
		cmd.Env = append(cmd.Env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
	}
	out := &boundedBuffer{max: maxCheckOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return StatusCritical, err.Error()
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		// The whole group: a shell's children must not outlive the check.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		return StatusCritical, "script check timed out: " + strings.TrimSpace(out.String())
	}
	text := strings.TrimSpace(out.String())
	var ee *exec.ExitError
	switch {
	case err == nil:
		return StatusPassing, text
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return StatusWarning, text
	case errors.As(err, &ee):
		if text == "" {
			text = err.Error()
		}
		return StatusCritical, text
	}
	return StatusCritical, err.Error()
}

// boundedBuffer keeps the first max bytes written to it and drops the
// rest, so a chatty script cannot grow the client's memory.
type boundedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
