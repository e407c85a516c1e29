package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/schedhq/sched/client/driver/logrotate"
	"github.com/schedhq/sched/state"
)

// MockName is the mock driver's name.
const MockName = "mock"

var _ Driver = (*Mock)(nil)

// Mock simulates tasks without processes, for tests and scale runs. A
// running mock task costs a few hundred bytes and at most one timer: no
// goroutine, so a client can run thousands.
//
// Config (every key optional):
//
//	run_for         duration ("10s"): the task exits on its own after it;
//	                absent means it runs until stopped, "0s" that it exits
//	                at once
//	exit_code       integer: the exit code when run_for ends (default 0)
//	start_error     string: StartTask fails with this message
//	start_block_for duration: StartTask takes this long before it returns
//	kill_after      duration: the task ignores its stop signal for this
//	                long, so a StopTask with a shorter timeout ends in a kill
//	stdout_string   string: written once to the stdout log at start
//	stderr_string   string: written once to the stderr log at start
//	signal_error    string: SignalTask fails with this message
//
// A stopped task exits as if by the stop signal (Signal set, ExitCode
// 128+signal), a killed one by SIGKILL. Signals sent with SignalTask do
// nothing but are recorded (Signals).
//
// RecoverTask re-creates a task from its handle as if it had kept running
// while the client was away: it fails (ErrTaskGone) when run_for has
// passed since the start.
type Mock struct {
	mu    sync.Mutex
	tasks map[string]*mockTask
}

// NewMock returns a mock driver.
func NewMock() *Mock { return &Mock{tasks: make(map[string]*mockTask)} }

// mockConfig is a parsed mock task config.
type mockConfig struct {
	RunFor        time.Duration
	HasRunFor     bool
	ExitCode      int
	StartError    string
	StartBlockFor time.Duration
	KillAfter     time.Duration
	StdoutString  string
	StderrString  string
	SignalError   string
}

// mockHandleState is the driver-specific part of a mock TaskHandle.
type mockHandleState struct {
	Config map[string]any `json:"config"`
}

