package http

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/clientapi"
	"github.com/schedhq/sched/http/clientapi/allocfs"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// fakeClientAPI is the clientapi.Client double: allocations held in memory, logs
// in a test directory.
type fakeClientAPI struct {
	nodeID string
	dir    string

	mu     sync.Mutex
	allocs map[string]*state.Allocation
	stats  *state.AllocResourceUsage
	// gate caps its file system reads, with the defaults unless a test
	// sets its Limits first.
	gate allocfs.Gate
}

var _ clientapi.Client = (*fakeClientAPI)(nil)

func (f *fakeClientAPI) FSGate() *allocfs.Gate { return &f.gate }

func (f *fakeClientAPI) NodeID() string { return f.nodeID }

func (f *fakeClientAPI) Alloc(id string) (*state.Allocation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.allocs[id]
	if a == nil {
		return nil, state.NotFoundf("allocation %q on this client", id)
	}
	c := *a
	return &c, nil
}

func (f *fakeClientAPI) AllocLogDir(id string) (string, error) {
	if _, err := f.Alloc(id); err != nil {
		return "", err
	}
	return f.dir, nil
}

func (f *fakeClientAPI) AllocStats(_ context.Context, id string) (*state.AllocResourceUsage, error) {
	if _, err := f.Alloc(id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := *f.stats
	return &s, nil
}

// setTaskState records a task's state, as the client would.
func (f *fakeClientAPI) setTaskState(allocID, task, st string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := *f.allocs[allocID]
	a.TaskStates = map[string]*state.TaskState{task: {State: st}}
	f.allocs[allocID] = &a
}

// drop forgets an allocation, as the client's GC would.
func (f *fakeClientAPI) drop(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.allocs, id)
}

// writeLog appends data to the log file name in dir.
func writeLog(t testing.TB, dir, name, data string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// localClientHarness is a harness whose server runs a client (dev mode)
// as node 1, holding allocation 1 of job web (group web, task server).
func localClientHarness(t *testing.T) (*harness, *fakeClientAPI) {
	t.Helper()
	fc := &fakeClientAPI{nodeID: apitest.NodeID(1), dir: t.TempDir(), allocs: map[string]*state.Allocation{}}
	fl := apitest.NewFakeLeader()
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Jobs.Leader, c.Client = fl, fc })
	h.RegisterNode(apitest.TestNode(1))
	h.register(apitest.TestJob("web"))
	h.PlaceAlloc(1, h.Registered(apitest.TestJob("web")), apitest.NodeID(1), "")
	fc.allocs[apitest.AllocID(1)] = h.Alloc(apitest.AllocID(1))
	return h, fc
}

func logsURL(query string) string {
	return "/v1/client/fs/logs/" + apitest.AllocID(1) + "?task=server&" + query
}

