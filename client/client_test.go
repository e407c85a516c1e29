package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

func TestHeartbeatsAtAFractionOfTheTTL(t *testing.T) {
	fs := newFakeServer(t)
	fs.ttl = 200 * time.Millisecond
	start := time.Now()
	testClient(t, fs, "")
	testutil.WaitForErr(t, 5*time.Second, "4 heartbeats", func() error {
		if _, hb, _, _ := fs.counts(); hb < 4 {
			return fmt.Errorf("%d heartbeats", hb)
		}
		return nil
	})
	// At half of 200ms (less jitter), four heartbeats take about 400ms;
	// waiting the whole TTL each time would take 800ms.
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Fatalf("4 heartbeats took %v", d)
	}
}

// HeartbeatStats counts the heartbeats a server answered and those that
// failed (what a client agent's /v1/metrics reports).
func TestHeartbeatStatsCountOKAndFailed(t *testing.T) {
	fs := newFakeServer(t)
	fs.ttl = 50 * time.Millisecond
	c := testClient(t, fs, "", func(cfg *Config) { cfg.MaxBackoff = 20 * time.Millisecond })
	testutil.WaitForErr(t, 5*time.Second, "answered heartbeats", func() error {
		if ok, failed := c.HeartbeatStats(); ok < 2 || failed != 0 {
			return fmt.Errorf("%d ok, %d failed", ok, failed)
		}
		return nil
	})
	fs.failWith.Store(503)
	// A failed heartbeat; the client retries it (a 5xx is no reason to
	// register again) until a server answers.
	testutil.WaitForErr(t, 5*time.Second, "a failed heartbeat", func() error {
		if _, failed := c.HeartbeatStats(); failed < 1 {
			return fmt.Errorf("%d failed", failed)
		}
		return nil
	})
	okBefore, _ := c.HeartbeatStats()
	_, hb, _, _ := fs.counts()
	if int(okBefore) > hb {
		t.Fatalf("%d heartbeats counted ok, the server answered %d", okBefore, hb)
	}
}

func TestReregistersWhenServersForgetTheNode(t *testing.T) {
	fs := newFakeServer(t)
	fs.ttl = 50 * time.Millisecond
	c := testClient(t, fs, "")
	fs.mu.Lock()
	fs.forget404 = true
	fs.mu.Unlock()
	testutil.WaitForErr(t, 5*time.Second, "a second registration", func() error {
		if reg, _, _, _ := fs.counts(); reg < 2 {
			return fmt.Errorf("%d registrations", reg)
		}
		// The client counts a registration once it has the answer, after
		// the server counted it.
		if n := c.Registrations(); n < 2 {
			return fmt.Errorf("client counted %d registrations", n)
		}
		return nil
	})
}

func TestFailsOverBetweenServers(t *testing.T) {
	a, b := newFakeServer(t), newFakeServer(t)
	a.ttl, b.ttl = 50*time.Millisecond, 50*time.Millisecond
	a.failWith.Store(503)
	c := testClient(t, a, "", func(cfg *Config) { cfg.Servers = []string{a.srv.URL, b.srv.URL} })
	if reg, _, _, _ := b.counts(); reg != 1 || c.CurrentServer() != b.srv.URL {
		t.Fatalf("registered %d times with the second server; current %s", reg, c.CurrentServer())
	}
	// Now the second one fails and the first comes back: these two fake
	// servers share no state, so the first answers 404 (it never learned
	// the node), the node registers with it, and its allocations come
	// from there.
	a.failWith.Store(0)
	b.failWith.Store(500)
	testutil.WaitForErr(t, 5*time.Second, "registration with the first server", func() error {
		if reg, _, _, _ := a.counts(); reg < 1 {
			return fmt.Errorf("%d registrations", reg)
		}
		return nil
	})
	j := job(state.JobTypeService, mock("x", nil))
	al := allocFor(c, j)
	a.addAlloc(al)
	waitAllocStatus(t, a, al.ID, state.AllocClientStatusRunning)
}

