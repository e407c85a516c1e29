package driver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/state"
)

// mockCfg is a mock task config with logs in a temporary directory.
func mockCfg(t *testing.T, id string, conf map[string]any) *TaskConfig {
	return &TaskConfig{ID: id, TaskName: "web", Config: conf, LogDir: t.TempDir(),
		LogConfig: &state.LogConfig{MaxFiles: 2, MaxFileSizeMB: 1}}
}

// startMock starts a mock task and returns its exit channel.
func startMock(t *testing.T, m *Mock, cfg *TaskConfig) <-chan *ExitResult {
	t.Helper()
	if _, err := m.StartTask(cfg); err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	ch, err := m.WaitTask(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// exitAt waits (in fake time) for the exit and returns it with how long
// it took.
func exitAt(t *testing.T, ch <-chan *ExitResult, since time.Time) (*ExitResult, time.Duration) {
	t.Helper()
	r, ok := <-ch
	if !ok {
		t.Fatal("exit channel closed without a result")
	}
	return r, time.Since(since)
}

func TestMockRunForAndExitCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMock()
		began := time.Now()
		ch := startMock(t, m, mockCfg(t, "a/web", map[string]any{"run_for": "10s", "exit_code": float64(3)}))
		r, took := exitAt(t, ch, began)
		if r.ExitCode != 3 || r.Signal != 0 || took != 10*time.Second {
			t.Fatalf("exit %+v after %s, want code 3 after 10s", r, took)
		}
		// Late waiters get the same result.
		late, _ := m.WaitTask(context.Background(), "a/web")
		if r2 := <-late; r2 != r {
			t.Fatalf("late waiter got %+v", r2)
		}

		zero := startMock(t, m, mockCfg(t, "b/web", map[string]any{"run_for": "0s"}))
		if r, took := exitAt(t, zero, time.Now()); !r.Successful() || took != 0 {
			t.Fatalf("run_for 0: %+v after %s", r, took)
		}
	})
}

func TestMockRunsUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMock()
		ch := startMock(t, m, mockCfg(t, "a/web", nil))
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case r := <-ch:
			t.Fatalf("task without run_for exited: %+v", r)
		default:
		}
		if u, err := m.Stats("a/web"); err != nil || u.Timestamp == 0 {
			t.Fatalf("stats %+v, %v", u, err)
		}
		began := time.Now()
		if err := m.StopTask("a/web", 5*time.Second, "SIGTERM"); err != nil {
			t.Fatal(err)
		}
		r, took := exitAt(t, ch, began)
		if r.Signal != int(syscall.SIGTERM) || took != 0 {
			t.Fatalf("stop: %+v after %s", r, took)
		}
		if _, err := m.Stats("a/web"); err == nil {
			t.Fatal("stats of an exited task")
		}
		if err := m.StopTask("a/web", time.Second, ""); err != nil {
			t.Fatalf("stopping an exited task: %v", err)
		}
	})
}

func TestMockKillAfter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		sig     int
		took    time.Duration
	}{
		{"exits within the timeout", 5 * time.Second, int(syscall.SIGINT), 2 * time.Second},
		{"killed at the timeout", time.Second, int(syscall.SIGKILL), time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := NewMock()
				ch := startMock(t, m, mockCfg(t, "a/web", map[string]any{"kill_after": "2s"}))
				began := time.Now()
				if err := m.StopTask("a/web", tc.timeout, ""); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(began); took != tc.took {
					t.Fatalf("StopTask returned after %s, want %s", took, tc.took)
				}
				if r, _ := exitAt(t, ch, began); r.Signal != tc.sig {
					t.Fatalf("exit %+v, want signal %d", r, tc.sig)
				}
			})
		})
	}
}

func TestMockStartOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMock()
		if _, err := m.StartTask(mockCfg(t, "a/web", map[string]any{"start_error": "no luck"})); err == nil || err.Error() != "no luck" {
			t.Fatalf("start_error: %v", err)
		}
		if _, err := m.WaitTask(context.Background(), "a/web"); !errors.Is(err, ErrTaskNotFound) {
			t.Fatalf("failed start registered the task: %v", err)
		}
		began := time.Now()
		if _, err := m.StartTask(mockCfg(t, "b/web", map[string]any{"start_block_for": "3s"})); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took != 3*time.Second {
			t.Fatalf("start_block_for 3s took %s", took)
		}
		if _, err := m.StartTask(mockCfg(t, "b/web", nil)); !errors.Is(err, ErrTaskExists) {
			t.Fatalf("duplicate start: %v", err)
		}
		for _, bad := range []map[string]any{
			{"run_for": "soon"}, {"exit_code": "three"}, {"exit_code": 1.5}, {"kill_after": true}, {"stdout_string": 7},
		} {
			if _, err := m.StartTask(mockCfg(t, "c/web", bad)); !errors.Is(err, ErrBadConfig) {
				t.Errorf("config %v: %v, want ErrBadConfig", bad, err)
			}
		}
	})
}

func TestMockOutput(t *testing.T) {
	m := NewMock()
	cfg := mockCfg(t, "a/web", map[string]any{"stdout_string": "hello\n", "stderr_string": "oops\n", "run_for": "0s"})
	ch := startMock(t, m, cfg)
	<-ch
	for stream, want := range map[string]string{"stdout": "hello\n", "stderr": "oops\n"} {
		if b, err := os.ReadFile(filepath.Join(cfg.LogDir, "web."+stream+".0")); err != nil || string(b) != want {
			t.Fatalf("%s: %q, %v", stream, b, err)
		}
	}
	off := mockCfg(t, "b/web", map[string]any{"stdout_string": "hello\n"})
	off.LogConfig.Disabled = true
	startMock(t, m, off)
	if entries, _ := os.ReadDir(off.LogDir); len(entries) != 0 {
		t.Fatalf("disabled logs written: %v", entries)
	}
}

func TestMockSignals(t *testing.T) {
	m := NewMock()
	startMock(t, m, mockCfg(t, "a/web", nil))
	startMock(t, m, mockCfg(t, "b/web", map[string]any{"signal_error": "deaf"}))
	for _, sig := range []string{"SIGHUP", "SIGUSR1"} {
		if err := m.SignalTask("a/web", sig); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := m.Signals("a/web"); len(got) != 2 || got[0] != "SIGHUP" || got[1] != "SIGUSR1" {
		t.Fatalf("signals %v", got)
	}
	if err := m.SignalTask("b/web", "SIGHUP"); err == nil || err.Error() != "deaf" {
		t.Fatalf("signal_error: %v", err)
	}
	if err := m.SignalTask("a/web", "SIGWHAT"); err == nil {
		t.Fatal("unknown signal accepted")
	}
	if err := m.SignalTask("zzz", "SIGHUP"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestMockRecoverAndDestroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m1 := NewMock()
		h, err := m1.StartTask(mockCfg(t, "a/web", map[string]any{"run_for": "10s", "exit_code": 4}))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Second)
		m2 := NewMock()
		if err := m2.RecoverTask(h); err != nil {
			t.Fatal(err)
		}
		ch, _ := m2.WaitTask(context.Background(), "a/web")
		r, took := exitAt(t, ch, time.Now())
		if r.ExitCode != 4 || took != 6*time.Second {
			t.Fatalf("recovered task: %+v after %s, want code 4 after the 6s left", r, took)
		}
		if err := NewMock().RecoverTask(h); !errors.Is(err, ErrTaskGone) {
			t.Fatalf("recovering a task past its run_for: %v", err)
		}

		startMock(t, m2, mockCfg(t, "b/web", nil))
		if err := m2.DestroyTask("b/web", false); !errors.Is(err, ErrTaskRunning) {
			t.Fatalf("destroy running without force: %v", err)
		}
		ch, _ = m2.WaitTask(context.Background(), "b/web")
		if err := m2.DestroyTask("b/web", true); err != nil {
			t.Fatal(err)
		}
		if r := <-ch; r.Signal != int(syscall.SIGKILL) {
			t.Fatalf("forced destroy: %+v", r)
		}
		if _, err := m2.Stats("b/web"); !errors.Is(err, ErrTaskNotFound) {
			t.Fatalf("destroyed task still known: %v", err)
		}
	})
}

