package agent

import (
	"context"
)

// The start of a client that runs beside a server in one agent (every
// `sched agent -dev`): its first registration waits until the cluster can
// take it, so that a normal start logs no "not the cluster leader" error
// and no failed registration.

// clusterReady returns once the cluster can take a node registration as
// far as this server can tell: a leader is known and, when this server is
// that leader, its leader duties run (the registration needs the
// heartbeat timers). A follower does not wait for the leader's duties: it
// cannot see them, and they are up moments after the election. It
// returns ctx's error, or the raft node's on shutdown. An agent without a
// server returns at once.
func (a *Agent) clusterReady(ctx context.Context) error {
	if a.node == nil || a.leader == nil {
		return nil
	}
	if _, id := a.node.Leader(); id == "" {
		a.log.Info("client waiting for a cluster leader before registering")
	}
	for {
		// Subscribe before looking, so a change in between is not missed.
		changed := a.node.LeaderChanged()
		if err := a.node.WaitForLeader(ctx); err != nil {
			return err
		}
		if _, id := a.node.Leader(); id != a.node.ID() {
			return nil
		}
		select {
		case <-a.leader.established:
			return nil
		case <-changed:
			// Leadership moved before the duties ran: look again.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
