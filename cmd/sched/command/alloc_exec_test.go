package command

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/schedhq/sched/state"
)

// echoExec is a fake exec socket: it echoes stdin as stdout until stdin
// closes, then exits with code.
func echoExec(t *testing.T, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		defer c.Close()
		for {
			var f state.ExecInputFrame
			if err := c.ReadJSON(&f); err != nil {
				return
			}
			if f.Stdin != nil && len(f.Stdin.Data) > 0 {
				_ = c.WriteJSON(state.ExecOutputFrame{Stdout: &state.ExecIOFrame{Data: f.Stdin.Data}})
			}
			if f.Stdin != nil && f.Stdin.Close {
				break
			}
		}
		_ = c.WriteJSON(state.ExecOutputFrame{Exited: true, Result: &state.ExecResult{ExitCode: code}})
		_, _, _ = c.ReadMessage() // the caller's close
	}
}

func TestAllocExec(t *testing.T) {
	f := logsAPI(t, "server")
	f.on("GET", "/v1/client/allocation/"+logAlloc+"/exec", echoExec(t, 3), echoExec(t, 0))
	runCLI(t, f, runOpts{stdin: "typed\n"}, "alloc", "exec", "a1a1", "cat", "-n").check(t, 3, "typed\n", "")
	q := f.requests("GET /v1/client/allocation/" + logAlloc + "/exec")[0].Query
	var cmd []string
	_ = json.Unmarshal([]byte(q.Get("command")), &cmd)
	if q.Get("task") != "server" || strings.Join(cmd, " ") != "cat -n" || q.Get("tty") != "" || q.Get("namespace") != "prod" {
		t.Errorf("query %v", q)
	}
	// -i=false sends nothing (but still ends the input).
	runCLI(t, f, runOpts{stdin: "not sent\n"}, "alloc", "exec", "-i=false", "-task", "server", logAlloc, "cat").check(t, 0, "", "")
	if r := runCLI(t, f, runOpts{}, "alloc", "exec", logAlloc); r.code != 1 || !strings.Contains(r.stderr, "Usage: sched alloc exec") {
		t.Errorf("no command: %d %q", r.code, r.stderr)
	}
}

func TestAllocStopRestartSignal(t *testing.T) {
	f := logsAPI(t, "server")
	f.on("POST", "/v1/allocation/"+logAlloc+"/stop", reply(9, &state.AllocStopResponse{EvalID: "e1e1e1e1-0000-4000-8000-000000000009"}))
	f.on("POST", "/v1/client/allocation/"+logAlloc+"/restart", reply(0, struct{}{}), reply(0, struct{}{}))
	f.on("POST", "/v1/client/allocation/"+logAlloc+"/signal", reply(0, struct{}{}))
	runCLI(t, f, runOpts{}, "alloc", "stop", "a1a1").check(t, 0, "==> Allocation \"a1a1a1a1\" stop requested: evaluation \"e1e1e1e1\"\n", "")
	if q := f.only("POST /v1/allocation/" + logAlloc + "/stop").Query; q.Get("namespace") != "prod" {
		t.Errorf("stop query %v", q)
	}
	runCLI(t, f, runOpts{}, "alloc", "restart", logAlloc, "server").check(t, 0, "Restart requested for allocation \"a1a1a1a1\"\n", "")
	runCLI(t, f, runOpts{}, "alloc", "restart", "-all-tasks", logAlloc).check(t, 0, "Restart requested for allocation \"a1a1a1a1\"\n", "")
	var rr []state.AllocRestartRequest
	for _, s := range f.requests("POST /v1/client/allocation/" + logAlloc + "/restart") {
		var r state.AllocRestartRequest
		decodeBody(t, s, &r)
		rr = append(rr, r)
	}
	if len(rr) != 2 || rr[0].TaskName != "server" || rr[0].AllTasks || !rr[1].AllTasks || rr[1].TaskName != "" {
		t.Errorf("restart bodies %+v", rr)
	}
	runCLI(t, f, runOpts{}, "alloc", "restart", "-all-tasks", logAlloc, "server").check(t, 1, "", "Error: -all-tasks and a task name are exclusive\n")
	runCLI(t, f, runOpts{}, "alloc", "signal", "-s", "SIGHUP", logAlloc, "server").check(t, 0, "Sent SIGHUP to allocation \"a1a1a1a1\"\n", "")
	var sr state.AllocSignalRequest
	decodeBody(t, f.only("POST /v1/client/allocation/"+logAlloc+"/signal"), &sr)
	if sr.Signal != "SIGHUP" || sr.Task != "server" {
		t.Errorf("signal body %+v", sr)
	}
}

