package http

import (
	"context"
	"io"
	"net/http"

	"github.com/schedhq/sched/state"
)

// Forwarder is what the HTTP layer needs of the cluster beyond the reads
// of Cluster: the leader's HTTP address, to proxy requests only the leader
// can answer (forward.go), and the membership, Raft and snapshot
// operations behind the status, agent and operator endpoints. A server
// agent always sets it; with it nil, requests are answered locally and the
// cluster endpoints are not registered.
type Forwarder interface {
	// LocalID is this server's Raft ID, sent in the hop guard header of
	// forwarded requests.
	LocalID() string
	// IsLeader reports whether this server leads right now.
	IsLeader() bool
	// LeaderHTTPAddr waits, until ctx ends, for a known leader whose HTTP
	// address (host:port) is known and is not avoid, and returns it; self
	// is true, with no address, when the leader is this server. avoid lets
	// a caller that could not reach the leader wait for another one.
	LeaderHTTPAddr(ctx context.Context, avoid string) (addr string, self bool, err error)
	// LeaderChanged returns a channel closed at the next change of the
	// leader this server knows; a forwarded request still waiting for the
	// old leader's answer is then abandoned with a 503.
	LeaderChanged() <-chan struct{}
	// ReadIndex is the leader's half of a consistent read on a follower:
	// it confirms leadership with a quorum and returns the index the
	// follower must apply before reading. Leader only.
	ReadIndex(ctx context.Context) (uint64, error)

	// LeaderRaftAddr is the leader's Raft address, empty when none is
	// known.
	LeaderRaftAddr() string
	// RaftConfiguration is the latest Raft configuration, with each
	// server's name from gossip.
	RaftConfiguration() (*state.RaftConfiguration, error)
	// RemoveRaftPeer removes the server with the ID, or else the address,
	// from the Raft configuration. Leader only.
	RemoveRaftPeer(id, address string) error
	// Members lists the servers gossip knows.
	Members() *state.ServerMembers
	// Join contacts the gossip addresses and returns how many it reached.
	Join(addrs []string) (int, error)
	// Self describes this agent: configuration summary, member and stats.
	Self() *state.AgentSelf
	// SaveSnapshot writes a snapshot of this server's state to w.
	SaveSnapshot(w io.Writer) error
	// RestoreSnapshot replaces the cluster's state with a snapshot that
	// SaveSnapshot wrote. Leader only.
	RestoreSnapshot(ctx context.Context, r io.Reader) error
}

// clusterRoutes registers the runtime profiles and the internal
// read-index endpoint followers use for consistent reads (the status,
// agent and operator endpoints are the jobs API's: http/jobs).
func (s *Server) clusterRoutes() {
	if s.cfg.Forwarder == nil {
		return
	}
	s.handle(http.MethodGet, "/v1/agent/pprof/:profile", s.agentPprof) // pprof.go
	s.handle(http.MethodGet, readIndexPath, s.internalReadIndex)
}
