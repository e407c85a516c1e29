package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// fakeExec is what the fake client records of exec, restart and signal
// calls, and how many simulated commands run now.
type fakeExec struct {
	mu       sync.Mutex
	last     clientapi.ExecRequest
	restarts []string
	signals  []string
	sizes    []state.TerminalSize
	running  atomic.Int32
	killed   atomic.Int32
}

var fakeExecs sync.Map // *fakeClientAPI -> *fakeExec

func (f *fakeClientAPI) exec() *fakeExec {
	v, _ := fakeExecs.LoadOrStore(f, &fakeExec{})
	return v.(*fakeExec)
}

// AllocDir is <dir>/alloc-<id>, made on first use.
func (f *fakeClientAPI) AllocDir(id string) (string, error) {
	if _, err := f.Alloc(id); err != nil {
		return "", err
	}
	d := filepath.Join(f.dir, "allocdir-"+id)
	return d, os.MkdirAll(d, 0o755)
}

// AllocExec simulates a few commands: "echo ARGS" writes its arguments,
// "cat" copies stdin, "exit N" ends with N, "tty" says whether it has a
// terminal and the last size it was given, "err MSG" writes to stderr,
// "sleep" runs until killed. Anything else is a 404 as a missing program.
func (f *fakeClientAPI) AllocExec(ctx context.Context, allocID string, req *clientapi.ExecRequest) (int, error) {
	if _, err := f.Alloc(allocID); err != nil {
		return 0, err
	}
	fe := f.exec()
	fe.mu.Lock()
	fe.last = *req
	fe.mu.Unlock()
	fe.running.Add(1)
	defer fe.running.Add(-1)
	args := req.Command[1:]
	switch req.Command[0] {
	case "echo":
		fmt.Fprintln(req.Stdout, strings.Join(args, " "))
		return 0, nil
	case "cat":
		_, _ = io.Copy(req.Stdout, req.Stdin)
		return 0, nil
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n, nil
	case "err":
		fmt.Fprintln(req.Stderr, strings.Join(args, " "))
		return 1, nil
	case "tty":
		if !req.TTY {
			fmt.Fprintln(req.Stdout, "not a tty")
			return 1, nil
		}
		// Report each size, until stdin ends.
		fmt.Fprintf(req.Stdout, "tty %dx%d\n", req.Size.Height, req.Size.Width)
		go func() { _, _ = io.Copy(io.Discard, req.Stdin) }()
		for {
			select {
			case sz := <-req.Resize:
				fe.mu.Lock()
				fe.sizes = append(fe.sizes, sz)
				fe.mu.Unlock()
				fmt.Fprintf(req.Stdout, "tty %dx%d\n", sz.Height, sz.Width)
			case <-ctx.Done():
				fe.killed.Add(1)
				return 137, nil
			}
		}
	case "sleep":
		go func() { _, _ = io.Copy(io.Discard, req.Stdin) }()
		<-ctx.Done()
		fe.killed.Add(1)
		return 137, nil
	}
	return 0, state.NotFoundf("command %q", req.Command[0])
}

func (f *fakeClientAPI) AllocRestart(_ context.Context, allocID, task string, all bool) error {
	if _, err := f.Alloc(allocID); err != nil {
		return err
	}
	fe := f.exec()
	fe.mu.Lock()
	defer fe.mu.Unlock()
	fe.restarts = append(fe.restarts, fmt.Sprintf("%s/%s/%v", allocID, task, all))
	return nil
}

func (f *fakeClientAPI) AllocSignal(_ context.Context, allocID, task, sig string) error {
	if _, err := f.Alloc(allocID); err != nil {
		return err
	}
	fe := f.exec()
	fe.mu.Lock()
	defer fe.mu.Unlock()
	fe.signals = append(fe.signals, fmt.Sprintf("%s/%s/%s", allocID, task, sig))
	return nil
}

// execServer serves h over a real listener (WebSockets need one).
func execServer(t *testing.T, h *harness) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h.srv.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// wsDial opens target (a path and query) on srv as a WebSocket.
func wsDial(t *testing.T, srv *httptest.Server, target string, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+target, h)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

func execURL(task string, cmd ...string) string {
	b, _ := json.Marshal(cmd)
	return "/v1/client/allocation/" + apitest.AllocID(1) + "/exec?task=" + task + "&command=" + url.QueryEscape(string(b))
}