func TestStatusUpdatesAreBatched(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "", func(cfg *Config) { cfg.BatchInterval = 100 * time.Millisecond })
	var ids []string
	for range 40 {
		a := allocFor(c, job(state.JobTypeService, mock("x", nil)))
		fs.addAlloc(a)
		ids = append(ids, a.ID)
	}
	for _, id := range ids {
		waitAllocStatus(t, fs, id, state.AllocClientStatusRunning)
	}
	_, _, reqs, updates := fs.counts()
	// Each allocation changes at least 3 times (received, setup,
	// started); coalescing sends far fewer reports, in few requests.
	if reqs > 15 || updates > 3*40 {
		t.Fatalf("%d requests carrying %d allocation reports for 40 allocations", reqs, updates)
	}
	testutil.WaitForErr(t, 5*time.Second, "the client to count its batches", func() error {
		if n := c.BatchesSent(); n < 1 {
			return fmt.Errorf("client counted %d batches, server %d", n, reqs)
		}
		return nil
	})
}

func TestUpdatesSurviveAnOutage(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	a := allocFor(c, job(state.JobTypeService, mock("x", nil)))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	fs.failWith.Store(503)
	stopAllocDirect(c, fs, a.ID)
	testutil.WaitForErr(t, 5*time.Second, "the local stop", func() error {
		if al, _ := c.Alloc(a.ID); al.ClientStatus != state.AllocClientStatusComplete {
			return fmt.Errorf("local status %s", al.ClientStatus)
		}
		return nil
	})
	fs.failWith.Store(0)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
}

// stopAllocDirect stops an allocation while requests fail: the change
// is only visible once the server answers again, so this pokes the
// client's runner directly, as a blocking query answered just before the
// outage would have.
func stopAllocDirect(c *Client, fs *fakeServer, id string) {
	a := fs.alloc(id)
	a.DesiredStatus = state.AllocDesiredStatusStop
	a.AllocModifyIndex++
	c.syncAllocs([]*state.Allocation{a}, a.AllocModifyIndex)
}

func TestRemovedAllocIsDestroyed(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	a := allocFor(c, job(state.JobTypeService, sh("x", `echo $$ > "$SCHED_ALLOC_DIR/pid"; exec sleep 300`)))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	pid := waitPID(t, allocPathOf(c, a.ID, "alloc", "pid"))
	fs.removeAlloc(a.ID)
	testutil.WaitForErr(t, 10*time.Second, "the allocation to be destroyed", func() error {
		if _, err := os.Stat(c.allocPath(a.ID)); !os.IsNotExist(err) {
			return fmt.Errorf("alloc dir: %v", err)
		}
		if pidAlive(pid) {
			return fmt.Errorf("pid %d alive", pid)
		}
		return nil
	})
	if _, err := c.Alloc(a.ID); err == nil {
		t.Fatal("the client still lists the allocation")
	}
	if m, _ := filepath.Glob(filepath.Join(c.dir, "state", a.ID+"*")); len(m) != 0 {
		t.Fatalf("state of the allocation kept: %v", m)
	}
}

func TestGarbageCollection(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "", func(cfg *Config) {
		cfg.GCInterval, cfg.GCAllocAge, cfg.GCMaxAllocs = time.Hour, time.Hour, 2
	})
	var ids []string
	// The tasks write logs, so their allocations have directories (a
	// mock task that writes nothing has none: allocdir.go).
	for range 3 {
		a := allocFor(c, job(state.JobTypeBatch, mock("x", map[string]any{"run_for": "1ms", "stdout_string": "out"})))
		fs.addAlloc(a)
		waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
		ids = append(ids, a.ID)
	}
	running := allocFor(c, job(state.JobTypeService, mock("x", map[string]any{"stdout_string": "out"})))
	fs.addAlloc(running)
	waitAllocStatus(t, fs, running.ID, state.AllocClientStatusRunning)
	if n := c.collect(); n != 1 {
		t.Fatalf("collected %d allocations, want 1 (3 terminal, at most 2 kept)", n)
	}
	if _, err := os.Stat(c.allocPath(ids[0])); !os.IsNotExist(err) {
		t.Fatalf("the oldest terminal allocation's dir is still there: %v", err)
	}
	for _, id := range append(ids[1:], running.ID) {
		if _, err := os.Stat(c.allocPath(id)); err != nil {
			t.Fatalf("alloc %s: %v", id, err)
		}
	}
	c.cfg.GCAllocAge = 0
	if n := c.collect(); n != 2 {
		t.Fatalf("collected %d aged allocations, want 2", n)
	}
	if _, err := os.Stat(c.allocPath(running.ID)); err != nil {
		t.Fatalf("the running allocation was collected: %v", err)
	}
}