// TestMockThousandTasksNoGoroutines checks the scale promise: a running mock
// task, waited on, holds no goroutine.
func TestMockThousandTasksNoGoroutines(t *testing.T) {
	m := NewMock()
	before := runtime.NumGoroutine()
	chans := make([]<-chan *ExitResult, 1000)
	for i := range chans {
		cfg := &TaskConfig{ID: "t" + strconv.Itoa(i), TaskName: "web", Config: map[string]any{"run_for": "1h"}}
		if _, err := m.StartTask(cfg); err != nil {
			t.Fatal(err)
		}
		chans[i], _ = m.WaitTask(context.Background(), cfg.ID)
	}
	if grew := runtime.NumGoroutine() - before; grew > 5 {
		t.Fatalf("1000 mock tasks added %d goroutines", grew)
	}
	for i := range chans {
		if err := m.StopTask("t"+strconv.Itoa(i), time.Second, ""); err != nil {
			t.Fatal(err)
		}
		if r := <-chans[i]; r.Signal != int(syscall.SIGINT) {
			t.Fatalf("task %d: %+v", i, r)
		}
	}
}

func TestCatalog(t *testing.T) {
	c := Builtin(nil)
	if got := c.Names(); len(got) != 2 || got[0] != MockName || got[1] != RawExecName {
		t.Fatalf("names %v", got)
	}
	if d, err := c.Lookup(RawExecName); err != nil || d.Name() != RawExecName {
		t.Fatalf("lookup: %v, %v", d, err)
	}
	if _, err := c.Lookup("docker"); err == nil {
		t.Fatal("unknown driver found")
	}
	fp := c.Fingerprint()
	if !fp[MockName].Healthy || !fp[RawExecName].Detected {
		t.Fatalf("fingerprints %+v", fp)
	}
	if l := c.List(); len(l) != 2 || l[0].Name() != MockName {
		t.Fatalf("list %v", l)
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]syscall.Signal{
		"": syscall.SIGINT, "SIGTERM": syscall.SIGTERM, "hup": syscall.SIGHUP, "sigusr2": syscall.SIGUSR2, "9": syscall.SIGKILL,
	} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"SIGFOO", "0", "99", "-1"} {
		if _, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q) accepted", bad)
		}
	}
}

// BenchmarkMockTasks starts b.N mock tasks, each waited on, and reports the
// heap each running task holds and the goroutines it adds.
func BenchmarkMockTasks(b *testing.B) {
	m := NewMock()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	chans := make([]<-chan *ExitResult, 0, b.N)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := map[string]any{"run_for": "1h"}
	b.ResetTimer()
	for i := range b.N {
		id := "t" + strconv.Itoa(i)
		if _, err := m.StartTask(&TaskConfig{ID: id, TaskName: "web", Config: cfg}); err != nil {
			b.Fatal(err)
		}
		ch, _ := m.WaitTask(ctx, id)
		chans = append(chans, ch)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heapB/task")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(b.N), "goroutines/task")
	for i := range chans {
		m.DestroyTask("t"+strconv.Itoa(i), true)
	}
}

// The mock handle's state is what encoding/json writes for it, whether
// written directly (plain strings) or not.
func TestMockHandleJSONIsEncodingJSONs(t *testing.T) {
	for _, cfg := range []map[string]any{
		nil, {}, {"run_for": "1s"}, {"run_for": "1s", "exit_code": "3", "a": "", "b": "x y"},
		{"run_for": "1s", "exit_code": 3}, {"s": "quote\"<&>"}, {"s": "é"}, {"s": "\n"},
		{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}, {"nested": map[string]any{"x": []any{1, "y"}}},
	} {
		want, err := json.Marshal(mockHandleState{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		got, err := mockHandleJSON(cfg)
		if err != nil || string(got) != string(want) {
			t.Errorf("config %v: %s, %v; want %s", cfg, got, err, want)
		}
	}
}
