package http

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedhq/sched/state/store"
)

// In-memory doubles of the consensus layer, for tests of this package and
// of the management API mounted on it: a server over a real store, with
// no Raft.

// MemWriter is the in-memory Writer: one command, one log index.
type MemWriter struct {
	mu    sync.Mutex
	store *store.Store
	index uint64
	// Applied counts the commands that reached the store, failed or not.
	Applied int
	// Err, when set, is returned without touching the store, as a writer
	// does when there is no leader.
	Err error
}

var _ Writer = (*MemWriter)(nil)

// NewMemWriter returns a writer whose next command gets the index after
// the store's latest.
func NewMemWriter(store *store.Store) *MemWriter {
	return &MemWriter{store: store, index: store.LatestIndex()}
}

// Apply encodes req as a log entry and applies it at the next index. An
// error answered by the state machine comes back as err, as from Raft.
func (w *MemWriter) Apply(_ context.Context, t store.MessageType, req any) (any, uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Err != nil {
		return nil, 0, w.Err
	}
	data, err := store.Prepare(t, req)
	if err != nil {
		return nil, 0, err
	}
	w.index++
	w.Applied++
	resp := w.store.Apply(w.index, data)
	if err, ok := resp.(error); ok {
		return nil, w.index, err
	}
	return resp, w.index, nil
}

// FakeCluster is a leader that always knows itself; ReadBarrier answers
// the error set by FailBarrier (nil before) and counts its calls in
// BarrierCalls.
type FakeCluster struct {
	barrierErr   atomic.Pointer[error]
	BarrierCalls atomic.Int64
	// OnBarrier, when set, runs in every ReadBarrier before it answers:
	// what a follower applies while it catches up with the leader.
	OnBarrier func()
}

var _ Cluster = (*FakeCluster)(nil)

// KnownLeader is always true.
func (c *FakeCluster) KnownLeader() bool { return true }

// LastContact is always zero: this server is the leader.
func (c *FakeCluster) LastContact() time.Duration { return 0 }

// ReadBarrier counts the call and answers the failure set, if any.
func (c *FakeCluster) ReadBarrier(context.Context) error {
	c.BarrierCalls.Add(1)
	if c.OnBarrier != nil {
		c.OnBarrier()
	}
	if p := c.barrierErr.Load(); p != nil {
		return *p
	}
	return nil
}

// FailBarrier makes every later ReadBarrier answer err.
func (c *FakeCluster) FailBarrier(err error) { c.barrierErr.Store(&err) }

// Writes returns how many commands reached the store so far (Applied,
// read under the writer's lock).
func (m *MemWriter) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Applied
}