// A list read before a collected allocation finished (the servers still
// have it running) does not start it again; once the servers no longer
// list it, the client forgets it was collected.
func TestCollectedAllocationIsNotStartedAgain(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "", func(cfg *Config) {
		cfg.GCInterval, cfg.GCAllocAge, cfg.GCMaxAllocs = time.Hour, time.Hour, 10
	})
	c.cfg.GCAllocAge = 0 // past the defaults: collect once terminal
	a := allocFor(c, job(state.JobTypeBatch, mock("x", map[string]any{"run_for": "1ms"})))
	fs.addAlloc(a)
	stale := fs.alloc(a.ID) // as listed before it ran
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	// The runner marks itself terminal once its report is out.
	testutil.WaitFor(t, 5*time.Second, "the allocation to be collected", func() bool { return c.collect() == 1 })
	c.syncAllocs([]*state.Allocation{stale}, stale.AllocModifyIndex)
	c.mu.Lock()
	_, restarted := c.runners[a.ID]
	remembered := c.collected[a.ID]
	c.mu.Unlock()
	if restarted || !remembered {
		t.Fatalf("after a stale list: runner started again %v, still known as collected %v", restarted, remembered)
	}
	c.syncAllocs(nil, stale.AllocModifyIndex+1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.collected[a.ID] {
		t.Fatal("the servers dropped the allocation, the client still remembers it")
	}
}

func waitPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testutil.WaitForErr(t, 5*time.Second, "pid in "+path, func() error {
		if pid = readPID(t, path); pid == 0 {
			return fmt.Errorf("no pid yet")
		}
		return nil
	})
	return pid
}

