package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/raft"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The agent's clusterState is the HTTP layer's Forwarder.
var _ schedhttp.Forwarder = (*clusterState)(nil)

// LocalID implements http.Forwarder.
func (c *clusterState) LocalID() string { return c.a.node.ID() }

// IsLeader implements http.Forwarder.
func (c *clusterState) IsLeader() bool { return c.a.node.IsLeader() }

// LeaderChanged implements http.Forwarder.
func (c *clusterState) LeaderChanged() <-chan struct{} { return c.a.node.LeaderChanged() }

// LeaderHTTPAddr implements http.Forwarder: the leader's HTTP address comes
// from its gossip metadata, keyed by its Raft ID. It waits on leader and
// membership changes alike, since a follower may learn of a new leader
// before gossip has brought that leader's address.
func (c *clusterState) LeaderHTTPAddr(ctx context.Context, avoid string) (string, bool, error) {
	node := c.a.node
	for {
		leaderCh := node.LeaderChanged()
		var gossipCh <-chan struct{}
		if c.gossip != nil {
			gossipCh = c.gossip.Changed()
		}
		_, id := node.Leader()
		if id != "" && id == node.ID() {
			return "", true, nil
		}
		addr := ""
		if id != "" && c.gossip != nil {
			if m, ok := c.gossip.Member(id); ok {
				addr = m.HTTPAddr
			}
		}
		if addr != "" && addr != avoid {
			return addr, false, nil
		}
		select {
		case <-leaderCh:
		case <-gossipCh:
		case <-ctx.Done():
			if id != "" && addr == "" {
				return "", false, fmt.Errorf("%w: the leader %s has not gossiped its HTTP address: %w", raft.ErrNoLeader, id, ctx.Err())
			}
			return "", false, fmt.Errorf("%w: %w", raft.ErrNoLeader, ctx.Err())
		}
	}
}

// ReadIndex implements http.Forwarder: the leader's quorum check, shared
// by the concurrent consistent reads of every server.
func (c *clusterState) ReadIndex(ctx context.Context) (uint64, error) {
	idx, err := c.verifies.do(ctx, c.a.node.VerifyLeader)
	if err != nil {
		return 0, mapRaftErr(err)
	}
	return idx, nil
}

// LeaderRaftAddr implements http.Forwarder.
func (c *clusterState) LeaderRaftAddr() string {
	addr, _ := c.a.node.Leader()
	return addr
}

// RaftConfiguration implements http.Forwarder.
func (c *clusterState) RaftConfiguration() (*state.RaftConfiguration, error) {
	servers, err := c.a.node.Configuration()
	if err != nil {
		return nil, mapRaftErr(err)
	}
	index, err := c.a.node.ConfigurationIndex()
	if err != nil {
		return nil, mapRaftErr(err)
	}
	out := &state.RaftConfiguration{Index: index, Servers: []*state.RaftServer{}}
	for _, s := range servers {
		out.Servers = append(out.Servers, &state.RaftServer{
			ID:           s.ID,
			Node:         c.serverName(s.ID),
			Address:      s.Address,
			Leader:       s.Leader,
			Voter:        s.Voter,
			RaftProtocol: "3",
		})
	}
	return out, nil
}

// serverName is a server's name from gossip, "" when gossip does not know
// it.
func (c *clusterState) serverName(id string) string {
	if id == c.a.node.ID() {
		return c.a.cfg.Name
	}
	if c.gossip != nil {
		if m, ok := c.gossip.Member(id); ok {
			return m.Name
		}
	}
	return ""
}

// RemoveRaftPeer implements http.Forwarder.
func (c *clusterState) RemoveRaftPeer(id, address string) error {
	servers, err := c.a.node.Configuration()
	if err != nil {
		return mapRaftErr(err)
	}
	i := slices.IndexFunc(servers, func(s raft.Server) bool {
		return (id != "" && s.ID == id) || (id == "" && s.Address == address)
	})
	if i < 0 {
		what := "ID " + id
		if id == "" {
			what = "address " + address
		}
		return &schedhttp.CodedError{Code: http.StatusNotFound, Message: "no server with " + what + " in the raft configuration"}
	}
	if err := c.a.node.RemoveServer(servers[i].ID); err != nil {
		return mapRaftErr(err)
	}
	c.a.log.Info("removed a raft peer on request", "id", servers[i].ID, "address", servers[i].Address)
	return nil
}

// Members implements http.Forwarder. Without gossip (dev mode) the list
// holds this server alone.
func (c *clusterState) Members() *state.ServerMembers {
	out := &state.ServerMembers{
		ServerName:   c.a.cfg.Name,
		ServerRegion: c.a.cfg.Region,
		ServerDC:     c.a.cfg.Datacenter,
		Members:      []*state.AgentMember{},
	}
	if c.gossip == nil {
		out.Members = append(out.Members, c.localMember())
		return out
	}
	for _, m := range c.gossip.Members() {
		out.Members = append(out.Members, agentMember(m))
	}
	return out
}

func (c *clusterState) localMember() *state.AgentMember {
	if c.gossip != nil {
		if m, ok := c.gossip.Member(c.a.node.ID()); ok {
			return agentMember(m)
		}
	}
	return agentMember(raft.Member{ServerMeta: c.a.localMeta(), Addr: c.a.cfg.Advertise.Gossip, Status: raft.MemberAlive})
}

