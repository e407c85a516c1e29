package raft

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultFailedGrace is how long a server must have been failed (in gossip)
// before the leader removes it from the Raft configuration, when
// ReconcileConfig.FailedGrace is zero. Long enough for a crashed or
// rebooted server to come back on its own, which needs no change at all.
const DefaultFailedGrace = 5 * time.Minute

// reconcileRetry is how soon a configuration change that failed is tried
// again; reconcileVetRetry how soon a server Vet refused is asked about
// again (it will not change its mind quickly, and each refusal is logged);
// reconcileSweep how often the leader reconciles even without gossip news,
// in case a notification was missed.
const (
	reconcileRetry    = 2 * time.Second
	reconcileVetRetry = 30 * time.Second
	reconcileSweep    = time.Minute
)

// ReconcileConfig configures ReconcileMembership.
type ReconcileConfig struct {
	// Region is this cluster's region; members of other regions are not
	// Raft peers and are ignored.
	Region string
	// FailedGrace is how long a member must be failed before it is
	// removed. Zero means DefaultFailedGrace.
	FailedGrace time.Duration
	// Vet, when set, is asked about a member before it is added; an error
	// keeps it out for now (logged, and asked again later). The agent uses
	// it to refuse a server that belongs to another cluster, which would
	// otherwise be merged into this one because the two gossip pools met.
	Vet func(ctx context.Context, m Member) error
}

// MembershipChange is one step that brings the Raft configuration in line
// with gossip.
type MembershipChange struct {
	// Add is true for "add as a voter (or update its address)", false for
	// "remove".
	Add     bool
	ID      string
	Address string
	// Reason is why, for the log.
	Reason string
}

func (c MembershipChange) String() string {
	if c.Add {
		return fmt.Sprintf("add voter %s at %s (%s)", c.ID, c.Address, c.Reason)
	}
	return fmt.Sprintf("remove server %s at %s (%s)", c.ID, c.Address, c.Reason)
}

// ReconcileMembership is the leader's membership duty: until ctx ends (on
// loss of leadership), it keeps the Raft configuration in line with gossip,
// acting on every membership change and on every grace period that runs
// out. See planMembership for the rules.
func (n *Node) ReconcileMembership(ctx context.Context, g *Gossip, cfg ReconcileConfig) {
	if cfg.FailedGrace == 0 {
		cfg.FailedGrace = DefaultFailedGrace
	}
	for {
		changed := g.Changed()
		var wake <-chan time.Time
		servers, err := n.Configuration()
		if err != nil {
			n.logger.Warn("membership reconcile: reading the raft configuration", "error", err)
			wake = time.After(reconcileRetry)
		} else {
			changes, next := planMembership(n.ID(), cfg.Region, servers, g.Members(), cfg.FailedGrace, time.Now())
			changes, vetoed := n.vetMembership(ctx, g, cfg.Vet, changes)
			applied, err := n.applyMembership(changes)
			switch {
			case errors.Is(err, ErrNotLeader), errors.Is(err, ErrShutdown):
				return
			case err != nil:
				n.logger.Warn("membership reconcile: configuration change failed; will retry", "error", err)
				wake = time.After(reconcileRetry)
			case applied > 0:
				continue // plan again against the new configuration
			case vetoed:
				wake = time.After(reconcileVetRetry)
			case !next.IsZero():
				wake = time.After(time.Until(next))
			default:
				wake = time.After(reconcileSweep)
			}
		}
		select {
		case <-changed:
		case <-wake:
		case <-ctx.Done():
			return
		case <-n.shutdownCh:
			return
		}
	}
}

// vetMembership drops the additions vet refuses, and reports whether it
// refused any.
func (n *Node) vetMembership(ctx context.Context, g *Gossip, vet func(context.Context, Member) error, changes []MembershipChange) ([]MembershipChange, bool) {
	if vet == nil {
		return changes, false
	}
	vetoed := false
	out := changes[:0:0]
	for _, c := range changes {
		if c.Add {
			m, ok := g.Member(c.ID)
			if !ok {
				vetoed = true
				continue
			}
			vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := vet(vctx, m)
			cancel()
			if err != nil {
				n.logger.Warn("not adding a server to the raft configuration", "id", c.ID, "name", m.Name, "reason", err)
				vetoed = true
				continue
			}
		}
		out = append(out, c)
	}
	return out, vetoed
}

