package apitest

import (
	"context"
	"sync"
	"time"
)

// TTL is the heartbeat TTL the fake leader hands out.
const TTL = 17 * time.Second

// FakeLeader is the jobs API's LeaderServices double: it records
// heartbeats and GC requests and answers with ttl, or with err when set.
type FakeLeader struct {
	mu         sync.Mutex
	ttl        time.Duration
	err        error
	heartbeats []string
	gcs        int
}

// NewFakeLeader is a leader handing out TTL.
func NewFakeLeader() *FakeLeader { return &FakeLeader{ttl: TTL} }

func (f *FakeLeader) Heartbeat(nodeID string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.heartbeats = append(f.heartbeats, nodeID)
	return f.ttl, nil
}

func (f *FakeLeader) ForceGC(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.gcs++
	return ctx.Err()
}

// Fail makes every later call fail with err.
func (f *FakeLeader) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// Beats returns the node IDs of the heartbeats so far.
func (f *FakeLeader) Beats() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.heartbeats...)
}

// GCs returns how many GC requests it has had.
func (f *FakeLeader) GCs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gcs
}
