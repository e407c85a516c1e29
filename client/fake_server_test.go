package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// fakeServer is the servers' side of the node endpoints, in memory: it
// records registrations, heartbeats and status reports, and serves the
// node's allocations by blocking query, so client tests control exactly
// what the client sees.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	index      uint64
	nodes      map[string]*state.Node
	allocs     map[string]*state.Allocation
	updates    []*state.AllocClientUpdate
	updateReqs int
	registers  int
	heartbeats int
	ttl        time.Duration
	changed    chan struct{}
	// forget404 makes the next heartbeat answer 404 (the servers lost
	// the node).
	forget404 bool
	// introToken, when set, is the one token that registers a new node
	// (the servers with ACLs on); a known node registers with its secret.
	introToken string
	// introTokens counts registers authorized by introToken.
	introTokens int

	// failWith, when non-zero, is the status every request gets.
	failWith atomic.Int32
}

func newFakeServer(t *testing.T) *fakeServer {
	fs := &fakeServer{t: t, nodes: map[string]*state.Node{}, allocs: map[string]*state.Allocation{},
		ttl: 10 * time.Second, changed: make(chan struct{}), index: 1}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/node/register", fs.register)
	mux.HandleFunc("PUT /v1/node/{id}/heartbeat", fs.heartbeat)
	mux.HandleFunc("GET /v1/node/{id}/allocations", fs.listAllocs)
	mux.HandleFunc("GET /v1/node/{id}/allocations/changes", fs.listAllocs)
	mux.HandleFunc("PUT /v1/node/{id}/allocations", fs.updateAllocs)
	fs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := fs.failWith.Load(); code != 0 {
			http.Error(w, "injected failure", int(code))
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(fs.srv.Close)
	return fs
}

// fakeFront is one more address of a fakeServer, as the servers of one
// cluster answer for the same state: each fails on cue and counts the
// heartbeats it carried.
type fakeFront struct {
	srv *httptest.Server
	// failWith, when non-zero, is the status every request through this
	// address gets.
	failWith   atomic.Int32
	heartbeats atomic.Int64
	// staleReads is how many more allocation reads answer 404, as a
	// follower that has not applied the node's registration yet does.
	staleReads atomic.Int32
}

// newFront adds an address in front of fs, closed with the test.
func (fs *fakeServer) newFront(t *testing.T) *fakeFront {
	f := &fakeFront{}
	shared := fs.srv.Config.Handler
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := f.failWith.Load(); code != 0 {
			http.Error(w, "injected failure", int(code))
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/allocations") && f.staleReads.Add(-1) >= 0 {
			http.Error(w, "node not found", http.StatusNotFound)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/heartbeat") {
			f.heartbeats.Add(1)
		}
		shared.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (fs *fakeServer) bumpLocked() {
	fs.index++
	close(fs.changed)
	fs.changed = make(chan struct{})
}

func (fs *fakeServer) register(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Node struct {
			*state.Node
			SecretID string
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	n := body.Node.Node
	n.SecretID = body.Node.SecretID
	fs.mu.Lock()
	if fs.introToken != "" {
		tok := r.Header.Get(api.HeaderToken)
		old := fs.nodes[n.ID]
		switch {
		case tok == fs.introToken:
			fs.introTokens++
		case old == nil || tok != old.SecretID:
			fs.mu.Unlock()
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
	}
	fs.nodes[n.ID] = n
	fs.registers++
	ttl := fs.ttl
	fs.mu.Unlock()
	writeJSON200(w, &state.NodeUpdateResponse{HeartbeatTTL: ttl})
}

func (fs *fakeServer) heartbeat(w http.ResponseWriter, r *http.Request) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	id := r.PathValue("id")
	if fs.forget404 {
		fs.forget404 = false
		delete(fs.nodes, id)
	}
	if fs.nodes[id] == nil {
		http.Error(w, "node not found", 404)
		return
	}
	fs.heartbeats++
	writeJSON200(w, &state.NodeUpdateResponse{HeartbeatTTL: fs.ttl})
}

// listAllocs serves the node's allocations by blocking query, as a list
// or (the /changes path) as the changes since the since parameter.
func (fs *fakeServer) listAllocs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	since, _ := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	changes := strings.HasSuffix(r.URL.Path, "/changes")
	wantIndex, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	wait := 5 * time.Second
	if d, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil && d < wait {
		wait = d
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	timedOut := false
	for {
		fs.mu.Lock()
		if fs.nodes[id] == nil {
			fs.mu.Unlock()
			http.Error(w, "node not found", 404)
			return
		}
		if fs.index > wantIndex || timedOut {
			out := []*state.Allocation{}
			for _, a := range fs.allocs {
				if a.NodeID == id {
					out = append(out, a.Copy())
				}
			}
			w.Header().Set(api.HeaderIndex, strconv.FormatUint(fs.index, 10))
			fs.mu.Unlock()
			if !changes {
				writeJSON200(w, out)
				return
			}
			ch := &state.NodeAllocChanges{Allocs: map[string]uint64{}, Changed: []*state.Allocation{}}
			indexOf := func(a *state.Allocation) uint64 { return a.ModifyIndex }
			if r.URL.Query().Get("server_changes") == "true" {
				indexOf = func(a *state.Allocation) uint64 { return a.AllocModifyIndex }
			}
			for _, a := range out {
				ch.Allocs[a.ID] = indexOf(a)
				if indexOf(a) > since {
					ch.Changed = append(ch.Changed, a)
				}
			}
			writeJSON200(w, ch)
			return
		}
		ch := fs.changed
		fs.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			// Like the real endpoint: the current list, unchanged.
			timedOut = true
		case <-r.Context().Done():
			return
		}
	}
}

func (fs *fakeServer) updateAllocs(w http.ResponseWriter, r *http.Request) {
	var body struct{ Allocs []*state.AllocClientUpdate }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.updateReqs++
	for _, u := range body.Allocs {
		fs.updates = append(fs.updates, u)
		if a := fs.allocs[u.ID]; a != nil {
			cp := a.Copy()
			cp.ClientStatus, cp.ClientDescription, cp.TaskStates = u.ClientStatus, u.ClientDescription, u.TaskStates
			if u.DeploymentStatus != nil {
				cp.DeploymentStatus = u.DeploymentStatus
			}
			cp.ModifyIndex = fs.index + 1
			fs.allocs[u.ID] = cp
		}
	}
	fs.bumpLocked()
	writeJSON200(w, &state.NodeAllocsUpdateResponse{Index: fs.index})
}

func writeJSON200(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// addAlloc places a on the server, as the scheduler would.
func (fs *fakeServer) addAlloc(a *state.Allocation) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = fs.index+1, fs.index+1, fs.index+1
	fs.allocs[a.ID] = a
	fs.bumpLocked()
}

// mutateAlloc changes an allocation as a server-side write does (bumping
// AllocModifyIndex).
func (fs *fakeServer) mutateAlloc(id string, fn func(a *state.Allocation)) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	a := fs.allocs[id].Copy()
	fn(a)
	a.ModifyIndex, a.AllocModifyIndex = fs.index+1, fs.index+1
	fs.allocs[id] = a
	fs.bumpLocked()
}

// stopAlloc sets an allocation's desired status to stop.
func (fs *fakeServer) stopAlloc(id string, noDelay bool) {
	fs.mutateAlloc(id, func(a *state.Allocation) {
		a.DesiredStatus = state.AllocDesiredStatusStop
		if noDelay {
			a.DesiredTransition.NoShutdownDelay = &noDelay
		}
	})
}

// removeAlloc forgets an allocation (garbage collected on the servers).
func (fs *fakeServer) removeAlloc(id string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.allocs, id)
	fs.bumpLocked()
}

