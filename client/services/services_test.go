package services

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
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

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

const (
	testNodeID = "10000000-0000-4000-8000-000000000001"
	testSecret = "20000000-0000-4000-8000-000000000001"
	testAlloc  = "a0000000-0000-4000-8000-000000000001"
)

// fakeCatalog is the servers' side of the node service endpoints, in
// memory: PUT and DELETE /v1/node/:node_id/services.
type fakeCatalog struct {
	mu     sync.Mutex
	regs   map[string]*state.ServiceRegistration
	tokens []string
	// failNext answers the next n writes with status failCode.
	failNext int
	failCode int
	writes   int
}

func newFakeCatalog(t *testing.T) (*fakeCatalog, *api.Client) {
	t.Helper()
	fc := &fakeCatalog{regs: map[string]*state.ServiceRegistration{}}
	srv := httptest.NewServer(fc)
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return fc, c
}

func (fc *fakeCatalog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if r.URL.Path != "/v1/node/"+testNodeID+"/services" {
		http.Error(w, "no such endpoint", http.StatusNotFound)
		return
	}
	fc.writes++
	fc.tokens = append(fc.tokens, r.Header.Get(api.HeaderToken))
	if fc.failNext > 0 {
		fc.failNext--
		http.Error(w, "injected failure", fc.failCode)
		return
	}
	switch r.Method {
	case http.MethodPut:
		var body struct{ Services []*state.ServiceRegistration }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, s := range body.Services {
			fc.regs[s.ID] = s
		}
	case http.MethodDelete:
		for _, id := range r.URL.Query()["id"] {
			delete(fc.regs, id)
		}
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set(api.HeaderIndex, "7")
	w.Write([]byte(`{"Index": 7}`))
}

func (fc *fakeCatalog) snapshot() map[string]*state.ServiceRegistration {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	out := map[string]*state.ServiceRegistration{}
	for k, v := range fc.regs {
		c := *v
		out[k] = &c
	}
	return out
}

func (fc *fakeCatalog) fail(n, code int) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.failNext, fc.failCode = n, code
}