func TestAllocFS(t *testing.T) {
	f := logsAPI(t, "server")
	mod := time.Date(2025, 2, 1, 10, 0, 0, 0, time.UTC)
	f.on("GET", "/v1/client/fs/stat/"+logAlloc,
		reply(0, &state.AllocFileInfo{Name: logAlloc, IsDir: true, FileMode: "drwx--x--x", ModTime: mod}),
		reply(0, &state.AllocFileInfo{Name: "conf", Size: 5, FileMode: "-rw-r--r--", ModTime: mod}),
		fail(400, `path "../x" escapes the allocation directory`))
	f.on("GET", "/v1/client/fs/ls/"+logAlloc, reply(0, []*state.AllocFileInfo{
		{Name: "alloc", IsDir: true, FileMode: "drwxr-xr-x", ModTime: mod},
		{Name: "server", IsDir: true, FileMode: "drwxr-xr-x", Size: 4096, ModTime: mod},
	}))
	f.on("GET", "/v1/client/fs/cat/"+logAlloc, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hello")) })
	runCLI(t, f, runOpts{}, "alloc", "fs", "a1a1").check(t, 0, lines(
		"Mode        Size  Modified Time         Name",
		"drwxr-xr-x  0     2025-02-01T10:00:00Z  alloc/",
		"drwxr-xr-x  4096  2025-02-01T10:00:00Z  server/",
	), "")
	if q := f.only("GET /v1/client/fs/ls/" + logAlloc).Query; q.Get("path") != "/" {
		t.Errorf("ls query %v", q)
	}
	runCLI(t, f, runOpts{}, "alloc", "fs", "a1a1", "server/local/conf").check(t, 0, "hello", "")
	if q := f.only("GET /v1/client/fs/cat/" + logAlloc).Query; q.Get("path") != "server/local/conf" {
		t.Errorf("cat query %v", q)
	}
	runCLI(t, f, runOpts{}, "alloc", "fs", "a1a1", "../x").check(t, 1, "",
		"Error reading ../x: Unexpected response code: 400 (path \"../x\" escapes the allocation directory)\n")
}

func TestJobAction(t *testing.T) {
	f := newFakeAPI(t)
	acts := []*state.JobAction{
		{Name: "hello", Command: "echo", Args: []string{"hi"}, TaskGroupName: "web", TaskName: "server"},
		{Name: "dump", Command: "cat", TaskGroupName: "web", TaskName: "server"},
	}
	f.on("GET", "/v1/job/web/actions", reply(3, acts), reply(3, acts), reply(3, acts))
	f.on("GET", "/v1/job/web/allocations", reply(3, []*state.Allocation{
		{ID: "dead", TaskGroup: "web", ClientStatus: state.AllocClientStatusComplete, DesiredStatus: state.AllocDesiredStatusStop},
		{ID: logAlloc, TaskGroup: "web", ClientStatus: state.AllocClientStatusRunning, DesiredStatus: state.AllocDesiredStatusRun},
	}))
	f.on("GET", "/v1/job/web/action", echoExec(t, 0))
	runCLI(t, f, runOpts{}, "job", "action", "-job", "web").check(t, 0, lines(
		"Name   Group  Task    Command",
		"hello  web    server  echo hi",
		"dump   web    server  cat",
	), "")
	runCLI(t, f, runOpts{}, "job", "action", "-job", "web", "-group", "web", "-task", "server", "dump").check(t, 0, "", "")
	q := f.only("GET /v1/job/web/action").Query
	if q.Get("alloc_id") != logAlloc || q.Get("task") != "server" || q.Get("action") != "dump" {
		t.Errorf("action query %v", q)
	}
	runCLI(t, f, runOpts{}, "job", "action", "-job", "web", "nosuch").check(t, 1, "",
		"Error: job \"web\" has no action \"nosuch\" (in group \"\", task \"\")\n")
	runCLI(t, f, runOpts{}, "job", "action", "hello").check(t, 1, "", "Error: -job is required\n")
}