func TestClientLogsRead(t *testing.T) {
	h, fc := localClientHarness(t)
	writeLog(t, fc.dir, "server.stdout.0", "hello\n")
	writeLog(t, fc.dir, "server.stdout.1", "world\n")
	writeLog(t, fc.dir, "server.stderr.0", "oops\n")
	writeLog(t, fc.dir, "other.stdout.0", "not mine\n")
	writeLog(t, fc.dir, "server.stdout.x", "not a rotation\n")

	cases := []struct{ query, want string }{
		{"plain=true", "hello\nworld\n"},
		{"plain=true&type=stdout&origin=start&offset=3", "lo\nworld\n"},
		{"plain=true&offset=6", "world\n"},
		{"plain=true&origin=end&offset=4", "rld\n"},
		{"plain=true&origin=end&offset=100", "hello\nworld\n"},
		{"plain=true&offset=100", ""},
		{"plain=true&type=stderr", "oops\n"},
	}
	for _, c := range cases {
		rec := h.OK(http.MethodGet, logsURL(c.query), nil, nil)
		if got := rec.Body.String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.query, got, c.want)
		}
		if want := len(c.want); rec.Header().Get(clientapi.HeaderLogInitialBytes) != itoa(want) {
			t.Errorf("%s: %s = %q, want %d", c.query, clientapi.HeaderLogInitialBytes, rec.Header().Get(clientapi.HeaderLogInitialBytes), want)
		}
	}

	// Framed: JSON objects naming each file and offset.
	rec := h.OK(http.MethodGet, logsURL("offset=2"), nil, nil)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("framed Content-Type %q", ct)
	}
	dec := json.NewDecoder(rec.Body)
	var frames []clientapi.LogFrame
	for dec.More() {
		var f clientapi.LogFrame
		if err := dec.Decode(&f); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	if len(frames) != 2 || string(frames[0].Data) != "llo\n" || frames[0].Offset != 2 || frames[0].File != "alloc/logs/server.stdout.0" ||
		string(frames[1].Data) != "world\n" || frames[1].Offset != 0 || frames[1].File != "alloc/logs/server.stdout.1" {
		t.Errorf("frames %+v", frames)
	}

	// A task that has written nothing yet has an empty log.
	empty := &fakeClientAPI{nodeID: fc.nodeID, dir: filepath.Join(fc.dir, "missing"), allocs: fc.allocs}
	h2 := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Client, c.Jobs.Leader = empty, apitest.NewFakeLeader() })
	h2.RegisterNode(apitest.TestNode(1))
	h2.register(apitest.TestJob("web"))
	h2.PlaceAlloc(1, h2.Registered(apitest.TestJob("web")), apitest.NodeID(1), "")
	if rec := h2.OK(http.MethodGet, logsURL("plain=true"), nil, nil); rec.Body.Len() != 0 {
		t.Errorf("no log files: %q", rec.Body.String())
	}
}

func TestClientLogsBadInput(t *testing.T) {
	h, _ := localClientHarness(t)
	h.CreateNamespace("prod")
	base := "/v1/client/fs/logs/" + apitest.AllocID(1)
	cases := []struct {
		url  string
		code int
		want string
	}{
		{base, 400, "task: required"},
		{base + "?task=../x", 400, "not a task name"},
		{base + "?task=server&type=stdin", 400, "type"},
		{base + "?task=server&offset=-1", 400, "offset"},
		{base + "?task=server&offset=x", 400, "offset"},
		{base + "?task=server&origin=middle", 400, "origin"},
		{base + "?task=server&follow=maybe", 400, "follow"},
		{base + "?task=nope", 404, `task "nope"`},
		{"/v1/client/fs/logs/" + apitest.AllocID(9) + "?task=server", 404, apitest.AllocID(9)},
		{base + "?task=server&namespace=prod", 404, apitest.AllocID(1)},
		{"/v1/client/allocation/" + apitest.AllocID(9) + "/stats", 404, apitest.AllocID(9)},
	}
	for _, c := range cases {
		h.Fail(http.MethodGet, c.url, nil, c.code, c.want)
	}
}

// streamLogs starts a followed read of url from srv and collects it.
func streamLogs(t *testing.T, srv *httptest.Server, url string, header http.Header) (*testutil.SyncBuffer, <-chan error, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	out := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, resp.Body)
		resp.Body.Close()
		done <- err
	}()
	return out, done, resp
}

