package jobs

import (
	"context"
	"io"
	"net/http"

	"github.com/schedhq/sched/state"
)

// ClusterOps is what the status, agent and operator endpoints need of the
// cluster (the agent's gossip and Raft node). A ClusterOps that also
// implements KeyringManager serves the gossip keyring endpoints.
type ClusterOps interface {
	// LeaderRaftAddr is the leader's Raft address, "" when none is known.
	LeaderRaftAddr() string
	// RaftConfiguration is the servers of the Raft configuration.
	RaftConfiguration() (*state.RaftConfiguration, error)
	// RemoveRaftPeer removes a server, by ID or address, from the Raft
	// configuration.
	RemoveRaftPeer(id, address string) error
	// Members are the servers gossip knows.
	Members() *state.ServerMembers
	// Join asks gossip to join the servers at addrs; it returns how many
	// it reached.
	Join(addrs []string) (int, error)
	// Self is GET /v1/agent/self of this server.
	Self() *state.AgentSelf
	// SaveSnapshot writes a snapshot of the state to w.
	SaveSnapshot(w io.Writer) error
	// RestoreSnapshot replaces the state with the snapshot read from r.
	RestoreSnapshot(ctx context.Context, r io.Reader) error
}

// clusterAPI serves /v1/status, /v1/agent (self, members, health, join,
// keyring) and /v1/operator (Raft configuration and peers, snapshots).
type clusterAPI struct{ *api }

// clusterRoutes registers the status, agent and operator endpoints.
//
// Routes under /v1/agent/ and /v1/status/ are answered by the server that
// receives them; the operator writes go to the leader like every write,
// and GET /v1/operator/snapshot and /v1/operator/raft/configuration are
// proxied to the leader too unless ?stale is given (the core's
// forwarding).
func (h clusterAPI) clusterRoutes() {
	if h.cfg.Cluster == nil {
		return
	}
	h.core.Route(http.MethodGet, "/v1/status/leader", h.statusLeader)
	h.core.Route(http.MethodGet, "/v1/status/peers", h.statusPeers)

	h.core.Route(http.MethodGet, "/v1/agent/self", h.agentSelf)
	h.core.Route(http.MethodGet, "/v1/agent/members", h.agentMembers)
	h.core.Route(http.MethodGet, "/v1/agent/health", h.agentHealth)
	h.write("/v1/agent/join", h.agentJoin)
	h.keyringRoutes() // keyring.go

	h.core.Route(http.MethodGet, "/v1/operator/raft/configuration", h.operatorRaftConfiguration)
	h.core.Route(http.MethodDelete, "/v1/operator/raft/peer", h.operatorRaftRemovePeer)
	h.core.Route(http.MethodGet, "/v1/operator/snapshot", h.operatorSnapshotSave)
	h.write("/v1/operator/snapshot", h.operatorSnapshotRestore)

}
