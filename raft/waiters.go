package raft

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// appliedIndex is the index of the last log entry the FSM has applied, with
// a wait list of readers that need it to pass some index. The FSM apply path
// advances it and wakes exactly the waiters it satisfied, so a thousand
// blocked readers cost nothing per applied batch beyond those woken.
type appliedIndex struct {
	index atomic.Uint64 // read without the lock on the fast path

	mu      sync.Mutex
	waiters waiterHeap // ordered by index, smallest first
}

// indexWaiter is one blocked reader. ch is closed when the index is reached.
type indexWaiter struct {
	index uint64
	ch    chan struct{}
	pos   int // position in the heap; -1 once removed
}

func (a *appliedIndex) load() uint64 { return a.index.Load() }

// set records that the FSM has applied everything up to index and wakes the
// waiters that asked for index or less. A restore may move it backwards in
// principle; waiters already woken stay woken.
func (a *appliedIndex) set(index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.index.Store(index)
	for len(a.waiters) > 0 && a.waiters[0].index <= index {
		w := heap.Pop(&a.waiters).(*indexWaiter)
		close(w.ch)
	}
}

// wait registers a waiter for index. It returns nil when index has already
// been applied. A waiter that gives up must call cancel.
func (a *appliedIndex) wait(index uint64) *indexWaiter {
	if a.index.Load() >= index {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.index.Load() >= index {
		return nil
	}
	w := &indexWaiter{index: index, ch: make(chan struct{})}
	heap.Push(&a.waiters, w)
	return w
}

// cancel removes w if it is still waiting, so abandoned waits for an index
// that is never reached do not pile up.
func (a *appliedIndex) cancel(w *indexWaiter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.pos >= 0 {
		heap.Remove(&a.waiters, w.pos)
	}
}

// waiterHeap implements heap.Interface over waiters by index.
type waiterHeap []*indexWaiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].index < h[j].index }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos = i
	h[j].pos = j
}

func (h *waiterHeap) Push(x any) {
	w := x.(*indexWaiter)
	w.pos = len(*h)
	*h = append(*h, w)
}

func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.pos = -1
	return w
}

// broadcast wakes everyone waiting for "something changed" (here: who the
// leader is). Waiters take the channel, re-check their condition, then block
// on it; notify closes it and the next changed call makes a fresh one.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcast) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
