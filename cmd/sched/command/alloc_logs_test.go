package command

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const logAlloc = "a1a1a1a1-0000-4000-8000-000000000001"

// logsAPI is a fake API with allocation logAlloc (group web, tasks
// listed) in namespace prod.
func logsAPI(t *testing.T, tasks ...string) *fakeAPI {
	f := newFakeAPI(t)
	f.on("GET", "/v1/allocations", reply(5, []*state.AllocListStub{{ID: logAlloc, Namespace: "prod", JobID: "web", TaskGroup: "web"}}))
	tg := &state.TaskGroup{Name: "web"}
	for _, name := range tasks {
		tg.Tasks = append(tg.Tasks, &state.Task{Name: name})
	}
	f.on("GET", "/v1/allocation/"+logAlloc, reply(5, &state.Allocation{ID: logAlloc, Namespace: "prod", TaskGroup: "web",
		Job: &state.Job{ID: "web", TaskGroups: []*state.TaskGroup{tg}}}))
	return f
}

// logReply answers a log read with body, saying initial bytes were on
// disk.
func logReply(initial int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderLogInitialBytes, itoa(initial))
		io.WriteString(w, body)
	}
}

func TestAllocLogs(t *testing.T) {
	f := logsAPI(t, "server")
	f.on("GET", "/v1/client/fs/logs/"+logAlloc, logReply(12, "hello\nworld\n"))
	runCLI(t, f, runOpts{}, "alloc", "logs", "a1a1").check(t, 0, "hello\nworld\n", "")
	r := f.only("GET /v1/client/fs/logs/" + logAlloc)
	if q := r.Query; q.Get("task") != "server" || q.Get("type") != "stdout" || q.Get("plain") != "true" || q.Get("namespace") != "prod" ||
		q.Get("follow") != "" || q.Get("origin") != "" {
		t.Errorf("query %v", q)
	}
}

func TestAllocLogsOptions(t *testing.T) {
	f := logsAPI(t, "server", "sidecar")
	f.on("GET", "/v1/client/fs/logs/"+logAlloc, logReply(0, "oops\n"))
	runCLI(t, f, runOpts{}, "alloc", "logs", "-stderr", "-f", logAlloc, "sidecar").check(t, 0, "oops\n", "")
	q := f.only("GET /v1/client/fs/logs/" + logAlloc).Query
	if q.Get("task") != "sidecar" || q.Get("type") != "stderr" || q.Get("follow") != "true" {
		t.Errorf("query %v", q)
	}

	// Two tasks and none named: the command says which there are.
	r := runCLI(t, f, runOpts{}, "alloc", "logs", logAlloc)
	if r.code != 1 || !strings.Contains(r.stderr, "2 tasks (server, sidecar)") {
		t.Errorf("no task named: %d %q", r.code, r.stderr)
	}
	runCLI(t, f, runOpts{}, "alloc", "logs", "-task", "a", logAlloc, "b").check(t, 1, "",
		"Error: -task \"a\" and the TASK argument \"b\" disagree\n")
	if r := runCLI(t, f, runOpts{}, "alloc", "logs"); r.code != 1 || !strings.Contains(r.stderr, "Usage: sched alloc logs") {
		t.Errorf("no args: %d %q", r.code, r.stderr)
	}
}

// -tail -n N prints the last N lines of what was on disk, then (with -f)
// whatever the task writes next.
func TestAllocLogsTail(t *testing.T) {
	f := logsAPI(t, "server")
	existing := "l1\nl2\nl3\nl4\n"
	f.on("GET", "/v1/client/fs/logs/"+logAlloc,
		logReply(len(existing), existing+"new1\nnew2\n"),
		logReply(len(existing), existing),
	)
	runCLI(t, f, runOpts{}, "alloc", "logs", "-f", "-n", "2", logAlloc).check(t, 0, "l3\nl4\nnew1\nnew2\n", "")
	q := f.requests("GET /v1/client/fs/logs/" + logAlloc)[0].Query
	if q.Get("origin") != "end" || q.Get("offset") != itoa(2*tailBytesPerLine) || q.Get("follow") != "true" {
		t.Errorf("tail query %v", q)
	}
	runCLI(t, f, runOpts{}, "alloc", "logs", "-tail", logAlloc).check(t, 0, existing, "")
}

func TestLogsLastLines(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		cut  bool
		want string
	}{
		{"a\nb\nc\n", 2, false, "b\nc\n"},
		{"a\nb\nc\n", 5, false, "a\nb\nc\n"},
		{"a\nb\nc", 1, false, "c"},
		{"tial\nb\nc\n", 5, true, "b\nc\n"}, // the cut first line is dropped
		{"tial\nb\nc\n", 1, true, "c\n"},
		{"partial", 3, true, ""},
		{"a\n", 0, false, ""},
		{"", 3, false, ""},
	}
	for _, c := range cases {
		if got := string(lastLines([]byte(c.in), c.n, c.cut)); got != c.want {
			t.Errorf("lastLines(%q, %d, %v) = %q, want %q", c.in, c.n, c.cut, got, c.want)
		}
	}
}

func TestAllocLogsErrors(t *testing.T) {
	f := logsAPI(t, "server")
	f.on("GET", "/v1/client/fs/logs/"+logAlloc, fail(http.StatusBadGateway, "cannot reach node n1"))
	runCLI(t, f, runOpts{}, "alloc", "logs", logAlloc).check(t, 1, "",
		"Error reading logs: Unexpected response code: 502 (cannot reach node n1)\n")

	none := newFakeAPI(t)
	none.on("GET", "/v1/allocations", reply(5, []*state.AllocListStub{}))
	runCLI(t, none, runOpts{}, "alloc", "logs", "zzz").check(t, 1, "", "No allocation(s) with prefix or ID \"zzz\" found\n")
}

// -f ends cleanly when the command is interrupted.
func TestAllocLogsFollowInterrupted(t *testing.T) {
	f := logsAPI(t, "server")
	release := make(chan struct{})
	defer close(release)
	f.on("GET", "/v1/client/fs/logs/"+logAlloc, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	runCLI(t, f, runOpts{ctx: ctx}, "alloc", "logs", "-f", logAlloc).check(t, 0, "first\n", "")
}