func TestInPlaceUpdateKeepsTheTaskRunning(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	task := sh("web", `echo $$ >> "$SCHED_ALLOC_DIR/pids"; exec sleep 300`)
	task.Templates = []*state.Template{{EmbeddedTmpl: `v={{ meta "v" }}`, DestPath: "local/conf", ChangeMode: "restart"}}
	j := job(state.JobTypeService, task)
	j.Meta = map[string]string{"v": "1"}
	j.Canonicalize()
	a := allocFor(c, j)
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	conf := allocPathOf(c, a.ID, "web", "local", "conf")
	if got := readFile(t, conf); got != "v=1" {
		t.Fatalf("rendered %q", got)
	}
	first := waitPID(t, allocPathOf(c, a.ID, "alloc", "pids"))

	// A new job version that changes only the env: the task keeps running.
	fs.mutateAlloc(a.ID, func(a *state.Allocation) {
		a.Job = a.Job.Copy()
		a.Job.Version++
		a.Job.TaskGroups[0].Tasks[0].Env = map[string]string{"NEW": "1"}
	})
	testutil.WaitForErr(t, 5*time.Second, "the runner to take the update", func() error {
		ar, _ := c.runner(a.ID)
		if ar.tasks[0].currentTask().Env["NEW"] != "1" {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if !pidAlive(first) || strings.Count(readFile(t, allocPathOf(c, a.ID, "alloc", "pids")), "\n") != 1 {
		t.Fatalf("the task was restarted by an update that needs no restart")
	}

	// A change the template reads re-renders it and restarts the task.
	fs.mutateAlloc(a.ID, func(a *state.Allocation) {
		a.Job = a.Job.Copy()
		a.Job.Version++
		a.Job.Meta = map[string]string{"v": "2"}
		a.Job.TaskGroups[0].Tasks[0].Templates[0].Splay = time.Millisecond
	})
	testutil.WaitForErr(t, 10*time.Second, "the template restart", func() error {
		if readFile(t, conf) != "v=2" {
			return fmt.Errorf("conf %q", readFile(t, conf))
		}
		if n := strings.Count(readFile(t, allocPathOf(c, a.ID, "alloc", "pids")), "\n"); n != 2 {
			return fmt.Errorf("%d starts", n)
		}
		return nil
	})
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	ts := got.TaskStates["web"]
	if eventOf(ts, "Template Rendered") == nil || ts.Restarts != 0 {
		t.Fatalf("%s", statusOf(got))
	}
	testutil.WaitForErr(t, 5*time.Second, "the old process to be gone", func() error {
		if pidAlive(first) {
			return fmt.Errorf("pid %d alive", first)
		}
		return nil
	})
}

func TestDispatchPayloadAndArtifacts(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	src := filepath.Join(t.TempDir(), "tool.txt")
	if err := os.WriteFile(src, []byte("artifact"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := sh("x", `cat local/input.json local/tool.txt > "$SCHED_ALLOC_DIR/out"`)
	task.DispatchPayload = &state.DispatchPayloadConfig{File: "input.json"}
	task.Artifacts = []*state.TaskArtifact{{GetterSource: "file://" + src}}
	j := job(state.JobTypeBatch, task)
	j.Payload = []byte(`{"n":1}`)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusComplete)
	if out := readFile(t, allocPathOf(c, a.ID, "alloc", "out")); out != `{"n":1}artifact` {
		t.Fatalf("task read %q; %s", out, statusOf(got))
	}
	if eventOf(got.TaskStates["x"], state.TaskDownloadingArtifacts) == nil {
		t.Fatalf("no Downloading Artifacts event: %s", statusOf(got))
	}
}

func TestArtifactFailureIsRecorded(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	task := mock("x", nil)
	task.Artifacts = []*state.TaskArtifact{{GetterSource: "file:///does/not/exist"}}
	j := job(state.JobTypeBatch, task)
	restartPolicy(j, 0, 0, time.Minute, state.RestartPolicyModeFail)
	a := allocFor(c, j)
	fs.addAlloc(a)
	got := waitAllocStatus(t, fs, a.ID, state.AllocClientStatusFailed)
	var failed bool
	for _, e := range got.TaskStates["x"].Events {
		failed = failed || (e.Type == state.TaskDownloadingArtifacts && e.DownloadError != "")
	}
	if !failed {
		t.Fatalf("%s", statusOf(got))
	}
}

// killGroup kills a task's process group from outside, as an operator's
// kill -9 would.
func killGroup(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
}

var _ = strconv.Itoa

func TestInPlaceUpdateRegistersServicesAgain(t *testing.T) {
	fs := newFakeServer(t)
	svcs := &fakeServices{}
	c := testClient(t, fs, "", func(cfg *Config) { cfg.Services = svcs })
	task := mock("web", nil)
	task.Services = []*state.Service{{Name: "web", Tags: []string{"v1"}}}
	a := allocFor(c, job(state.JobTypeService, task))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	fs.mutateAlloc(a.ID, func(a *state.Allocation) {
		a.Job = a.Job.Copy()
		a.Job.Version++
		a.Job.TaskGroups[0].Tasks[0].Services[0].Tags = []string{"v2"}
	})
	testutil.WaitForErr(t, 5*time.Second, "a second registration", func() error {
		n := 0
		for _, e := range svcs.log() {
			if e == "register web" {
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("%d registrations: %v", n, svcs.log())
		}
		return nil
	})
	if al, _ := c.Alloc(a.ID); al.TaskStates["web"].Restarts != 0 || eventOf(al.TaskStates["web"], state.TaskKilling) != nil {
		t.Fatalf("the update restarted the task: %s", statusOf(al))
	}
}

// The CPU's TotalTicks in allocation stats is the percent of the node's
// per-core speed; without a known speed, a core counts as 1000 MHz.
func TestPerCoreMHz(t *testing.T) {
	for _, tc := range []struct {
		node *state.Node
		want float64
	}{
		{nil, 1000},
		{&state.Node{}, 1000},
		{&state.Node{NodeResources: &state.NodeResources{CPU: 8000, Cores: 4}}, 2000},
	} {
		if got := perCoreMHz(tc.node); got != tc.want {
			t.Errorf("perCoreMHz(%+v) = %v, want %v", tc.node, got, tc.want)
		}
	}
}

// With ACLs on, a new node is introduced by the operator's token; after
// that it registers again with its own secret.
func TestClientRegistersWithIntroToken(t *testing.T) {
	fs := newFakeServer(t)
	const intro = "70000000-0000-4000-8000-000000000001"
	fs.mu.Lock()
	fs.introToken = intro
	fs.mu.Unlock()
	c := testClient(t, fs, "", func(cfg *Config) { cfg.IntroToken = intro })
	if _, err := c.register(context.Background()); err != nil {
		t.Fatalf("re-register: %v", err)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.registers != 2 || fs.introTokens != 1 {
		t.Errorf("registers %d, by intro token %d; want 2 and 1 (the second with the node's secret)", fs.registers, fs.introTokens)
	}
}