// A followed log streams new data as it is written, moves to the next
// file when the driver rotates (after draining what was appended to the
// old one), and ends once the task is dead.
func TestClientLogsFollowAcrossRotation(t *testing.T) {
	h, fc := localClientHarness(t)
	srv := httptest.NewServer(h.srv.Handler())
	defer srv.Close()
	writeLog(t, fc.dir, "server.stdout.0", "one\n")
	out, done, _ := streamLogs(t, srv, logsURL("plain=true&follow=true"), nil)
	testutil.WaitFor(t, 5*time.Second, "the existing line", func() bool { return out.String() == "one\n" })

	writeLog(t, fc.dir, "server.stdout.0", "two\n")
	testutil.WaitFor(t, 5*time.Second, "an appended line", func() bool { return out.String() == "one\ntwo\n" })

	// Rotation: the last words of .0 and the first of .1 land together.
	writeLog(t, fc.dir, "server.stdout.0", "three\n")
	writeLog(t, fc.dir, "server.stdout.1", "four\n")
	testutil.WaitFor(t, 5*time.Second, "the rotated file", func() bool { return out.String() == "one\ntwo\nthree\nfour\n" })
	writeLog(t, fc.dir, "server.stdout.2", "five\n")
	os.Remove(filepath.Join(fc.dir, "server.stdout.0")) // MaxFiles reached
	writeLog(t, fc.dir, "server.stdout.2", "six\n")
	testutil.WaitFor(t, 5*time.Second, "a second rotation", func() bool { return strings.HasSuffix(out.String(), "four\nfive\nsix\n") })

	select {
	case err := <-done:
		t.Fatalf("stream ended while the task runs: %v", err)
	default:
	}
	writeLog(t, fc.dir, "server.stdout.2", "bye\n")
	fc.setTaskState(apitest.AllocID(1), "server", state.TaskStateDead)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end after the task died")
	}
	if got, want := out.String(), "one\ntwo\nthree\nfour\nfive\nsix\nbye\n"; got != want {
		t.Errorf("stream %q, want %q", got, want)
	}
}

func TestClientStatsLocal(t *testing.T) {
	h, fc := localClientHarness(t)
	fc.stats = &state.AllocResourceUsage{Tasks: map[string]*state.TaskResourceUsage{
		"server":  {Timestamp: 5, ResourceUsage: &state.ResourceUsage{MemoryStats: &state.MemoryStats{RSS: 100, Measured: []string{"RSS"}}, CpuStats: &state.CpuStats{Percent: 10, TotalTicks: 200, Measured: []string{"Percent"}}}},
		"sidecar": {Timestamp: 7, ResourceUsage: &state.ResourceUsage{MemoryStats: &state.MemoryStats{RSS: 50, Measured: []string{"RSS"}}, CpuStats: &state.CpuStats{Percent: 2.5, TotalTicks: 50, Measured: []string{"Percent", "Total Ticks"}}}},
	}}
	var u state.AllocResourceUsage
	h.OK(http.MethodGet, "/v1/client/allocation/"+apitest.AllocID(1)+"/stats", nil, &u)
	sum := u.ResourceUsage
	if sum == nil || sum.MemoryStats.RSS != 150 || sum.CpuStats.Percent != 12.5 || sum.CpuStats.TotalTicks != 250 ||
		len(sum.CpuStats.Measured) != 2 || u.Timestamp != 7 || len(u.Tasks) != 2 {
		b, _ := json.Marshal(u)
		t.Errorf("stats %s", b)
	}
}

// fakeNode is a client-only agent's HTTP server (NewClientHandler) that
// records the headers of what it is sent.
type fakeNode struct {
	srv    *httptest.Server
	client *fakeClientAPI
	mu     sync.Mutex
	seen   []http.Header
}

