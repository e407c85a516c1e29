package docker

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schedhq/sched/client/driver"
)

// exitState is a task's exit: set once, seen by every waiter.
type exitState struct {
	mu     sync.Mutex
	result *driver.ExitResult
	done   chan struct{}
}

func newExitState() *exitState { return &exitState{done: make(chan struct{})} }

// set records r unless a result is there already.
func (e *exitState) set(r *driver.ExitResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.result != nil {
		return
	}
	e.result = r
	close(e.done)
}

// get is the result, nil while the task runs.
func (e *exitState) get() *driver.ExitResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.result
}

// wait returns a channel that receives the result once and is closed;
// when ctx ends first it is closed without a value.
func (e *exitState) wait(ctx context.Context) <-chan *driver.ExitResult {
	ch := make(chan *driver.ExitResult, 1)
	go func() {
		defer close(ch)
		select {
		case <-e.done:
			ch <- e.get()
		case <-ctx.Done():
		}
	}()
	return ch
}

// waitFor waits up to d for the exit and reports whether it came.
func (e *exitState) waitFor(d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-e.done:
		return true
	case <-t.C:
		select {
		case <-e.done:
			return true
		default:
			return false
		}
	}
}

// joinInside joins rel to dir, or returns "" when the result would leave
// dir.
func joinInside(dir, rel string) string {
	p := filepath.Join(dir, rel)
	if p != dir && !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
		return ""
	}
	return p
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
