package client

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

// Benchmarks of what a client does per allocation it starts (docs/scale.md,
// "The real client's path"): run with -benchmem, allocations are what the
// collector's share of a dev agent's CPU follows.
//
//	go test -run XXX -bench 'BuildEnv|JournalFrame|AllocLife|AllocStartBurst' -benchmem ./client/

// benchEnvInput is a count job's allocation with one mock task, as the
// client-path scenario places them.
func benchEnvInput() *envInput {
	task := &state.Task{Name: "web", Driver: "mock", Resources: &state.Resources{CPU: 100, MemoryMB: 64}}
	j := &state.Job{ID: "count", Name: "count", TaskGroups: []*state.TaskGroup{{Name: "g", Tasks: []*state.Task{task}}}}
	a := &state.Allocation{ID: "8d3f0c1e-1111-2222-3333-444455556666", Name: "count.g[517]", JobID: "count", Job: j, TaskGroup: "g", Namespace: "default",
		AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"web": {CPU: 100, MemoryMB: 64}}}}
	return &envInput{Alloc: a, Group: j.TaskGroups[0], Task: task, Node: &state.Node{ID: "n1", Name: "node-1", Datacenter: "dc1"}, Region: "global",
		IP: "10.0.0.5", AllocDir: "/d/alloc", TaskDir: "/d/web", LocalDir: "/d/web/local", SecretsDir: "/d/web/secrets"}
}

func BenchmarkBuildEnv(b *testing.B) {
	in := benchEnvInput()
	b.ReportAllocs()
	for b.Loop() {
		buildEnv(in)
	}
}

// benchRunRecord is a running mock task's durable state.
func benchRunRecord() *journalRecord {
	now := time.Now()
	ts := &state.TaskState{State: state.TaskStateRunning, StartedAt: now}
	ts.Events = append(ts.Events, eventReceived(now), eventSetup(now), eventStarted(now))
	return &journalRecord{ID: "8d3f0c1e-1111-2222-3333-444455556666", Run: &persistedRun{Tasks: map[string]*persistedTask{
		"web": {State: ts, Handle: &driver.TaskHandle{TaskID: "8d3f0c1e/web", Driver: "mock", StartedAt: now, State: []byte(`{"a":1}`)}, Restart: restartWindow{Start: now}},
	}}}
}

func benchFrame(b *testing.B, rec *journalRecord) {
	s := &stateStore{}
	b.ReportAllocs()
	for b.Loop() {
		s.mu.Lock()
		s.pending = s.pending[:0]
		if err := s.frameLocked(rec); err != nil {
			b.Fatal(err)
		}
		s.mu.Unlock()
	}
}

// BenchmarkJournalFrameAlloc frames a task start's first record: the
// allocation (its job's encoding reused) and the runner's state.
func BenchmarkJournalFrameAlloc(b *testing.B) {
	rec := benchRunRecord()
	rec.Alloc = benchEnvInput().Alloc
	benchFrame(b, rec)
}

// BenchmarkJournalFrameRun frames a later task change: the runner's
// state alone.
func BenchmarkJournalFrameRun(b *testing.B) { benchFrame(b, benchRunRecord()) }

// benchMockClient is a client with the mock driver, its servers
// unreachable (nothing is sent), shut down when b ends; and a count job's
// allocation of a mock task to run on it.
func benchMockClient(b *testing.B) (*Client, *state.Allocation) {
	c, err := New(Config{
		DataDir: b.TempDir(), Servers: []string{"http://127.0.0.1:1"},
		Drivers: []driver.Driver{driver.NewMock()}, MaxKillTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Shutdown() })
	in := benchEnvInput()
	in.Task.Config = map[string]any{}
	in.Alloc.Job.Type = state.JobTypeService
	in.Alloc.DesiredStatus = state.AllocDesiredStatusRun
	return c, in.Alloc
}

// BenchmarkAllocLife runs one count-job allocation of a mock task on a
// client, from its runner's creation until it runs, then stops and
// destroys it: what the client spends per allocation but for the watch's
// decoding and the reports' requests (its reports are only read, as
// the updater reads them when a batch goes).
func BenchmarkAllocLife(b *testing.B) {
	c, alloc := benchMockClient(b)
	b.ReportAllocs()
	for b.Loop() {
		a := *alloc
		a.ID = state.NewID()
		ar := newAllocRunner(c, &a, nil)
		c.runAlloc(ar)
		<-ar.tasks[0].started
		if ar.tasks[0].snapshot().State.State != state.TaskStateRunning {
			b.Fatalf("task %+v", ar.tasks[0].snapshot().State)
		}
		for _, up := range c.updater.take() {
			if up.ClientStatus == "" {
				b.Fatal("empty report")
			}
		}
		ar.destroy()
		c.updater.take()
	}
}

// BenchmarkAllocStartBurst starts 256 count-job allocations of a mock
// task at once, as a watch answer of that many placements does, and waits
// until every one runs; their reports are read as a batch reads them. Per
// operation: one burst (ns/op over 256 is the client's cost per start).
// The runners are destroyed outside the timing.
func BenchmarkAllocStartBurst(b *testing.B) {
	c, alloc := benchMockClient(b)
	const burst = 256
	b.ReportAllocs()
	runners := make([]*allocRunner, burst)
	for b.Loop() {
		for i := range runners {
			a := *alloc
			a.ID = state.NewID()
			runners[i] = newAllocRunner(c, &a, nil)
			c.runAlloc(runners[i])
		}
		for _, ar := range runners {
			<-ar.tasks[0].started
		}
		if n := len(c.updater.take()); n != burst {
			b.Fatalf("%d reports, want %d", n, burst)
		}
		b.StopTimer()
		for _, ar := range runners {
			ar.destroy()
		}
		c.updater.take()
		b.StartTimer()
	}
}
