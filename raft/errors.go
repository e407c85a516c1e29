package raft

import (
	"context"
	"errors"
	"fmt"

	hraft "github.com/hashicorp/raft"
)

// Sentinel errors. Callers compare with errors.Is; the underlying
// hashicorp/raft errors are translated so no caller needs to import it.
var (
	// ErrNotLeader: the operation must run on the leader and this server is
	// not it. Forward the request to Leader() instead.
	ErrNotLeader = errors.New("raft: not the leader")
	// ErrNoLeader: the cluster has no known leader right now (an election is
	// running or quorum is lost). Retrying later may succeed.
	ErrNoLeader = errors.New("raft: no cluster leader")
	// ErrLeadershipLost: this server stopped leading while a proposal was in
	// flight. The proposal may or may not commit; the caller cannot know
	// without reading state again.
	ErrLeadershipLost = errors.New("raft: leadership lost while committing, outcome unknown")
	// ErrShutdown: the node has been shut down. An operation that was in
	// flight when it did may still have completed.
	ErrShutdown = errors.New("raft: node is shut down")
)

// translate maps a hashicorp/raft error onto this package's sentinels so
// errors.Is works for callers, and keeps the original text for operators.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, hraft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, hraft.ErrLeadershipTransferInProgress):
		// Retryable exactly like "not the leader": a new one is coming.
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	case errors.Is(err, hraft.ErrLeadershipLost), errors.Is(err, hraft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %v", ErrLeadershipLost, err)
	case errors.Is(err, hraft.ErrRaftShutdown):
		return ErrShutdown
	case errors.Is(err, hraft.ErrEnqueueTimeout):
		return fmt.Errorf("raft: %w: %v", context.DeadlineExceeded, err)
	default:
		return fmt.Errorf("raft: %w", err)
	}
}
