package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/raft"
)

// clusterState is the agent's part in the cluster: its gossip member, the
// background loops that join other servers and bootstrap, the leader's
// membership duty, and the http.Forwarder (cluster_ops.go). Its zero value
// is ready; gossip stays nil in dev mode, where the server is a cluster of
// one and nothing gossips.
type clusterState struct {
	a      *Agent
	gossip *raft.Gossip
	// client makes server-to-server HTTP calls: read indexes from the
	// leader and the raft-state probe before bootstrapping.
	client *http.Client
	// reads coalesces the read-index requests of concurrent consistent
	// reads; verifies coalesces the leader's quorum checks (writer.go).
	reads    coalescer
	verifies coalescer
	// refused counts servers of other clusters the leader kept out of the
	// Raft configuration (vetJoiner); shown in /v1/agent/self.
	refused atomic.Int64
	// keyringMu serializes this server's gossip keyring changes and
	// their saving (keyring.go).
	keyringMu sync.Mutex

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// raftConfig is the raft node's configuration. A server bootstraps alone
// only with bootstrap_expect 0 or 1 (or -dev); with more, gossip decides.
// raft_multiplier scales the package's default timeouts.
func (a *Agent) raftConfig(id string) raft.Config {
	cfg := a.cfg
	heartbeat := raft.DefaultHeartbeatTimeout * time.Duration(max(cfg.Server.RaftMultiplier, 1))
	return raft.Config{
		HeartbeatTimeout:   heartbeat,
		ElectionTimeout:    heartbeat,
		LeaderLeaseTimeout: heartbeat / 2,
		ID:                 id,
		DataDir:            cfg.DataDir,
		BindAddr:           cfg.RaftAddr(),
		AdvertiseAddr:      cfg.Advertise.Raft,
		Bootstrap:          cfg.DevMode || cfg.Server.BootstrapExpect <= 1,
		SnapshotThreshold:  uint64(cfg.Server.RaftSnapshotThreshold),
		SnapshotInterval:   cfg.Server.RaftSnapshotInterval,
		TrailingLogs:       uint64(cfg.Server.RaftTrailingLogs),
		Logger:             newHCLogger(a.log, "raft"),
	}
}

// startGossip joins this server to the gossip layer, advertising its Raft
// and HTTP addresses. Called at the end of New, once the HTTP listener is
// bound. Dev mode does not gossip.
func (a *Agent) startGossip() error {
	c := &a.cluster
	c.a = a
	c.client = &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		// Over HTTPS with tls.http: the other servers' certificates are
		// checked for server.<region>.sched, and ours is presented.
		TLSClientConfig: a.httpDialTLS,
	}}
	if a.cfg.DevMode {
		return nil
	}
	key, others, err := a.gossipKeys() // keyring.go
	if err != nil {
		return err
	}
	g, err := raft.NewGossip(raft.GossipConfig{
		BindAddr:      a.cfg.GossipAddr(),
		AdvertiseAddr: a.cfg.Advertise.Gossip,
		EncryptKey:    key,
		Keys:          others,
		Meta:          a.localMeta(),
		Logger:        newHCLogger(a.log, "gossip"),
	})
	if err != nil {
		return fmt.Errorf("start gossip: %w", err)
	}
	c.gossip = g
	return nil
}

// localMeta is what this server tells the others through gossip.
func (a *Agent) localMeta() raft.ServerMeta {
	return raft.ServerMeta{
		ID:              a.node.ID(),
		Name:            a.cfg.Name,
		RaftAddr:        a.node.Addr(),
		HTTPAddr:        a.cfg.Advertise.HTTP,
		Region:          a.cfg.Region,
		Datacenter:      a.cfg.Datacenter,
		BootstrapExpect: max(a.cfg.Server.BootstrapExpect, 1),
		Build:           buildVersion(),
	}
}

// startCluster starts the background loops: retry join and, with
// bootstrap_expect above 1, the gossip bootstrap. Called by Start.
func (a *Agent) startCluster() {
	c := &a.cluster
	if c.gossip == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	if len(a.cfg.Server.RetryJoin) > 0 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.retryJoin(ctx)
		}()
	}
	if expect := a.cfg.Server.BootstrapExpect; expect > 1 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			err := a.node.BootstrapWithGossip(ctx, c.gossip, expect, c.probeRaftState)
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, raft.ErrShutdown) {
				a.log.Error("bootstrap failed", "error", err)
			}
		}()
	}
}

// stopCluster stops the loops and gossip: with leave_on_terminate, it
// first leaves the cluster gracefully (a leader removes itself from the
// Raft configuration, which makes it step down; a follower announces its
// departure and the leader removes it). Called by Shutdown, before raft
// stops.
func (a *Agent) stopCluster() {
	c := &a.cluster
	if c.cancel != nil {
		c.cancel()
		c.wg.Wait()
	}
	if c.gossip == nil {
		return
	}
	if a.started && a.cfg.Server.LeaveOnTerminate {
		a.log.Info("leaving the cluster (leave_on_terminate)")
		if a.node.IsLeader() {
			if err := a.node.RemoveServer(a.node.ID()); err != nil {
				a.log.Warn("leader could not remove itself from the raft configuration", "error", err)
			}
		}
		if err := c.gossip.Leave(5 * time.Second); err != nil {
			a.log.Warn("gossip leave", "error", err)
		}
	}
	if err := c.gossip.Shutdown(); err != nil {
		a.log.Warn("gossip shutdown", "error", err)
	}
}