func (fc *fakeCatalog) writeCount() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.writes
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestManager(t *testing.T, c *api.Client, onCheck func(CheckResult)) *Manager {
	t.Helper()
	m, err := New(Config{
		API: c, NodeID: testNodeID, NodeSecret: testSecret, Datacenter: "dc1", Address: "127.0.0.1",
		Logger: quietLogger(), OnCheck: onCheck, RetryInterval: 20 * time.Millisecond, WriteTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// testAllocation is an allocation of job "web" with a group port "http"
// (25000 on 10.1.1.1) and a task port "admin" (25001 on 10.1.1.2), whose
// group has task "server" with services.
func testAllocation(svcs ...*state.Service) *state.Allocation {
	task := &state.Task{Name: "server", Driver: "raw_exec", Services: svcs}
	return &state.Allocation{
		ID: testAlloc, Namespace: "default", JobID: "web", TaskGroup: "web", NodeID: testNodeID,
		Job: &state.Job{ID: "web", Namespace: "default", TaskGroups: []*state.TaskGroup{{
			Name: "web", Tasks: []*state.Task{task},
			Services: []*state.Service{{Name: "group-svc", PortLabel: "http"}},
		}}},
		AllocatedResources: &state.AllocatedResources{
			Shared: state.AllocatedSharedResources{Ports: []state.AllocatedPort{{Label: "http", Value: 25000, HostIP: "10.1.1.1"}}},
			Tasks: map[string]*state.AllocatedTaskResources{"server": {Networks: []*state.NetworkResource{{
				IP: "10.1.1.2", DynamicPorts: []state.Port{{Label: "admin", Value: 25001}},
			}}}},
		},
	}
}

func TestServiceEntries(t *testing.T) {
	_, c := newFakeCatalog(t)
	m := newTestManager(t, c, nil)
	alloc := testAllocation()
	env := map[string]string{"SCHED_TASK_NAME": "server", "VER": "2"}
	svcs := []*state.Service{
		{Name: "web-${SCHED_TASK_NAME}", PortLabel: "http", Tags: []string{"v${VER}", "${UNKNOWN}"}},
		{Name: "admin", PortLabel: "admin", AddressMode: "host"},
		{Name: "fixed", PortLabel: "8080", Address: "example.internal"},
		{Name: "noport"},
	}
	regs, err := m.Entries(alloc, "server", svcs, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, name, addr string
		port           int
		tags           string
	}{
		{RegistrationID(testAlloc, "server", "web-server", "http"), "web-server", "10.1.1.1", 25000, "v2,${UNKNOWN}"},
		{RegistrationID(testAlloc, "server", "admin", "admin"), "admin", "10.1.1.2", 25001, ""},
		{RegistrationID(testAlloc, "server", "fixed", "8080"), "fixed", "example.internal", 8080, ""},
		{RegistrationID(testAlloc, "server", "noport", ""), "noport", "127.0.0.1", 0, ""},
	}
	for i, w := range want {
		r := regs[i]
		if r.ID != w.id || r.ServiceName != w.name || r.Address != w.addr || r.Port != w.port || strings.Join(r.Tags, ",") != w.tags ||
			r.NodeID != testNodeID || r.Namespace != "default" || r.JobID != "web" || r.AllocID != testAlloc || r.Datacenter != "dc1" {
			t.Errorf("entry %d = %+v, want %+v", i, r, w)
		}
	}
	again, _ := m.Entries(alloc, "server", svcs, env)
	if again[0].ID != regs[0].ID {
		t.Error("IDs are not stable")
	}
	if group, _ := m.Entries(alloc, "", alloc.Job.TaskGroups[0].Services, nil); group[0].ID == regs[0].ID || !strings.Contains(group[0].ID, "group") {
		t.Errorf("group entry ID %q", group[0].ID)
	}

	for _, bad := range []*state.Service{
		{Name: "x", PortLabel: "nope"},
		{Name: "x", PortLabel: "http", AddressMode: "weird"},
		{Name: ""},
	} {
		if _, err := m.Entries(alloc, "server", []*state.Service{bad}, nil); err == nil {
			t.Errorf("service %+v: no error", bad)
		}
	}
	if err := m.RegisterTask(context.Background(), alloc, &state.Task{Name: "server", Services: []*state.Service{{Name: "x", PortLabel: "nope"}}}, nil, ""); err == nil ||
		!strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("register with a bad port label: %v", err)
	}
}

func TestServiceRegisterAndDeregister(t *testing.T) {
	fc, c := newFakeCatalog(t)
	m := newTestManager(t, c, nil)
	alloc := testAllocation(&state.Service{Name: "web", PortLabel: "http", Tags: []string{"a"}}, &state.Service{Name: "admin", PortLabel: "admin"})
	ctx := context.Background()
	if ok, detail := m.Health(alloc.ID); ok || !strings.Contains(detail, "no services") {
		t.Errorf("health before registering: %v %q", ok, detail)
	}
	watch := m.Watch(alloc.ID)
	if err := m.RegisterTask(ctx, alloc, alloc.Job.TaskGroups[0].Tasks[0], nil, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterGroup(ctx, alloc, nil, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watch:
	default:
		t.Error("Watch did not fire on registration")
	}
	regs := fc.snapshot()
	if len(regs) != 3 || regs[RegistrationID(alloc.ID, "server", "web", "http")] == nil || regs[RegistrationID(alloc.ID, "", "group-svc", "http")] == nil {
		t.Fatalf("catalog %v", regs)
	}
	if len(m.Registrations(alloc.ID)) != 3 {
		t.Errorf("Registrations = %v", m.Registrations(alloc.ID))
	}
	for _, tok := range fc.tokens {
		if tok != testSecret {
			t.Errorf("write sent token %q, want the node secret", tok)
		}
	}
	if ok, detail := m.Health(alloc.ID); !ok || !strings.Contains(detail, "no checks") {
		t.Errorf("health without checks: %v %q", ok, detail)
	}

	// Registering the task again with one service less removes the other.
	task := alloc.Job.TaskGroups[0].Tasks[0].Copy()
	task.Services = task.Services[:1]
	if err := m.RegisterTask(ctx, alloc, task, nil, ""); err != nil {
		t.Fatal(err)
	}
	if regs := fc.snapshot(); len(regs) != 2 || regs[RegistrationID(alloc.ID, "server", "admin", "admin")] != nil {
		t.Errorf("after re-register: %v", regs)
	}

	if err := m.DeregisterTask(alloc.ID, "server"); err != nil {
		t.Fatal(err)
	}
	if regs := fc.snapshot(); len(regs) != 1 {
		t.Errorf("after task deregister: %v", regs)
	}
	if err := m.DeregisterAlloc(alloc.ID); err != nil {
		t.Fatal(err)
	}
	if regs := fc.snapshot(); len(regs) != 0 {
		t.Errorf("after alloc deregister: %v", regs)
	}
	if ok, _ := m.Health(alloc.ID); ok {
		t.Error("healthy with nothing registered")
	}
	if err := m.DeregisterAlloc("unknown"); err != nil {
		t.Errorf("deregistering nothing: %v", err)
	}
}

// Writes the servers did not take are retried until they do; writes they
// refuse as invalid are dropped.
func TestServiceSyncRetries(t *testing.T) {
	fc, c := newFakeCatalog(t)
	m := newTestManager(t, c, nil)
	alloc := testAllocation(&state.Service{Name: "web", PortLabel: "http"})
	fc.fail(2, http.StatusServiceUnavailable)
	if err := m.RegisterTask(context.Background(), alloc, alloc.Job.TaskGroups[0].Tasks[0], nil, ""); err != nil {
		t.Fatalf("a server failure failed the registration: %v", err)
	}
	testutil.WaitFor(t, 5*time.Second, "the retried registration", func() bool { return len(fc.snapshot()) == 1 })
	testutil.WaitFor(t, 5*time.Second, "nothing pending", func() bool { return !m.pending() })

	fc.fail(1, http.StatusServiceUnavailable)
	if err := m.DeregisterTask(alloc.ID, "server"); err == nil {
		t.Error("the failed delete was not reported")
	}
	testutil.WaitFor(t, 5*time.Second, "the retried delete", func() bool { return len(fc.snapshot()) == 0 })

	fc.fail(1, http.StatusBadRequest)
	if err := m.RegisterTask(context.Background(), alloc, alloc.Job.TaskGroups[0].Tasks[0], nil, ""); err != nil {
		t.Fatal(err)
	}
	if m.pending() {
		t.Error("a refused write is still pending")
	}
	if err := m.Sync(context.Background()); err != nil {
		t.Errorf("Sync with nothing pending: %v", err)
	}
	if len(fc.snapshot()) != 0 {
		t.Error("the refused write reached the catalog")
	}
}

// Checks run on their interval, decide the allocation's health, fire
// Watch and report through OnCheck.
func TestHealthFollowsChecks(t *testing.T) {
	_, c := newFakeCatalog(t)
	var healthy atomic.Bool
	healthy.Store(true)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		if !healthy.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer target.Close()
	port := target.Listener.Addr().(*net.TCPAddr).Port

	var mu sync.Mutex
	var reported []CheckResult
	m := newTestManager(t, c, func(r CheckResult) {
		mu.Lock()
		reported = append(reported, r)
		mu.Unlock()
	})
	svc := &state.Service{Name: "web", PortLabel: strconv.Itoa(port), Checks: []*state.ServiceCheck{
		{Name: "alive", Type: "http", Path: "/health", Interval: 30 * time.Millisecond, Timeout: time.Second},
		{Type: "tcp", Interval: 30 * time.Millisecond, Timeout: time.Second},
	}}
	alloc := testAllocation(svc)
	watch := m.Watch(alloc.ID)
	if err := m.RegisterTask(context.Background(), alloc, alloc.Job.TaskGroups[0].Tasks[0], nil, ""); err != nil {
		t.Fatal(err)
	}
	<-watch
	testutil.WaitFor(t, 5*time.Second, "healthy", func() bool { ok, _ := m.Health(alloc.ID); return ok })
	checks := m.Checks(alloc.ID)
	if len(checks) != 2 || checks[0].Check != "alive" || checks[1].Check != `service: "web" check` || checks[0].Task != "server" {
		t.Errorf("checks %+v", checks)
	}

	watch = m.Watch(alloc.ID)
	healthy.Store(false)
	select {
	case <-watch:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not fire when the check failed")
	}
	testutil.WaitFor(t, 5*time.Second, "unhealthy", func() bool { ok, _ := m.Health(alloc.ID); return !ok })
	if _, detail := m.Health(alloc.ID); !strings.Contains(detail, `"alive"`) || !strings.Contains(detail, "critical") || !strings.Contains(detail, "503") {
		t.Errorf("unhealthy detail %q", detail)
	}
	mu.Lock()
	var sawCritical bool
	for _, r := range reported {
		sawCritical = sawCritical || r.Check == "alive" && r.Status == StatusCritical
	}
	mu.Unlock()
	if !sawCritical {
		t.Error("OnCheck did not report the failure")
	}

	if err := m.DeregisterTask(alloc.ID, "server"); err != nil {
		t.Fatal(err)
	}
	if len(m.Checks(alloc.ID)) != 0 {
		t.Error("checks still listed after deregistering")
	}
}

// InitialStatus sets a check's status until its first run.
func TestCheckInitialStatus(t *testing.T) {
	_, c := newFakeCatalog(t)
	m := newTestManager(t, c, nil)
	svc := &state.Service{Name: "web", PortLabel: "http", Checks: []*state.ServiceCheck{
		{Name: "slow", Type: "script", Command: "/bin/sh", Args: []string{"-c", "exec sleep 30"}, Interval: time.Hour, Timeout: time.Hour, InitialStatus: "passing"},
	}}
	alloc := testAllocation(svc)
	if err := m.RegisterTask(context.Background(), alloc, alloc.Job.TaskGroups[0].Tasks[0], nil, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if ok, detail := m.Health(alloc.ID); !ok {
		t.Errorf("initial passing: %v %q", ok, detail)
	}
	if err := m.DeregisterAlloc(alloc.ID); err != nil { // kills the running script
		t.Fatal(err)
	}
}

// Close stops every check (killing a running script) and refuses new
// registrations.
func TestServiceManagerClose(t *testing.T) {
	_, c := newFakeCatalog(t)
	m, err := New(Config{API: c, NodeID: testNodeID, NodeSecret: testSecret, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	svc := &state.Service{Name: "web", PortLabel: "http", Checks: []*state.ServiceCheck{
		{Name: "hang", Type: "script", Command: "/bin/sh", Args: []string{"-c", "touch started; exec sleep 30"}, Interval: time.Hour, Timeout: time.Hour},
	}}
	alloc := testAllocation(svc)
	if err := m.RegisterTask(context.Background(), alloc, alloc.Job.TaskGroups[0].Tasks[0], nil, dir); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the script to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	start := time.Now()
	m.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v: the running script was not killed", d)
	}
	if err := m.RegisterTask(context.Background(), alloc, alloc.Job.TaskGroups[0].Tasks[0], nil, dir); err == nil {
		t.Error("registered after Close")
	}
	m.Close() // idempotent
	if _, err := New(Config{NodeID: testNodeID}); err == nil {
		t.Error("New without API")
	}
}
