package command

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// sched monitor -node-id / -server-id ask the agent at -address to pass
// on another agent's lines; the two cannot be combined.
func TestMonitorPicksTheAgent(t *testing.T) {
	cases := []struct {
		args []string
		want url.Values
	}{
		{nil, url.Values{"log_level": {"info"}}},
		{[]string{"-node-id", "n-1", "-log-level", "debug"}, url.Values{"log_level": {"debug"}, "node_id": {"n-1"}}},
		{[]string{"-server-id", "s2", "-json"}, url.Values{"log_level": {"info"}, "log_json": {"true"}, "server_id": {"s2"}}},
	}
	for _, tc := range cases {
		f := newFakeAPI(t)
		f.on("GET", "/v1/agent/monitor", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("line one\nline two\n"))
		})
		r := runCLI(t, f, runOpts{}, append([]string{"monitor"}, tc.args...)...)
		r.check(t, 0, "line one\nline two\n", "")
		if got := f.only("GET /v1/agent/monitor").Query; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("monitor %v: query %v, want %v", tc.args, got, tc.want)
		}
	}
	f := newFakeAPI(t)
	r := runCLI(t, f, runOpts{}, "monitor", "-node-id", "n", "-server-id", "s")
	r.check(t, 1, "", "Error: -node-id and -server-id cannot be combined\n")
	if len(f.requests("")) != 0 {
		t.Errorf("requests sent: %v", f.keys())
	}
}

// sched event stream prints the stream's event lines, not its heartbeats,
// and sends the topics and index asked for; a refused stream is exit 1.
func TestEventStreamCommand(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/event/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("{}\n" + `{"Index":7,"Events":[{"Topic":"Job","Key":"web"}]}` + "\n{}\n"))
	})
	r := runCLI(t, f, runOpts{}, "event", "stream", "-topic", "Job:web", "-topic", "Allocation:*", "-index", "7")
	r.check(t, 0, `{"Index":7,"Events":[{"Topic":"Job","Key":"web"}]}`+"\n", "")
	q := f.only("GET /v1/event/stream").Query
	if got := q["topic"]; len(got) != 2 || got[0] != "Job:web" || got[1] != "Allocation:*" || q.Get("index") != "7" {
		t.Errorf("query %v", q)
	}
	denied := newFakeAPI(t)
	denied.on("GET", "/v1/event/stream", fail(http.StatusForbidden, "Permission denied"))
	r = runCLI(t, denied, runOpts{}, "event", "stream")
	if r.code != 1 || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("denied: %d %q", r.code, r.stderr)
	}
}