// agentMember presents a gossip member as Nomad's clients expect.
func agentMember(m raft.Member) *state.AgentMember {
	host, port, _ := net.SplitHostPort(m.Addr)
	p, _ := strconv.Atoi(port)
	return &state.AgentMember{
		Name: m.Name + "." + m.Region,
		Addr: host,
		Port: uint16(p),
		Tags: map[string]string{
			"role":      "sched",
			"id":        m.ID,
			"raft_addr": m.RaftAddr,
			"http_addr": m.HTTPAddr,
			"region":    m.Region,
			"dc":        m.Datacenter,
			"expect":    strconv.Itoa(m.BootstrapExpect),
			"build":     m.Build,
		},
		Status:      string(m.Status),
		ProtocolMin: m.ProtocolMin,
		ProtocolMax: m.ProtocolMax,
		ProtocolCur: m.ProtocolCur,
	}
}

// Join implements http.Forwarder.
func (c *clusterState) Join(addrs []string) (int, error) {
	if c.gossip == nil {
		return 0, errors.New("a dev agent does not gossip; it cannot join other servers")
	}
	return c.gossip.Join(addrs)
}

// Self implements http.Forwarder.
func (c *clusterState) Self() *state.AgentSelf {
	cfg := c.a.cfg
	gossipStats := map[string]string{"enabled": strconv.FormatBool(c.gossip != nil), "encrypted": strconv.FormatBool(c.gossipEncrypted())}
	if c.gossip != nil {
		counts := map[raft.MemberStatus]int{}
		members := c.gossip.Members()
		for _, m := range members {
			counts[m.Status]++
		}
		gossipStats["members"] = strconv.Itoa(len(members))
		gossipStats["alive"] = strconv.Itoa(counts[raft.MemberAlive])
		gossipStats["failed"] = strconv.Itoa(counts[raft.MemberFailed])
		gossipStats["left"] = strconv.Itoa(counts[raft.MemberLeft])
		gossipStats["refused_servers"] = strconv.FormatInt(c.refused.Load(), 10)
	}
	return &state.AgentSelf{
		Config: map[string]any{
			"Name":       cfg.Name,
			"Region":     cfg.Region,
			"Datacenter": cfg.Datacenter,
			"DataDir":    cfg.DataDir,
			"BindAddr":   cfg.BindAddr,
			"DevMode":    cfg.DevMode,
			"Ports":      map[string]int{"HTTP": cfg.Ports.HTTP, "Raft": cfg.Ports.Raft, "Gossip": cfg.Ports.Gossip},
			"Advertise":  map[string]string{"HTTP": cfg.Advertise.HTTP, "Raft": cfg.Advertise.Raft, "Gossip": cfg.Advertise.Gossip},
			"Server": map[string]any{
				"Enabled":               cfg.Server.Enabled,
				"BootstrapExpect":       cfg.Server.BootstrapExpect,
				"RetryJoin":             cfg.Server.RetryJoin,
				"RetryInterval":         cfg.Server.RetryInterval.String(),
				"EncryptionEnabled":     c.gossipEncrypted(),
				"FailedServerGrace":     cfg.Server.FailedServerGrace.String(),
				"LeaveOnTerminate":      cfg.Server.LeaveOnTerminate,
				"RaftSnapshotThreshold": cfg.Server.RaftSnapshotThreshold,
				"RaftSnapshotInterval":  cfg.Server.RaftSnapshotInterval.String(),
				"RaftTrailingLogs":      cfg.Server.RaftTrailingLogs,
				"JobTrackedVersions":    cfg.Server.JobTrackedVersions,
			},
			"ACL":     map[string]bool{"Enabled": cfg.ACL.Enabled},
			"Version": buildVersion(), // version.go
			"Build":   map[string]string{"Version": buildVersion(), "Revision": buildRevision(), "BuildDate": buildDate},
		},
		Member:   c.localMember(),
		Security: c.a.security, // exposure.go
		Stats: map[string]map[string]string{
			"raft": c.a.node.Stats(),
			"serf": gossipStats,
			"runtime": {
				"goroutines": strconv.Itoa(runtime.NumGoroutine()),
				"version":    runtime.Version(),
				"arch":       runtime.GOARCH,
				"os":         runtime.GOOS,
				"cpu_count":  strconv.Itoa(runtime.NumCPU()),
			},
		},
	}
}

// SaveSnapshot implements http.Forwarder.
func (c *clusterState) SaveSnapshot(w io.Writer) error {
	if _, err := c.a.node.SaveSnapshot(w); err != nil {
		return mapRaftErr(err)
	}
	return nil
}

// RestoreSnapshot implements http.Forwarder. The archive's state is first
// decoded row by row (store.VerifySnapshot), so a snapshot this version
// cannot read is refused before the cluster is touched, without a second
// copy of the state in memory.
func (c *clusterState) RestoreSnapshot(ctx context.Context, r io.Reader) error {
	info, err := c.a.node.RestoreSnapshot(ctx, r, store.VerifySnapshot)
	if err != nil {
		return mapRaftErr(err)
	}
	c.a.log.Info("restored a snapshot", "snapshot_index", info.Index, "bytes", info.Size)
	return nil
}

// mapRaftErr gives raft's sentinel errors their HTTP meaning.
func mapRaftErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrBadSnapshot):
		return &schedhttp.CodedError{Code: http.StatusBadRequest, Message: err.Error(), Err: err}
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrNoLeader):
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "no cluster leader", Err: err}
	case errors.Is(err, raft.ErrLeadershipLost):
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable,
			Message: "leadership lost while committing; the change may or may not have been applied", Err: err}
	case errors.Is(err, raft.ErrShutdown):
		return &schedhttp.CodedError{Code: http.StatusServiceUnavailable, Message: "server is shutting down", Err: err}
	}
	return err
}

// gossipEncrypted reports whether gossip runs with a key (from
// server.encrypt or the saved keyring).
func (c *clusterState) gossipEncrypted() bool {
	if c.gossip == nil {
		return false
	}
	_, err := c.gossip.Keyring()
	return err == nil
}