// retryJoin joins the retry_join addresses, retrying every retry_interval
// until one answers (or retry_max attempts failed).
func (c *clusterState) retryJoin(ctx context.Context) {
	cfg := c.a.cfg.Server
	for attempt := 1; ; attempt++ {
		n, err := c.gossip.Join(cfg.RetryJoin)
		switch {
		case err == nil:
			c.a.log.Info("joined the cluster", "servers_contacted", n)
			return
		case errors.Is(err, raft.ErrNothingToJoin):
			c.a.log.Info("retry_join lists only this server; waiting to be joined")
			return
		case cfg.RetryMax > 0 && attempt >= cfg.RetryMax:
			c.a.log.Error("giving up joining the cluster", "attempts", attempt, "error", err)
			return
		}
		c.a.log.Warn("join failed; retrying", "in", cfg.RetryInterval, "error", err)
		select {
		case <-time.After(cfg.RetryInterval):
		case <-ctx.Done():
			return
		}
	}
}

// vetJoiner refuses to add a server that belongs to another cluster: one
// whose Raft configuration is not empty and does not hold this server.
// A fresh server has no configuration, and a returning one still lists
// this cluster's servers, so both are welcome.
func (c *clusterState) vetJoiner(ctx context.Context, m raft.Member) error {
	if tlsCfg := c.a.raftTLS; tlsCfg != nil {
		// With raft over mutual TLS, gossip alone does not make a server
		// one of ours: its raft port must show a certificate of our CA.
		if err := raft.CheckPeerTLS(ctx, m.RaftAddr, tlsCfg); err != nil {
			c.refused.Add(1)
			return fmt.Errorf("its raft port at %s shows no certificate of this cluster's CA: %w", m.RaftAddr, err)
		}
	}
	peers, err := c.raftPeers(ctx, m)
	if err != nil {
		return err
	}
	if len(peers) == 0 || slices.Contains(peers, c.a.node.Addr()) {
		return nil
	}
	c.refused.Add(1)
	return fmt.Errorf("it belongs to another cluster (peers %v); stop it and wipe its data dir to add it to this one", peers)
}

// probeRaftState asks another server, over its HTTP API, whether it has a
// Raft configuration: any peer at all means a cluster exists.
func (c *clusterState) probeRaftState(ctx context.Context, m raft.Member) (bool, error) {
	peers, err := c.raftPeers(ctx, m)
	return len(peers) > 0, err
}

// raftPeers asks a server for the voters of its Raft configuration.
func (c *clusterState) raftPeers(ctx context.Context, m raft.Member) ([]string, error) {
	if m.HTTPAddr == "" {
		return nil, errors.New("no HTTP address advertised")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.a.serversScheme()+"://"+m.HTTPAddr+"/v1/status/peers", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/status/peers: status %d", resp.StatusCode)
	}
	var peers []string
	if err := json.NewDecoder(resp.Body).Decode(&peers); err != nil {
		return nil, fmt.Errorf("GET /v1/status/peers: %w", err)
	}
	return peers, nil
}

// clusterServices are the cluster's leader duties, started before the
// scheduler's: the membership reconciler, which adds servers that join
// through gossip as voters and removes those that left or failed.
func (a *Agent) clusterServices() []leaderService {
	return []leaderService{&membershipService{a: a}}
}

// configureHTTPCluster makes the agent the HTTP server's Forwarder.
func (a *Agent) configureHTTPCluster(cfg *schedhttp.Config) {
	cfg.Forwarder = &a.cluster
}

// membershipService runs raft.ReconcileMembership while this server leads.
type membershipService struct {
	a    *Agent
	done chan struct{}
}

var _ leaderService = (*membershipService)(nil)

func (s *membershipService) Name() string { return "membership reconciler" }

// Start reconciles in the background until ctx ends. Without gossip (dev
// mode) there is nothing to reconcile.
func (s *membershipService) Start(ctx context.Context) error {
	g := s.a.cluster.gossip
	if g == nil {
		return nil
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.a.node.ReconcileMembership(ctx, g, raft.ReconcileConfig{
			Region:      s.a.cfg.Region,
			FailedGrace: s.a.cfg.Server.FailedServerGrace,
			Vet:         s.a.cluster.vetJoiner,
		})
	}()
	return nil
}

// Stop waits for the reconciler, whose context the leadership loop has
// already cancelled.
func (s *membershipService) Stop() {
	if s.done != nil {
		<-s.done
		s.done = nil
	}
}