// applyMembership makes the changes in order and stops at the first error.
func (n *Node) applyMembership(changes []MembershipChange) (int, error) {
	for i, c := range changes {
		var err error
		if c.Add {
			err = n.AddVoter(c.ID, c.Address)
		} else {
			err = n.RemoveServer(c.ID)
		}
		if err != nil {
			return i, fmt.Errorf("%s: %w", c, err)
		}
		n.logger.Info("raft configuration changed: " + c.String())
	}
	return len(changes), nil
}

// planMembership compares the Raft configuration (servers) with gossip
// (members) and returns the changes the leader (self) should make, in
// order, and when to look again for a failed member whose grace period has
// not run out (zero: no such member). It is pure, so every rule is a table
// test:
//
//   - A server of the configuration that left gracefully is removed.
//   - An alive member of this region missing from the configuration is
//     added as a voter; one whose Raft address changed is re-added with the
//     new address. If another, non-alive server of the configuration holds
//     that address (a server whose data dir was wiped comes back with a new
//     ID on the old address), that one is removed first, as Raft allows no
//     two servers on one address.
//   - A server failed for at least grace is removed, but only while quorum
//     stays safe: after the removal, the alive voters must still be a
//     majority of the remaining voters. A configuration server gossip has
//     never heard of counts as not alive and is never removed (after a
//     whole-cluster restart, gossip may not have met everyone yet).
//   - The leader never removes itself.
func planMembership(self, region string, servers []Server, members []Member, grace time.Duration, now time.Time) ([]MembershipChange, time.Time) {
	byID := map[string]Member{}
	for _, m := range members {
		if m.Region == region && m.RaftAddr != "" {
			byID[m.ID] = m
		}
	}
	conf := map[string]Server{}
	var order []string // configuration order, for deterministic plans
	for _, s := range servers {
		conf[s.ID] = s
		order = append(order, s.ID)
	}
	alive := func(id string) bool {
		if id == self {
			return true
		}
		m, ok := byID[id]
		return ok && m.Status == MemberAlive
	}
	var changes []MembershipChange
	remove := func(s Server, reason string) {
		changes = append(changes, MembershipChange{ID: s.ID, Address: s.Address, Reason: reason})
		delete(conf, s.ID)
	}

	for _, id := range order {
		if m, ok := byID[id]; ok && id != self && m.Status == MemberLeft {
			remove(conf[id], "left the cluster")
		}
	}
	for _, m := range members {
		if m.Region != region || m.RaftAddr == "" || m.Status != MemberAlive {
			continue
		}
		if s, ok := conf[m.ID]; ok && s.Address == m.RaftAddr {
			continue
		}
		for _, id := range order {
			s, ok := conf[id]
			if ok && id != m.ID && s.Address == m.RaftAddr && !alive(id) {
				remove(s, "its address now belongs to server "+m.ID)
			}
		}
		reason := "alive in gossip, not in the configuration"
		if _, ok := conf[m.ID]; ok {
			reason = "raft address changed"
		}
		changes = append(changes, MembershipChange{Add: true, ID: m.ID, Address: m.RaftAddr, Reason: reason})
		conf[m.ID] = Server{ID: m.ID, Address: m.RaftAddr, Voter: true}
		order = append(order, m.ID)
	}

	var next time.Time
	for _, id := range order {
		s, ok := conf[id]
		m, known := byID[id]
		if !ok || !known || id == self || m.Status != MemberFailed {
			continue
		}
		if due := m.Since.Add(grace); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		voters, aliveVoters := 0, 0
		for vid, v := range conf {
			if v.Voter && vid != id {
				voters++
				if alive(vid) {
					aliveVoters++
				}
			}
		}
		if aliveVoters < voters/2+1 {
			continue // removing it would leave too few alive voters
		}
		remove(s, fmt.Sprintf("failed for %s", now.Sub(m.Since).Round(time.Second)))
	}
	return changes, next
}