func newFakeNode(t *testing.T, id string) *fakeNode {
	fn := &fakeNode{client: &fakeClientAPI{nodeID: id, dir: t.TempDir(), allocs: map[string]*state.Allocation{}}}
	h := clientapi.NewHandler(fn.client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	fn.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fn.mu.Lock()
		fn.seen = append(fn.seen, r.Header.Clone())
		fn.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(fn.srv.Close)
	return fn
}

func (fn *fakeNode) lastHeader() http.Header {
	fn.mu.Lock()
	defer fn.mu.Unlock()
	if len(fn.seen) == 0 {
		return nil
	}
	return fn.seen[len(fn.seen)-1]
}

// A server without the allocation proxies logs and stats to the node
// that runs it, streaming, with the caller's token.
func TestClientProxyToNode(t *testing.T) {
	node := newFakeNode(t, apitest.NodeID(1))
	h, _ := newSchedHarness(t)
	srv := httptest.NewServer(h.srv.Handler())
	defer srv.Close()
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
	node.client.stats = &state.AllocResourceUsage{Tasks: map[string]*state.TaskResourceUsage{
		"server": {ResourceUsage: &state.ResourceUsage{MemoryStats: &state.MemoryStats{RSS: 4096}}},
	}}
	writeLog(t, node.client.dir, "server.stderr.0", "from the node\n")

	tok := http.Header{HeaderToken: []string{"caller-secret"}}
	out, done, resp := streamLogs(t, srv, logsURL("type=stderr&plain=true&follow=true"), tok)
	testutil.WaitFor(t, 5*time.Second, "proxied log data", func() bool { return out.String() == "from the node\n" })
	writeLog(t, node.client.dir, "server.stderr.0", "more\n")
	testutil.WaitFor(t, 5*time.Second, "followed data through the proxy", func() bool { return out.String() == "from the node\nmore\n" })
	if got := resp.Header.Get(clientapi.HeaderLogInitialBytes); got != "14" {
		t.Errorf("%s through the proxy = %q", clientapi.HeaderLogInitialBytes, got)
	}
	hdr := node.lastHeader()
	if hdr.Get(HeaderToken) != "caller-secret" || hdr.Get(clientapi.HeaderProxied) == "" {
		t.Errorf("node saw headers %v: want the caller's token and the proxy mark", hdr)
	}
	node.client.setTaskState(apitest.AllocID(1), "server", state.TaskStateDead)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("proxied stream did not end")
	}

	var u state.AllocResourceUsage
	h.OK(http.MethodGet, "/v1/client/allocation/"+apitest.AllocID(1)+"/stats", nil, &u)
	if u.ResourceUsage == nil || u.ResourceUsage.MemoryStats.RSS != 4096 {
		t.Errorf("proxied stats %+v", u)
	}

	// The node's own errors come back as they are.
	h.Fail(http.MethodGet, "/v1/client/fs/logs/"+apitest.AllocID(1)+"?task=nope", nil, http.StatusNotFound, `task "nope"`)
	node.client.drop(apitest.AllocID(1))
	h.Fail(http.MethodGet, logsURL("plain=true"), nil, http.StatusNotFound, "on this client")

	// A node that cannot be reached is a 502 naming it.
	h.Fail(http.MethodGet, "/v1/client/allocation/"+apitest.AllocID(2)+"/stats", nil, http.StatusBadGateway, apitest.NodeID(2))
	// A request already proxied once is never proxied again.
	req := httptest.NewRequest(http.MethodGet, "/v1/client/allocation/"+apitest.AllocID(2)+"/stats", nil)
	req.Header.Set(clientapi.HeaderProxied, "1")
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("re-proxied request: %d %q", rec.Code, rec.Body.String())
	}
	// A node without an HTTP address.
	n3 := apitest.TestNode(3)
	n3.HTTPAddr = ""
	h.RegisterNode(n3)
	h.PlaceAlloc(3, job, apitest.NodeID(3), "")
	h.Fail(http.MethodGet, "/v1/client/allocation/"+apitest.AllocID(3)+"/stats", nil, http.StatusBadGateway, "no HTTP address")
}

