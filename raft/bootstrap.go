package raft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	hraft "github.com/hashicorp/raft"
)

// ErrHasState: the server already has Raft state (a log, a snapshot or a
// term), so bootstrapping it would fork the cluster; it was not done.
var ErrHasState = errors.New("raft: server already has raft state; not bootstrapping")

// HasState reports whether this server has any Raft state: entries or a
// snapshot, or a term from taking part in an election. A server with state
// never bootstraps; it rejoins the cluster it belongs to.
func (n *Node) HasState() bool {
	return n.raft.LastIndex() > 0 || n.raft.CurrentTerm() > 0
}

// BootstrapCluster starts a new cluster whose configuration is servers, all
// voters. It is safe to call on every one of those servers with the same
// list: each writes the same first configuration, and one of them wins the
// first election. On a server with existing state it returns ErrHasState
// and changes nothing.
func (n *Node) BootstrapCluster(servers []Server) error {
	if len(servers) == 0 {
		return errors.New("raft: bootstrap: no servers")
	}
	conf := hraft.Configuration{}
	for _, s := range servers {
		conf.Servers = append(conf.Servers, hraft.Server{
			Suffrage: hraft.Voter,
			ID:       hraft.ServerID(s.ID),
			Address:  hraft.ServerAddress(s.Address),
		})
	}
	err := n.raft.BootstrapCluster(conf).Error()
	if errors.Is(err, hraft.ErrCantBootstrap) {
		return ErrHasState
	}
	if err != nil {
		return fmt.Errorf("raft: bootstrap: %w", err)
	}
	ids := make([]string, len(servers))
	for i, s := range servers {
		ids[i] = s.ID
	}
	n.logger.Info("bootstrapped the cluster", "servers", strings.Join(ids, ","))
	return nil
}

// StateProbe asks another server whether it has Raft state (a
// configuration). BootstrapWithGossip calls it for every server it is about
// to bootstrap with, just before doing so, so that a fresh server never
// starts a second cluster beside one that already exists.
type StateProbe func(ctx context.Context, m Member) (hasState bool, err error)

// bootstrapRetry is how soon a bootstrap attempt that could not reach a
// peer, or found one with state, is reconsidered absent any gossip news.
const bootstrapRetry = time.Second

// BootstrapWithGossip waits until expect servers that agree on expect have
// met through g, then bootstraps the cluster with them, exactly once: it
// returns as soon as this server has Raft state, whether it bootstrapped,
// was added by a leader, or restarted with a log. See bootstrapServers for
// who bootstraps with whom. probe (nil: skipped) is asked about each other
// chosen server first; if any has state, this server waits to be added to
// that cluster instead.
func (n *Node) BootstrapWithGossip(ctx context.Context, g *Gossip, expect int, probe StateProbe) error {
	lastReason := ""
	for {
		if n.HasState() {
			return nil
		}
		changed, leaderCh := g.Changed(), n.LeaderChanged()
		var retry <-chan time.Time
		servers, reason := bootstrapServers(g.Local(), g.Members(), expect)
		if servers != nil {
			why, err := probeOthers(ctx, g.Local().ID, servers, g, probe)
			switch {
			case err != nil:
				reason = err.Error()
				retry = time.After(bootstrapRetry)
			case why != "":
				reason = why
				retry = time.After(bootstrapRetry)
			default:
				err := n.BootstrapCluster(servers)
				if err == nil || errors.Is(err, ErrHasState) {
					return nil
				}
				reason = err.Error()
				retry = time.After(bootstrapRetry)
			}
		}
		if reason != lastReason {
			n.logger.Info("waiting to bootstrap", "reason", reason)
			lastReason = reason
		}
		select {
		case <-changed:
		case <-leaderCh:
		case <-retry:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.shutdownCh:
			return ErrShutdown
		}
	}
}

// probeOthers asks each chosen server other than self whether it has state.
// It returns a reason not to bootstrap, or an error when a server could
// not be asked.
func probeOthers(ctx context.Context, self string, servers []Server, g *Gossip, probe StateProbe) (string, error) {
	if probe == nil {
		return "", nil
	}
	for _, s := range servers {
		if s.ID == self {
			continue
		}
		m, ok := g.Member(s.ID)
		if !ok {
			return "", fmt.Errorf("server %s left the member list", s.ID)
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		has, err := probe(pctx, m)
		cancel()
		if err != nil {
			return "", fmt.Errorf("asking server %s (%s) for its raft state: %w", m.Name, s.ID, err)
		}
		if has {
			return fmt.Sprintf("server %s already belongs to a cluster; waiting to be added to it", m.Name), nil
		}
	}
	return "", nil
}

// bootstrapServers decides, from this server's gossip view, whether the
// cluster can bootstrap and with which servers. It returns the servers, or
// nil and the reason to keep waiting.
//
// Candidates are alive members of this server's region whose
// bootstrap_expect is set (members with 0 join an existing cluster and
// never bootstrap). A candidate expecting a different number stops
// everything: the operator has made a mistake, and guessing could create
// two clusters. Once at least expect candidates are present, the expect
// with the lowest IDs are chosen, so that servers seeing the same members
// choose the same configuration; a server not chosen does not bootstrap and
// is added later by the leader.
func bootstrapServers(self ServerMeta, members []Member, expect int) ([]Server, string) {
	if expect < 1 {
		return nil, "bootstrap_expect is not set"
	}
	var candidates []Member
	for _, m := range members {
		if m.Status != MemberAlive || m.Region != self.Region || m.BootstrapExpect == 0 {
			continue
		}
		if m.BootstrapExpect != expect {
			return nil, fmt.Sprintf("server %s (%s) has bootstrap_expect = %d, this server %d; they must agree",
				m.Name, m.ID, m.BootstrapExpect, expect)
		}
		candidates = append(candidates, m)
	}
	if len(candidates) < expect {
		return nil, fmt.Sprintf("%d of %d expected servers have met", len(candidates), expect)
	}
	slices.SortFunc(candidates, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	candidates = candidates[:expect]
	chosen := false
	servers := make([]Server, 0, expect)
	for _, m := range candidates {
		if m.RaftAddr == "" {
			return nil, fmt.Sprintf("server %s has not advertised its raft address", m.ID)
		}
		chosen = chosen || m.ID == self.ID
		servers = append(servers, Server{ID: m.ID, Address: m.RaftAddr, Voter: true})
	}
	if !chosen {
		return nil, "more servers than bootstrap_expect have met and this one is not among the first; waiting to be added by the leader"
	}
	return servers, ""
}