// alloc is the server's view of an allocation.
func (fs *fakeServer) alloc(id string) *state.Allocation {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if a := fs.allocs[id]; a != nil {
		return a.Copy()
	}
	return nil
}

func (fs *fakeServer) counts() (registers, heartbeats, updateReqs, updates int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.registers, fs.heartbeats, fs.updateReqs, len(fs.updates)
}

// fakeServices records service registrations.
type fakeServices struct {
	mu     sync.Mutex
	events []string
}

func (f *fakeServices) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, s)
}

func (f *fakeServices) RegisterTask(_ context.Context, a *state.Allocation, t *state.Task, _ map[string]string, _ string) error {
	f.record("register " + t.Name)
	return nil
}
func (f *fakeServices) RegisterGroup(context.Context, *state.Allocation, map[string]string, string) error {
	f.record("register group")
	return nil
}
func (f *fakeServices) DeregisterTask(_, task string) error {
	f.record("deregister " + task)
	return nil
}
func (f *fakeServices) DeregisterAlloc(string) error { f.record("deregister group"); return nil }
func (f *fakeServices) Health(string) (bool, string) { return true, "" }

func (f *fakeServices) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

// testClient starts a client against fs with fast timings, the mock and
// raw_exec drivers and fake services. Cleanup kills every task.
func testClient(t *testing.T, fs *fakeServer, dataDir string, mod ...func(*Config)) *Client {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	cfg := Config{
		DataDir: dataDir, Servers: []string{fs.srv.URL},
		Drivers:       []driver.Driver{driver.NewMock(), driver.NewRawExec(nil)},
		Services:      &fakeServices{},
		BatchInterval: 20 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		DestroyOnShutdown: true, MaxKillTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitRegistered(ctx); err != nil {
		t.Fatalf("client did not register: %v", err)
	}
	return c
}

// serverStatus waits until the servers have the allocation in status.
func waitAllocStatus(t *testing.T, fs *fakeServer, id, status string) *state.Allocation {
	t.Helper()
	var got *state.Allocation
	testutil.WaitForErr(t, 15*time.Second, "alloc "+status, func() error {
		got = fs.alloc(id)
		if got == nil || got.ClientStatus != status {
			return fmt.Errorf("alloc is %+v", statusOf(got))
		}
		return nil
	})
	return got
}

func statusOf(a *state.Allocation) string {
	if a == nil {
		return "<nil>"
	}
	s := a.ClientStatus + ":"
	for name, ts := range a.TaskStates {
		s += fmt.Sprintf(" %s=%s(failed=%v restarts=%d events=%v)", name, ts.State, ts.Failed, ts.Restarts, eventTypes(ts))
	}
	return s
}

func eventTypes(ts *state.TaskState) []string {
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type)
	}
	return out
}