func TestClientHandler(t *testing.T) {
	node := newFakeNode(t, apitest.NodeID(4))
	get := func(path string) (int, string) {
		resp, err := http.Get(node.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1/agent/self")
	var self clientapi.AgentSelf
	if err := json.Unmarshal([]byte(body), &self); code != 200 || err != nil || self.Stats["client"]["node_id"] != apitest.NodeID(4) {
		t.Errorf("agent/self: %d %s", code, body)
	}
	if code, body := get("/v1/jobs"); code != http.StatusNotFound || !strings.Contains(body, "client agent") {
		t.Errorf("server endpoint on a client: %d %s", code, body)
	}
	if code, _ := get("/v1/client/allocation/" + apitest.AllocID(1) + "/stats"); code != http.StatusNotFound {
		t.Errorf("unknown alloc stats: %d", code)
	}
	if code, body := get("/v1/client/fs/logs/" + apitest.AllocID(1)); code != http.StatusBadRequest || !strings.Contains(body, "task") {
		t.Errorf("logs without task: %d %s", code, body)
	}
}

// followingClient is a fakeClientAPI that names its current server.
type followingClient struct {
	*fakeClientAPI
	server string
}

func (f *followingClient) CurrentServer() string { return f.server }

// A client agent's address answers the whole API: what it does not serve
// itself goes to its current server, with the caller's token.
func TestClientHandlerProxiesToServer(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.register(apitest.TestJob("web"))
	var gotToken string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/agent/self" {
			// The client asks whether the caller may read its own
			// /v1/agent/self (agent:read): this server says yes to all.
			w.Write([]byte("{}"))
			return
		}
		gotToken = r.Header.Get(HeaderToken)
		h.srv.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	fc := &followingClient{fakeClientAPI: &fakeClientAPI{nodeID: apitest.NodeID(1), dir: t.TempDir(), allocs: map[string]*state.Allocation{}}, server: srv.URL}
	client := httptest.NewServer(clientapi.NewHandler(fc, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer client.Close()

	req, _ := http.NewRequest(http.MethodGet, client.URL+"/v1/job/web", nil)
	req.Header.Set(HeaderToken, "tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var job state.Job
	if err := json.NewDecoder(resp.Body).Decode(&job); err != nil || resp.StatusCode != 200 || job.ID != "web" || gotToken != "tok" {
		t.Errorf("proxied job read: %d %+v %v, token %q", resp.StatusCode, job, err, gotToken)
	}
	// Its own endpoints stay its own (agent/self once the server allowed
	// the caller).
	resp2, err := http.Get(client.URL + "/v1/agent/self")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var self clientapi.AgentSelf
	if json.NewDecoder(resp2.Body).Decode(&self); self.Stats["client"]["node_id"] != apitest.NodeID(1) {
		t.Errorf("agent/self of the client: %d %+v", resp2.StatusCode, self)
	}
	// No server known: a 404 as before.
	fc.server = ""
	resp3, err := http.Get(client.URL + "/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp3.Body.Close()
	if resp3.StatusCode != http.StatusNotFound {
		t.Errorf("without a server: %d", resp3.StatusCode)
	}
}

// selfForwarder answers Self; the rest of Forwarder is never called.
type selfForwarder struct{ Forwarder }

func (selfForwarder) IsLeader() bool { return true }
func (selfForwarder) Self() *state.AgentSelf {
	return &state.AgentSelf{Config: map[string]any{"Name": "dev"}, Stats: map[string]map[string]string{"raft": {"state": "Leader"}}}
}

// In dev mode the server's /v1/agent/self names the local client's node.
func TestAgentSelfNamesLocalClient(t *testing.T) {
	fc := &fakeClientAPI{nodeID: apitest.NodeID(1)}
	h := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Client, c.Forwarder = fc, selfForwarder{} })
	var self state.AgentSelf
	h.OK(http.MethodGet, "/v1/agent/self", nil, &self)
	if self.Stats["client"]["node_id"] != apitest.NodeID(1) || self.Stats["raft"]["state"] != "Leader" {
		t.Errorf("agent/self stats %v", self.Stats)
	}
	h2 := newHarnessWith(t, store.Config{}, func(c *testConfig) { c.Forwarder = selfForwarder{} })
	var self2 state.AgentSelf
	h2.OK(http.MethodGet, "/v1/agent/self", nil, &self2)
	if _, ok := self2.Stats["client"]; ok || self2.Stats["raft"] == nil {
		t.Errorf("a server without a client reports one: %v", self2.Stats)
	}
}