// mockHandleJSON is the JSON of mockHandleState{Config: config}, as
// encoding/json writes it. A config of plain strings (run_for and the
// like: what scale runs start by the thousand) is written directly,
// without encoding/json's reflection over the map.
func mockHandleJSON(config map[string]any) ([]byte, error) {
	if len(config) > 4 {
		return json.Marshal(mockHandleState{Config: config})
	}
	var kbuf [4]string
	keys := kbuf[:0]
	n := len(`{"config":{}}`)
	for k, v := range config {
		sv, ok := v.(string)
		if !ok || !plainJSON(k) || !plainJSON(sv) {
			return json.Marshal(mockHandleState{Config: config})
		}
		keys = append(keys, k)
		n += len(k) + len(sv) + 6
	}
	if config == nil {
		return []byte(`{"config":null}`), nil
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	b = append(b, `{"config":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), k...), `":"`...)
		b = append(append(b, config[k].(string)...), '"')
	}
	return append(b, "}}"...), nil
}

// plainJSON reports whether s is written in JSON as it is, between
// quotes: printable ASCII that encoding/json does not escape.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// mockTask is one simulated task.
type mockTask struct {
	cfg       mockConfig
	startedAt time.Time
	exit      *exitState

	mu      sync.Mutex
	timer   *time.Timer // ends run_for; nil when none
	signals []string
}

// parseMockConfig reads a task's mock config.
func parseMockConfig(raw map[string]any) (mockConfig, error) {
	var c mockConfig
	var err error
	if c.RunFor, c.HasRunFor, err = configDuration(raw, "run_for"); err != nil {
		return c, err
	}
	if c.ExitCode, _, err = configInt(raw, "exit_code"); err != nil {
		return c, err
	}
	if c.StartBlockFor, _, err = configDuration(raw, "start_block_for"); err != nil {
		return c, err
	}
	if c.KillAfter, _, err = configDuration(raw, "kill_after"); err != nil {
		return c, err
	}
	for key, dst := range map[string]*string{
		"start_error": &c.StartError, "stdout_string": &c.StdoutString,
		"stderr_string": &c.StderrString, "signal_error": &c.SignalError,
	} {
		if *dst, err = configString(raw, key); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Name implements Driver.
func (m *Mock) Name() string { return MockName }

// Fingerprint implements Driver: the mock driver is always healthy.
func (m *Mock) Fingerprint() *state.DriverInfo {
	return &state.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy",
		Attributes: map[string]string{"driver.mock": "1"}}
}

// StartTask implements Driver.
func (m *Mock) StartTask(cfg *TaskConfig) (*TaskHandle, error) {
	c, err := parseMockConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	if c.StartBlockFor > 0 {
		time.Sleep(c.StartBlockFor) // the simulated slow start
	}
	if c.StartError != "" {
		return nil, errors.New(c.StartError)
	}
	hs, err := mockHandleJSON(cfg.Config)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if err := m.add(cfg.ID, c, now, c.RunFor); err != nil {
		return nil, err
	}
	if c.StdoutString != "" || c.StderrString != "" {
		writeMockLogs(cfg, c)
	}
	return &TaskHandle{TaskID: cfg.ID, Driver: MockName, StartedAt: now, State: hs}, nil
}

// add registers a task that ends after runFor (when the config has
// run_for).
func (m *Mock) add(id string, c mockConfig, startedAt time.Time, runFor time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[id]; ok {
		return fmt.Errorf("%s: %w", id, ErrTaskExists)
	}
	t := &mockTask{cfg: c, startedAt: startedAt, exit: newExitState()}
	if c.HasRunFor {
		t.mu.Lock()
		t.timer = time.AfterFunc(runFor, func() { t.exit.set(&ExitResult{ExitCode: c.ExitCode}) })
		t.mu.Unlock()
	}
	m.tasks[id] = t
	return nil
}

// writeMockLogs writes stdout_string and stderr_string once, through the
// same rotated files raw_exec uses. A failure is not the task's: it is
// ignored, like output a real task could not write.
func writeMockLogs(cfg *TaskConfig, c mockConfig) {
	s := newLogSpec(cfg)
	if s.Disabled {
		return
	}
	for stream, text := range map[string]string{"stdout": c.StdoutString, "stderr": c.StderrString} {
		if text == "" {
			continue
		}
		r, err := logrotate.New(logrotate.Config{Dir: s.Dir, Name: s.Task + "." + stream,
			MaxFiles: s.MaxFiles, MaxFileSize: s.MaxFileSize})
		if err != nil {
			continue
		}
		r.Write([]byte(text))
		r.Close()
	}
}

// task finds a task by ID.
func (m *Mock) task(id string) (*mockTask, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, fmt.Errorf("%s: %w", id, ErrTaskNotFound)
	}
	return t, nil
}

// RecoverTask implements Driver.
func (m *Mock) RecoverTask(h *TaskHandle) error {
	var hs mockHandleState
	if err := json.Unmarshal(h.State, &hs); err != nil {
		return fmt.Errorf("mock handle of %s: %w", h.TaskID, err)
	}
	c, err := parseMockConfig(hs.Config)
	if err != nil {
		return err
	}
	left := c.RunFor - time.Since(h.StartedAt)
	if c.HasRunFor && left <= 0 {
		return fmt.Errorf("%s ran for %s: %w", h.TaskID, c.RunFor, ErrTaskGone)
	}
	return m.add(h.TaskID, c, h.StartedAt, left)
}

// WaitTask implements Driver. When ctx ends first, the channel is closed
// without a value.
func (m *Mock) WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error) {
	t, err := m.task(taskID)
	if err != nil {
		return nil, err
	}
	return t.exit.wait(ctx), nil
}

// end makes t exit with r now, unless it already has.
func (t *mockTask) end(r *ExitResult) {
	t.mu.Lock()
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	t.exit.set(r)
}

// StopTask implements Driver. Without kill_after the task exits at once
// by signal; with it, it exits kill_after later, or is killed when timeout
// comes first. It returns once the task has exited.
func (m *Mock) StopTask(taskID string, timeout time.Duration, signal string) error {
	t, err := m.task(taskID)
	if err != nil {
		return err
	}
	sig, err := ParseSignal(signal)
	if err != nil {
		return err
	}
	if t.exit.get() != nil {
		return nil
	}
	byStop := &ExitResult{ExitCode: 128 + int(sig), Signal: int(sig)}
	if t.cfg.KillAfter <= 0 {
		t.end(byStop)
		return nil
	}
	if t.cfg.KillAfter <= timeout {
		grace := time.AfterFunc(t.cfg.KillAfter, func() { t.end(byStop) })
		defer grace.Stop()
	}
	if t.exit.waitFor(timeout) {
		return nil
	}
	t.end(&ExitResult{ExitCode: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)})
	return nil
}

// SignalTask implements Driver: it records the signal, or fails with
// signal_error.
func (m *Mock) SignalTask(taskID string, signal string) error {
	t, err := m.task(taskID)
	if err != nil {
		return err
	}
	if _, err := ParseSignal(signal); err != nil {
		return err
	}
	if t.exit.get() != nil {
		return fmt.Errorf("signal %s: task has exited", taskID)
	}
	if t.cfg.SignalError != "" {
		return errors.New(t.cfg.SignalError)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.signals = append(t.signals, signal)
	return nil
}

// Signals are the signals SignalTask delivered to the task, in order.
func (m *Mock) Signals(taskID string) ([]string, error) {
	t, err := m.task(taskID)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.signals...), nil
}

// DestroyTask implements Driver.
func (m *Mock) DestroyTask(taskID string, force bool) error {
	t, err := m.task(taskID)
	if err != nil {
		return err
	}
	if t.exit.get() == nil {
		if !force {
			return fmt.Errorf("destroy %s: %w", taskID, ErrTaskRunning)
		}
		t.end(&ExitResult{ExitCode: 128 + int(syscall.SIGKILL), Signal: int(syscall.SIGKILL)})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tasks, taskID)
	return nil
}

// UsesTaskDirs reports whether a task with config uses its allocation's
// directories: only its stdout_string and stderr_string are written
// there (the client builds them lazily for the drivers that tell it).
func (m *Mock) UsesTaskDirs(config map[string]any) bool {
	for _, k := range []string{"stdout_string", "stderr_string"} {
		if s, _ := config[k].(string); s != "" {
			return true
		}
	}
	return false
}

// Stats implements Driver: a mock task uses nothing.
func (m *Mock) Stats(taskID string) (*state.TaskResourceUsage, error) {
	t, err := m.task(taskID)
	if err != nil {
		return nil, err
	}
	if t.exit.get() != nil {
		return nil, fmt.Errorf("stats %s: task has exited", taskID)
	}
	return measured(0, 0, 0, time.Now()), nil
}