// job builds a canonical job of one group with tasks.
func job(typ string, tasks ...*state.Task) *state.Job {
	j := &state.Job{ID: "j-" + state.NewID()[:8], Name: "j", Namespace: "default", Type: typ, Datacenters: []string{"dc1"},
		TaskGroups: []*state.TaskGroup{{Name: "g", Count: 1, Tasks: tasks}}}
	j.Canonicalize()
	return j
}

// allocFor places job j's group on c's node.
func allocFor(c *Client, j *state.Job) *state.Allocation {
	tg := j.TaskGroups[0]
	res := &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{}}
	for _, t := range tg.Tasks {
		res.Tasks[t.Name] = &state.AllocatedTaskResources{CPU: t.Resources.CPU, MemoryMB: t.Resources.MemoryMB}
	}
	return &state.Allocation{
		ID: state.NewID(), Namespace: j.Namespace, Name: j.ID + ".g[0]", NodeID: c.NodeID(), JobID: j.ID, Job: j,
		TaskGroup: tg.Name, AllocatedResources: res, DesiredStatus: state.AllocDesiredStatusRun,
		ClientStatus: state.AllocClientStatusPending,
	}
}

// sh is a raw_exec task running script with /bin/sh.
func sh(name, script string) *state.Task {
	return &state.Task{Name: name, Driver: "raw_exec", Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}}
}

// mock is a mock-driver task.
func mock(name string, cfg map[string]any) *state.Task {
	return &state.Task{Name: name, Driver: "mock", Config: cfg}
}

// fastRestarts sets a group's restart policy.
func restartPolicy(j *state.Job, attempts int, delay, interval time.Duration, mode string) {
	p := &state.RestartPolicy{Attempts: attempts, Delay: delay, Interval: interval, Mode: mode}
	j.TaskGroups[0].RestartPolicy = p
	for _, t := range j.TaskGroups[0].Tasks {
		cp := *p
		t.RestartPolicy = &cp
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

func allocPathOf(c *Client, id string, parts ...string) string {
	return filepath.Join(append([]string{c.allocPath(id)}, parts...)...)
}
