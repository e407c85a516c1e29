package testutil

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records a wait's failure; Fatalf ends the calling goroutine as
// testing.T's does.
type fakeT struct {
	testing.TB
	failure string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait with a fakeT in its own goroutine and returns the
// failure it reported, if any.
func run(wait func(t testing.TB)) string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(f)
	}()
	<-done
	return f.failure
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	failure := run(func(t testing.TB) {
		WaitFor(t, 10*time.Second, "the third call", func() bool { return calls.Add(1) == 3 })
	})
	if failure != "" || calls.Load() != 3 {
		t.Errorf("failure %q after %d calls", failure, calls.Load())
	}
}

func TestWaitForFailsWithWhatItWaitedFor(t *testing.T) {
	failure := run(func(t testing.TB) {
		WaitFor(t, 20*time.Millisecond, "a condition that never holds", func() bool { return false })
	})
	if !strings.Contains(failure, "waiting for a condition that never holds") || !strings.Contains(failure, "20ms") {
		t.Errorf("failure %q", failure)
	}
}

func TestWaitForErrReportsTheLastError(t *testing.T) {
	var calls atomic.Int32
	failure := run(func(t testing.TB) {
		WaitForErr(t, 20*time.Millisecond, "the server", func() error {
			return fmt.Errorf("attempt %d refused", calls.Add(1))
		})
	})
	if want := fmt.Sprintf("waiting for the server: attempt %d refused", calls.Load()); !strings.HasSuffix(failure, want) {
		t.Errorf("failure %q, want it to end in %q", failure, want)
	}
	var ok atomic.Bool
	failure = run(func(t testing.TB) {
		WaitForErr(t, 10*time.Second, "the flag", func() error {
			if ok.Swap(true) {
				return nil
			}
			return errors.New("not set")
		})
	})
	if failure != "" {
		t.Errorf("failure %q", failure)
	}
}
