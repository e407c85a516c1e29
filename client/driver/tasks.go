package driver

import (
	"fmt"
	"sync"
)

// taskTable is a process driver's tasks by ID (raw_exec's and exec's). An
// ID is reserved (a nil entry) while its task is being started or
// recovered, so that two starts of one ID cannot race, and then committed
// with the task, or freed when the start failed.
type taskTable[T any] struct {
	mu    sync.Mutex
	tasks map[string]*T
}

// get finds a task by ID; a reserved ID is not found yet.
func (tt *taskTable[T]) get(id string) (*T, error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t := tt.tasks[id]
	if t == nil {
		return nil, fmt.Errorf("%s: %w", id, ErrTaskNotFound)
	}
	return t, nil
}

// reserve claims id for a task being started or recovered.
func (tt *taskTable[T]) reserve(id string) error {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if _, ok := tt.tasks[id]; ok {
		return fmt.Errorf("%s: %w", id, ErrTaskExists)
	}
	if tt.tasks == nil {
		tt.tasks = make(map[string]*T)
	}
	tt.tasks[id] = nil
	return nil
}

// commit stores t under its reserved ID, or frees the ID when t is nil.
func (tt *taskTable[T]) commit(id string, t *T) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if t == nil {
		delete(tt.tasks, id)
		return
	}
	tt.tasks[id] = t
}

// locked runs fn with the table held: fn sees every task started or
// recovered so far (nil for the ones still starting), and no start ends
// while it runs.
func (tt *taskTable[T]) locked(fn func(tasks map[string]*T)) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	fn(tt.tasks)
}
