package raft

import (
	"context"
	"fmt"
	"time"

	hraft "github.com/hashicorp/raft"
)

// Apply proposes data as a command, waits until it is committed and applied
// by the local FSM, and returns its log index and the FSM's response. Only
// the leader accepts proposals; elsewhere it returns ErrNotLeader. The log
// keeps data as given: do not modify it after the call.
//
// When the FSM's response is an error value, Apply returns the index and
// that error as is, so errors.Is matches the FSM's sentinels.
//
// ctx bounds the wait. When it ends first, Apply returns the context's error
// but the command may still commit: the outcome is unknown, as with
// ErrLeadershipLost.
func (n *Node) Apply(ctx context.Context, data []byte) (index uint64, resp any, err error) {
	if n.shutDown() {
		return 0, nil, ErrShutdown
	}
	timeout, err := enqueueTimeout(ctx)
	if err != nil {
		return 0, nil, err
	}
	f := n.raft.Apply(data, timeout)
	if err := n.await(ctx, f); err != nil {
		return 0, nil, err
	}
	resp = f.Response()
	if ferr, ok := resp.(error); ok {
		return f.Index(), nil, ferr
	}
	return f.Index(), resp, nil
}

// ApplyLocal is Apply, handing local to this server's FSM with the entry
// (Entry.Local) when it applies it while the call waits: what the
// proposer already made of data (the command it decoded from it), so
// that the FSM's serial path need not make it again. Other servers, and
// this one in a replay, apply the entry without it.
func (n *Node) ApplyLocal(ctx context.Context, data []byte, local any) (index uint64, resp any, err error) {
	if local != nil && len(data) > 0 {
		key := &data[0]
		n.fsm.locals.Store(key, local)
		defer n.fsm.locals.Delete(key)
	}
	return n.Apply(ctx, data)
}

// Barrier waits until every entry committed before the call has been
// applied to the local FSM. Leader only. A new leader calls it before
// trusting its own state, since entries of earlier terms may still be
// unapplied.
func (n *Node) Barrier(ctx context.Context) error {
	if n.shutDown() {
		return ErrShutdown
	}
	timeout, err := enqueueTimeout(ctx)
	if err != nil {
		return err
	}
	return n.await(ctx, n.raft.Barrier(timeout))
}

// VerifyLeader confirms with a quorum that this server still leads, and
// returns the read index: once a server's AppliedIndex reaches it, that
// server's state includes every write committed before the call, and so
// every write acknowledged before it, on any server. Leader only; elsewhere
// it returns ErrNotLeader.
//
// A consistent read on any server is: ask the leader for VerifyLeader's
// index, WaitForApplied on it locally, read. The leader waits too: the
// index may be ahead of what its own FSM has applied.
//
// The read index comes from the commit index, not from the leader's applied
// index. A committed entry can reach a follower's FSM before the leader's
// own FSM goroutine applies it, so a read index taken from the leader's
// applied index would let the leader serve a state older than one a
// follower has already served. The commit index itself may name an entry
// no FSM is shown (a no-op or barrier entry), which AppliedIndex never
// reaches; readIndex steps back from it to the last entry FSMs do see.
//
// The first call in each term runs a Barrier, because a new leader's commit
// index may not yet cover entries an earlier leader committed.
func (n *Node) VerifyLeader(ctx context.Context) (uint64, error) {
	// After a pause, heartbeat answers from before it may still count as
	// votes: let fresh ones be exchanged first (pause.go).
	if err := n.paused.wait(ctx); err != nil {
		return 0, err
	}
	for {
		term := n.raft.CurrentTerm()
		if n.readyTerm.Load() != term {
			if err := n.Barrier(ctx); err != nil {
				return 0, err
			}
			// The barrier counts for term only if no election happened
			// meanwhile; otherwise the loop starts over in the new term.
			if n.raft.CurrentTerm() == term {
				n.readyTerm.Store(term)
			}
			continue
		}
		if err := n.await(ctx, n.raft.VerifyLeader()); err != nil {
			return 0, err
		}
		if n.raft.CurrentTerm() != term {
			continue
		}
		return n.readIndex(n.raft.CommitIndex()), nil
	}
}

// readIndex returns the index of the last entry at or below commit that
// FSMs are shown (a command or a configuration change), the index a reader's
// AppliedIndex will reach. Everything at or below the local applied index
// is covered by it; above it, the log is searched downwards, usually one
// lookup since the newest committed entry is almost always a command. An
// entry already compacted away lies below the last snapshot and so is
// applied here: the applied index covers it.
func (n *Node) readIndex(commit uint64) uint64 {
	applied := n.fsm.applied.load()
	var l hraft.Log
	for i := commit; i > applied; i-- {
		if err := n.logs.GetLog(i, &l); err != nil {
			break
		}
		if fsmVisible(&l) {
			return i
		}
	}
	return applied
}

// WaitForApplied blocks until the local FSM has applied index, ctx ends, or
// the node shuts down. The FSM apply path wakes it; it does not poll.
func (n *Node) WaitForApplied(ctx context.Context, index uint64) error {
	w := n.fsm.applied.wait(index)
	if w == nil {
		return nil
	}
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		n.fsm.applied.cancel(w)
		return fmt.Errorf("raft: waiting for index %d (applied %d): %w", index, n.AppliedIndex(), ctx.Err())
	case <-n.shutdownCh:
		n.fsm.applied.cancel(w)
		return ErrShutdown
	}
}

// WaitForLeader blocks until this server knows a leader (itself or
// another), ctx ends, or the node shuts down. When ctx ends first the error
// matches both ErrNoLeader and the context's error.
func (n *Node) WaitForLeader(ctx context.Context) error {
	for {
		changed := n.leaderChanged.changed()
		if addr, _ := n.Leader(); addr != "" {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
		case <-n.shutdownCh:
			return ErrShutdown
		}
	}
}

// enqueueTimeout turns ctx's deadline into the enqueue timeout hashicorp/raft
// takes (zero: wait as long as it takes), or fails at once when ctx is done.
func enqueueTimeout(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, nil
	}
	d := time.Until(deadline)
	if d <= 0 {
		return 0, context.DeadlineExceeded
	}
	return d, nil
}

// await waits for a raft future, ctx, or the node's shutdown, whichever
// ends first, and translates the future's error. Futures cannot be
// cancelled, so a goroutine waits out the future; raft resolves it at the
// latest at shutdown, with one exception the shutdown case covers: with
// BatchApplyCh, a proposal racing Shutdown can land in raft's buffered apply
// channel after its loop stopped and is then never answered.
func (n *Node) await(ctx context.Context, f hraft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return translate(err)
	case <-ctx.Done():
		return fmt.Errorf("raft: stopped waiting, the operation may still complete: %w", ctx.Err())
	case <-n.shutdownCh:
		return ErrShutdown
	}
}

// shutDown reports whether Shutdown has started.
func (n *Node) shutDown() bool {
	select {
	case <-n.shutdownCh:
		return true
	default:
		return false
	}
}