// frames reads output frames until exited or the socket closes: the
// stdout and stderr bytes, the exit code (-1 without an exit frame) and
// the close error.
func frames(t *testing.T, c *websocket.Conn) (stdout, stderr string, code int, closeErr *websocket.CloseError) {
	t.Helper()
	code = -1
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out, errb bytes.Buffer
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				closeErr = ce
			}
			return out.String(), errb.String(), code, closeErr
		}
		var f state.ExecOutputFrame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		if f.Stdout != nil {
			out.Write(f.Stdout.Data)
		}
		if f.Stderr != nil {
			errb.Write(f.Stderr.Data)
		}
		if f.Exited {
			code = f.Result.ExitCode
		}
	}
}

func sendFrame(t *testing.T, c *websocket.Conn, f state.ExecInputFrame) {
	t.Helper()
	if err := c.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
}

func TestExecLocalSession(t *testing.T) {
	h, fc := localClientHarness(t)
	srv := execServer(t, h)

	// stdin echoed back, then the exit code.
	c, _, err := wsDial(t, srv, execURL("server", "cat"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sendFrame(t, c, state.ExecInputFrame{Stdin: &state.ExecIOFrame{Data: []byte("hello\n")}})
	sendFrame(t, c, state.ExecInputFrame{Stdin: &state.ExecIOFrame{Close: true}})
	if out, _, code, ce := frames(t, c); out != "hello\n" || code != 0 || ce == nil || ce.Code != websocket.CloseNormalClosure {
		t.Errorf("cat: %q, exit %d, close %v", out, code, ce)
	}

	c, _, _ = wsDial(t, srv, execURL("server", "exit", "3"), nil)
	if _, _, code, _ := frames(t, c); code != 3 {
		t.Errorf("exit 3: code %d", code)
	}
	c, _, _ = wsDial(t, srv, execURL("server", "err", "oops"), nil)
	if out, errOut, code, _ := frames(t, c); out != "" || errOut != "oops\n" || code != 1 {
		t.Errorf("stderr: %q %q %d", out, errOut, code)
	}

	// TTY: the initial size and resizes reach the command.
	c, _, _ = wsDial(t, srv, execURL("server", "tty")+"&tty=true", nil)
	sendFrame(t, c, state.ExecInputFrame{TTYSize: &state.TerminalSize{Height: 30, Width: 100}})
	testutil.WaitFor(t, 5*time.Second, "the resize reaches the command", func() bool {
		fe := fc.exec()
		fe.mu.Lock()
		defer fe.mu.Unlock()
		return len(fe.sizes) == 1 && fe.sizes[0] == state.TerminalSize{Height: 30, Width: 100}
	})
	if !fc.exec().last.TTY {
		t.Error("tty=true did not ask for a terminal")
	}
	c.Close()

	// A failure after the upgrade is a close frame of 4000 + status.
	c, _, _ = wsDial(t, srv, execURL("server", "nosuch"), nil)
	if _, _, code, ce := frames(t, c); code != -1 || ce == nil || ce.Code != 4404 || !strings.Contains(ce.Text, "nosuch") {
		t.Errorf("missing program: exit %d, close %v", code, ce)
	}
}

// Closing the socket kills the command; so does an idle session. Neither
// leaves a session (goroutine) behind.
func TestExecSocketCloseAndIdleEndTheCommand(t *testing.T) {
	h, fc := localClientHarness(t)
	h.srv.execTimes.Idle = 300 * time.Millisecond
	srv := execServer(t, h)
	fe := fc.exec()
	baseline := runtime.NumGoroutine()

	c, _, err := wsDial(t, srv, execURL("server", "sleep"), nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the command runs", func() bool { return fe.running.Load() == 1 })
	// Keep it busy past the idle timeout: input counts as activity.
	for range 4 {
		sendFrame(t, c, state.ExecInputFrame{Stdin: &state.ExecIOFrame{Data: []byte("x")}})
		time.Sleep(100 * time.Millisecond) // pacing the input, not waiting for state
	}
	if fe.running.Load() != 1 {
		t.Fatal("an active session was ended as idle")
	}
	c.Close()
	testutil.WaitFor(t, 5*time.Second, "closing the socket kills the command", func() bool { return fe.running.Load() == 0 && fe.killed.Load() == 1 })

	c, _, _ = wsDial(t, srv, execURL("server", "sleep"), nil)
	_, _, code, ce := frames(t, c)
	if code != -1 || ce == nil || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "idle") {
		t.Errorf("idle session: exit %d, close %v", code, ce)
	}
	testutil.WaitFor(t, 5*time.Second, "the idle command is killed", func() bool { return fe.running.Load() == 0 && fe.killed.Load() == 2 })
	c.Close()
	// Every goroutine of both sessions (reader, keep-alive, command) ends.
	testutil.WaitFor(t, 5*time.Second, "the sessions' goroutines to end", func() bool { return runtime.NumGoroutine() <= baseline })
}

func TestExecRefusedBeforeUpgrade(t *testing.T) {
	h, _ := localClientHarness(t)
	srv := execServer(t, h)
	cases := []struct {
		target string
		code   int
		want   string
	}{
		{"/v1/client/allocation/" + apitest.AllocID(1) + "/exec?task=server", 400, "command: required"},
		{"/v1/client/allocation/" + apitest.AllocID(1) + "/exec?command=%5B%22sh%22%5D", 400, "task: required"},
		{"/v1/client/allocation/" + apitest.AllocID(1) + "/exec?task=server&command=sh", 400, "not a JSON array"},
		{"/v1/client/allocation/" + apitest.AllocID(1) + "/exec?task=server&command=%5B%5D", 400, "names no program"},
		{"/v1/client/allocation/" + apitest.AllocID(1) + "/exec?task=server&command=%5B%22sh%22%5D&tty=maybe", 400, "tty"},
		{execURL("nosuch", "sh"), 404, `task "nosuch"`},
		{"/v1/client/allocation/" + apitest.AllocID(9) + "/exec?task=server&command=%5B%22sh%22%5D", 404, "allocation"},
	}
	for _, c := range cases {
		_, resp, err := wsDial(t, srv, c.target, nil)
		if err == nil || resp == nil || resp.StatusCode != c.code {
			t.Errorf("%s: %v %v, want %d", c.target, resp, err, c.code)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %q, want %q", c.target, body, c.want)
		}
	}
	// A plain GET (no upgrade) is a 400 saying so.
	h.Fail(http.MethodGet, execURL("server", "sh"), nil, 400, "WebSocket upgrade is required")
	// Too many words.
	many := make([]string, state.MaxExecCommandArgs+1)
	for i := range many {
		many[i] = "a"
	}
	h.Fail(http.MethodGet, execURL("server", many...), nil, 400, "at most 256")
}

// Actions: listed from the job, run through the Go client as an exec of
// their command in the named allocation.
func TestActionsThroughTheGoClient(t *testing.T) {
	h, fc := localClientHarness(t)
	job := h.Job("default", "web")
	job.TaskGroups[0].Tasks[0].Actions = []*state.Action{
		{Name: "hello", Command: "echo", Args: []string{"hi", "there"}},
		{Name: "fail", Command: "exit", Args: []string{"3"}},
	}
	h.register(job)
	fc.allocs[apitest.AllocID(1)].Job = h.Job("default", "web")
	srv := execServer(t, h)
	cl, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acts, _, err := cl.Jobs().Actions(ctx, "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 || acts[0].Name != "hello" || acts[0].Command != "echo" || acts[0].TaskName != "server" ||
		acts[0].TaskGroupName != "web" || strings.Join(acts[0].Args, " ") != "hi there" {
		b, _ := json.Marshal(acts)
		t.Errorf("actions: %s", b)
	}
	if _, _, err := cl.Jobs().Actions(ctx, "nosuch", nil); !api.IsNotFound(err) {
		t.Errorf("actions of an unknown job: %v", err)
	}

	var out bytes.Buffer
	code, err := cl.Jobs().RunAction(ctx, "web", &api.ActionOptions{AllocID: apitest.AllocID(1), Task: "server", Action: "hello",
		ExecStreams: api.ExecStreams{Stdout: &out}}, nil)
	if err != nil || code != 0 || out.String() != "hi there\n" {
		t.Errorf("run hello: %q, %d, %v", out.String(), code, err)
	}
	code, err = cl.Jobs().RunAction(ctx, "web", &api.ActionOptions{AllocID: apitest.AllocID(1), Task: "server", Action: "fail"}, nil)
	if err != nil || code != 3 {
		t.Errorf("run fail: %d, %v", code, err)
	}
	_, err = cl.Jobs().RunAction(ctx, "web", &api.ActionOptions{AllocID: apitest.AllocID(1), Task: "server", Action: "nosuch"}, nil)
	if se, ok := err.(*api.StatusError); !ok || se.Code != 404 || !strings.Contains(se.Body, `action "nosuch"`) {
		t.Errorf("unknown action: %v", err)
	}
	// The exec endpoint through the Go client, stdin included.
	out.Reset()
	code, err = cl.Allocations().Exec(ctx, apitest.AllocID(1), &api.ExecOptions{Task: "server", Command: []string{"cat"},
		ExecStreams: api.ExecStreams{Stdin: strings.NewReader("ping\n"), Stdout: &out}}, nil)
	if err != nil || code != 0 || out.String() != "ping\n" {
		t.Errorf("exec cat: %q, %d, %v", out.String(), code, err)
	}
	// A missing parameter of the action socket is a 400 naming it.
	h.Fail(http.MethodGet, "/v1/job/web/action?task=server", nil, 400, "action: required", "alloc_id: required")
}

func TestAllocLifecycleEndpoints(t *testing.T) {
	h, fc := localClientHarness(t)
	var stop state.AllocStopResponse
	h.OK(http.MethodPost, "/v1/allocation/"+apitest.AllocID(1)+"/stop", nil, &stop)
	a := h.Alloc(apitest.AllocID(1))
	if a.DesiredTransition.Migrate == nil || !*a.DesiredTransition.Migrate {
		t.Errorf("stop did not mark the allocation to migrate: %+v", a.DesiredTransition)
	}
	ev, err := h.Store.EvalByID(nil, stop.EvalID)
	if err != nil || ev == nil || ev.TriggeredBy != state.EvalTriggerAllocStop || ev.JobID != "web" {
		t.Errorf("stop's evaluation: %+v %v", ev, err)
	}
	h.Fail(http.MethodPost, "/v1/allocation/"+apitest.AllocID(9)+"/stop", nil, 404, "allocation")

	h.OK(http.MethodPost, "/v1/client/allocation/"+apitest.AllocID(1)+"/restart", &state.AllocRestartRequest{TaskName: "server"}, nil)
	h.OK(http.MethodPut, "/v1/client/allocation/"+apitest.AllocID(1)+"/restart", nil, nil)
	h.OK(http.MethodPost, "/v1/client/allocation/"+apitest.AllocID(1)+"/signal", &state.AllocSignalRequest{Task: "server", Signal: "SIGHUP"}, nil)
	h.Fail(http.MethodPost, "/v1/client/allocation/"+apitest.AllocID(1)+"/signal", "{", 400)
	fe := fc.exec()
	if got := strings.Join(fe.restarts, ","); got != apitest.AllocID(1)+"/server/false,"+apitest.AllocID(1)+"//false" {
		t.Errorf("restarts: %s", got)
	}
	if got := strings.Join(fe.signals, ","); got != apitest.AllocID(1)+"/server/SIGHUP" {
		t.Errorf("signals: %s", got)
	}
}

// A server that does not run the allocation relays the session to the
// node's agent (NewClientHandler), frames both ways, and the node's
// fs, restart and signal endpoints answer through it too.
func TestExecRelayedToTheNode(t *testing.T) {
	node := newFakeNode(t, apitest.NodeID(1))
	h, _ := newSchedHarness(t)
	srv := execServer(t, h)
	n := apitest.TestNode(1)
	n.HTTPAddr = strings.TrimPrefix(node.srv.URL, "http://")
	h.RegisterNode(n)
	unreachable := apitest.TestNode(2)
	unreachable.HTTPAddr = "127.0.0.1:1"
	h.RegisterNode(unreachable)
	h.register(apitest.TestJob("web"))
	job := h.Registered(apitest.TestJob("web"))
	h.PlaceAlloc(1, job, apitest.NodeID(1), "")
	h.PlaceAlloc(2, job, apitest.NodeID(2), "")
	node.client.allocs[apitest.AllocID(1)] = h.Alloc(apitest.AllocID(1))

	c, _, err := wsDial(t, srv, execURL("server", "cat"), http.Header{HeaderToken: {"tok"}})
	if err != nil {
		t.Fatal(err)
	}
	sendFrame(t, c, state.ExecInputFrame{Stdin: &state.ExecIOFrame{Data: []byte("relayed\n")}})
	sendFrame(t, c, state.ExecInputFrame{Stdin: &state.ExecIOFrame{Close: true}})
	if out, _, code, _ := frames(t, c); out != "relayed\n" || code != 0 {
		t.Errorf("relayed cat: %q, exit %d", out, code)
	}
	if hd := node.lastHeader(); hd.Get(clientapi.HeaderProxied) == "" || hd.Get(HeaderToken) != "tok" {
		t.Errorf("the node saw %v", hd)
	}
	c, _, _ = wsDial(t, srv, execURL("server", "exit", "3"), nil)
	if _, _, code, _ := frames(t, c); code != 3 {
		t.Errorf("relayed exit: %d", code)
	}
	// Closing the caller's socket ends the node's command.
	fe := node.client.exec()
	c, _, _ = wsDial(t, srv, execURL("server", "sleep"), nil)
	testutil.WaitFor(t, 5*time.Second, "the node runs the command", func() bool { return fe.running.Load() == 1 })
	c.Close()
	testutil.WaitFor(t, 5*time.Second, "the node's command is killed", func() bool { return fe.running.Load() == 0 && fe.killed.Load() == 1 })

	// The node refusing, or unreachable, is an HTTP error before the upgrade.
	c, _, err = wsDial(t, srv, execURL("server", "nosuch-program"), nil)
	if err != nil {
		t.Fatalf("a missing program is found after the upgrade: %v", err)
	}
	if _, _, code, ce := frames(t, c); code != -1 || ce == nil || ce.Code != 4404 {
		t.Errorf("the node's close code is relayed: exit %d, close %v", code, ce)
	}
	_, resp, _ := wsDial(t, srv, "/v1/client/allocation/"+apitest.AllocID(2)+"/exec?task=server&command=%5B%22sh%22%5D", nil)
	if resp == nil || resp.StatusCode != http.StatusBadGateway {
		t.Errorf("unreachable node: %v", resp)
	}

	// fs and lifecycle through the proxy.
	dir, _ := node.client.AllocDir(apitest.AllocID(1))
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("on the node"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := h.OK(http.MethodGet, "/v1/client/fs/cat/"+apitest.AllocID(1)+"?path=/f", nil, nil).Body.String(); got != "on the node" {
		t.Errorf("proxied cat: %q", got)
	}
	h.Fail(http.MethodGet, "/v1/client/fs/cat/"+apitest.AllocID(1)+"?path=../x", nil, 400, "escapes")
	h.OK(http.MethodPost, "/v1/client/allocation/"+apitest.AllocID(1)+"/signal", &state.AllocSignalRequest{Task: "server", Signal: "SIGUSR1"}, nil)
	h.OK(http.MethodPost, "/v1/client/allocation/"+apitest.AllocID(1)+"/restart", &state.AllocRestartRequest{AllTasks: true}, nil)
	if got := strings.Join(fe.signals, ",") + " " + strings.Join(fe.restarts, ","); got != apitest.AllocID(1)+"/server/SIGUSR1 "+apitest.AllocID(1)+"//true" {
		t.Errorf("node saw %s", got)
	}
}

// A relayed session survives silence longer than the pong wait while both
// ends answer pings; a caller that stops answering (it no longer reads)
// is taken for gone, and the node's command is killed.
func TestExecRelayKeepAlive(t *testing.T) {
	node := newFakeNode(t, apitest.NodeID(1))
	h, _ := newSchedHarness(t)
	// A pong may come late on a loaded machine (a CI run beside other
	// work missed 100 ms): the wait is generous, the silence three times
	// as long.
	h.srv.execTimes = clientapi.Timings{Idle: time.Hour, Ping: 20 * time.Millisecond, Pong: 500 * time.Millisecond}
	srv := execServer(t, h)
	n := apitest.TestNode(1)
	n.HTTPAddr = strings.TrimPrefix(node.srv.URL, "http://")
	h.RegisterNode(n)
	h.register(apitest.TestJob("web"))
	h.PlaceAlloc(1, h.Registered(apitest.TestJob("web")), apitest.NodeID(1), "")
	node.client.allocs[apitest.AllocID(1)] = h.Alloc(apitest.AllocID(1))
	fe := node.client.exec()

	c, _, err := wsDial(t, srv, execURL("server", "sleep"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for { // reading answers the server's pings
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	testutil.WaitFor(t, 5*time.Second, "the node runs the command", func() bool { return fe.running.Load() == 1 })
	time.Sleep(1500 * time.Millisecond) // silence: three times the pong wait
	select {
	case <-ended:
		t.Fatal("a silent session whose ends answer pings was closed")
	default:
	}
	if fe.running.Load() != 1 {
		t.Fatal("the command of a silent session was killed")
	}
	c.Close()
	<-ended
	testutil.WaitFor(t, 5*time.Second, "the command to end with the socket", func() bool { return fe.running.Load() == 0 })

	// A caller that never reads answers no ping.
	if _, _, err := wsDial(t, srv, execURL("server", "sleep"), nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the deaf caller's command to be killed", func() bool { return fe.killed.Load() == 2 })
}
