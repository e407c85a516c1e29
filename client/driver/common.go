package driver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Errors shared by the drivers; compare with errors.Is.
var (
	// ErrTaskNotFound: the driver does not know the task ID.
	ErrTaskNotFound = errors.New("task not found")
	// ErrTaskExists: StartTask or RecoverTask for an ID the driver runs.
	ErrTaskExists = errors.New("task already exists")
	// ErrTaskGone: RecoverTask found no live task for the handle.
	ErrTaskGone = errors.New("task is gone")
	// ErrTaskRunning: DestroyTask without force on a running task.
	ErrTaskRunning = errors.New("task is still running")
	// ErrExitUnknown is the ExitResult.Err of a recovered raw_exec task
	// whose exit status could not be read (it was not our child; see
	// RawExec).
	ErrExitUnknown = errors.New("exit status unknown: the task was recovered after a client restart")
	// ErrBadConfig: the task's driver config is invalid.
	ErrBadConfig = errors.New("invalid driver config")
	// ErrOOMKilled is the ExitResult.Err of a task killed for going over
	// its memory limit; the task event reads "OOM Killed", as Nomad's.
	ErrOOMKilled = errors.New("OOM Killed")
)

// signals names the signals a job may use, without the SIG prefix.
var signals = map[string]syscall.Signal{
	"ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM, "BUS": syscall.SIGBUS,
	"CHLD": syscall.SIGCHLD, "CONT": syscall.SIGCONT, "FPE": syscall.SIGFPE,
	"HUP": syscall.SIGHUP, "ILL": syscall.SIGILL, "INT": syscall.SIGINT,
	"IO": syscall.SIGIO, "KILL": syscall.SIGKILL, "PIPE": syscall.SIGPIPE,
	"PROF": syscall.SIGPROF, "QUIT": syscall.SIGQUIT,
	"SEGV": syscall.SIGSEGV, "STOP": syscall.SIGSTOP, "SYS": syscall.SIGSYS,
	"TERM": syscall.SIGTERM, "TRAP": syscall.SIGTRAP, "TSTP": syscall.SIGTSTP,
	"TTIN": syscall.SIGTTIN, "TTOU": syscall.SIGTTOU, "URG": syscall.SIGURG,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "VTALRM": syscall.SIGVTALRM,
	"WINCH": syscall.SIGWINCH, "XCPU": syscall.SIGXCPU, "XFSZ": syscall.SIGXFSZ,
}

// ParseSignal reads a signal name: "SIGHUP", "HUP", "sighup" or a number
// such as "1". Empty is SIGINT, the default stop signal.
func ParseSignal(name string) (syscall.Signal, error) {
	if name == "" {
		return syscall.SIGINT, nil
	}
	if n, err := strconv.Atoi(name); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal number %d out of range", n)
		}
		return syscall.Signal(n), nil
	}
	s, ok := signals[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
	if !ok {
		return 0, fmt.Errorf("unknown signal %q", name)
	}
	return s, nil
}

// exitState is a task's exit: set once, delivered to every WaitTask
// channel. It holds no goroutine, so a driver can keep thousands.
type exitState struct {
	mu     sync.Mutex
	result *ExitResult
	done   chan struct{} // closed when result is set
	// waiters maps each pending WaitTask channel to the stop function of
	// its context.AfterFunc.
	waiters map[chan *ExitResult]func() bool
}

func newExitState() *exitState { return &exitState{done: make(chan struct{})} }

// set records r unless a result is already there, and delivers it. It
// reports whether r was the one recorded.
func (e *exitState) set(r *ExitResult) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.result != nil {
		return false
	}
	e.result = r
	close(e.done)
	for ch, stop := range e.waiters {
		stop()
		ch <- r
		close(ch)
	}
	e.waiters = nil
	return true
}

// get returns the result, or nil while the task runs.
func (e *exitState) get() *ExitResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.result
}

// wait returns a channel that receives the result once and is then
// closed. When ctx ends first the channel is closed without a value.
func (e *exitState) wait(ctx context.Context) <-chan *ExitResult {
	ch := make(chan *ExitResult, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.result != nil {
		ch <- e.result
		close(ch)
		return ch
	}
	if e.waiters == nil {
		e.waiters = make(map[chan *ExitResult]func() bool)
	}
	// AfterFunc starts a goroutine only if ctx ends, so an idle waiter
	// costs no goroutine.
	e.waiters[ch] = context.AfterFunc(ctx, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if _, ok := e.waiters[ch]; ok {
			delete(e.waiters, ch)
			close(ch)
		}
	})
	return ch
}

// waitFor waits up to d for the exit and reports whether it came.
func (e *exitState) waitFor(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-e.done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.done:
		return true
	case <-t.C:
		return false
	}
}

// configString reads a string field of a driver config.
func configString(cfg map[string]any, key string) (string, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s must be a string, not %T", ErrBadConfig, key, v)
	}
	return s, nil
}

// configStrings reads a field that is a string or a list of strings;
// numbers and booleans in the list are taken as their text.
func configStrings(cfg map[string]any, key string) ([]string, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []string:
		return x, nil
	case []any:
		out := make([]string, 0, len(x))
		for i, e := range x {
			switch v := e.(type) {
			case string:
				out = append(out, v)
			case float64, int, int64, uint64, bool:
				// HCL and JSON numbers and booleans read as their text,
				// as a list(string) attribute would convert them.
				out = append(out, fmt.Sprint(v))
			default:
				return nil, fmt.Errorf("%w: %s[%d] must be a string, not %T", ErrBadConfig, key, i, e)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %s must be a string or a list of strings, not %T", ErrBadConfig, key, v)
}

// configInt reads an integer field: a JSON number, a Go integer or a
// decimal string.
func configInt(cfg map[string]any, key string) (int, bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	bad := fmt.Errorf("%w: %s must be an integer, not %v", ErrBadConfig, key, v)
	switch x := v.(type) {
	case int:
		return x, true, nil
	case int64:
		return int(x), true, nil
	case uint64:
		return int(x), true, nil
	case float64:
		if x != float64(int(x)) {
			return 0, false, bad
		}
		return int(x), true, nil
	case string:
		n, err := strconv.Atoi(x)
		if err != nil {
			return 0, false, bad
		}
		return n, true, nil
	}
	return 0, false, bad
}

// configDuration reads a duration field: a string such as "1.5s", or a
// number of nanoseconds.
func configDuration(cfg map[string]any, key string) (time.Duration, bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	if s, isStr := v.(string); isStr {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, false, fmt.Errorf("%w: %s %q is not a duration such as \"10s\"", ErrBadConfig, key, s)
		}
		return d, true, nil
	}
	n, _, err := configInt(cfg, key)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("%w: %s must be a duration such as \"10s\"", ErrBadConfig, key)
	}
	return time.Duration(n), true, nil
}
