package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/raft"
	"github.com/schedhq/sched/state"
)

// leaderWait bounds how long a write or consistent read waits for a leader
// before answering 503.
const leaderWait = 5 * time.Second

// raftWriter commits HTTP writes through raft. It is the http.Writer and
// http.Cluster of a server agent.
type raftWriter struct {
	node *raft.Node
}

var (
	_ schedhttp.Writer  = (*raftWriter)(nil)
	_ schedhttp.Cluster = (*raftWriter)(nil)
)

// Apply encodes the command, waits a bounded time for leadership, and
// proposes it. The state machine's error answers come back unchanged.
func (w *raftWriter) Apply(ctx context.Context, t state.MessageType, req any) (any, uint64, error) {
	data, err := state.Encode(t, req)
	if err != nil {
		return nil, 0, fmt.Errorf("encode command: %w", err)
	}
	if err := w.awaitLeadership(ctx); err != nil {
		return nil, 0, err
	}
	index, resp, err := w.node.Apply(ctx, data)
	if err != nil {
		return nil, 0, w.mapErr(err)
	}
	return resp, index, nil
}

// awaitLeadership returns nil once this server leads. Forwarding writes to
// another leader arrives with the three-server cluster issue; until then a
// follower answers 503.
func (w *raftWriter) awaitLeadership(ctx context.Context) error {
	if w.node.IsLeader() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	if err := w.node.WaitForLeader(wctx); err != nil {
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader", Err: err}
	}
	if !w.node.IsLeader() {
		addr, _ := w.node.Leader()
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable,
			Message: fmt.Sprintf("this server is not the leader (leader at %s) and cannot forward yet", addr)}
	}
	return nil
}

func (w *raftWriter) mapErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrNoLeader):
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader", Err: err}
	case errors.Is(err, raft.ErrShutdown):
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "server is shutting down", Err: err}
	}
	return err
}

// KnownLeader reports whether raft knows a leader.
func (w *raftWriter) KnownLeader() bool {
	addr, _ := w.node.Leader()
	return addr != ""
}

// LastContact is zero on the leader and the time since the leader was last
// heard from elsewhere.
func (w *raftWriter) LastContact() time.Duration {
	if w.node.IsLeader() {
		return 0
	}
	last := w.node.LastContact()
	if last.IsZero() {
		return 0
	}
	return time.Since(last)
}

// ReadBarrier makes the local store at least as new as the commit index at
// the time of the call: the leader confirms it still leads, then we wait
// for our applied index to reach its commit index.
func (w *raftWriter) ReadBarrier(ctx context.Context) error {
	if err := w.awaitLeadership(ctx); err != nil {
		return err
	}
	commit, err := w.node.VerifyLeader(ctx)
	if err != nil {
		return w.mapErr(err)
	}
	return w.node.WaitForApplied(ctx, commit)
}
