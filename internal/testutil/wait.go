package testutil

import (
	"errors"
	"testing"
	"time"
)

// pollInterval bounds how often a wait checks its condition. The waits
// are for conditions nothing signals (a process exiting, a log line
// arriving); where something does signal, wait on that instead.
const pollInterval = 10 * time.Millisecond

// WaitFor checks cond until it returns true, and fails t (naming what it
// was waiting for) when timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := poll(timeout, func() error {
		if cond() {
			return nil
		}
		return errFalse
	}); err != nil {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// WaitForErr checks cond until it returns nil, and fails t (naming what
// it was waiting for, with cond's last error) when timeout passes first.
func WaitForErr(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := poll(timeout, cond); err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// errFalse is the error of a boolean condition that does not hold yet.
var errFalse = errors.New("condition is false")

// poll calls cond at once and then every pollInterval until it returns
// nil or timeout passes, and returns its last error. The first checks
// come sooner, so a condition that holds almost at once costs little.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	interval := time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		tick := time.NewTimer(interval)
		select {
		case <-deadline.C:
			tick.Stop()
			return err
		case <-tick.C:
		}
		interval = min(2*interval, pollInterval)
	}
}
