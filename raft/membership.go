package raft

import (
	hraft "github.com/hashicorp/raft"
)

// Server is one member of the Raft configuration.
type Server struct {
	ID      string
	Address string
	// Voter is false for non-voting members, which replicate the log but
	// do not count towards quorum.
	Voter bool
	// Leader is true for the member this server currently knows as leader.
	Leader bool
}

// AddVoter adds a server as a voter, or updates its address if the ID is
// already a member, and waits until the new configuration is committed.
// Leader only. The new server needs no bootstrap: it receives the log (or a
// snapshot) from the leader.
func (n *Node) AddVoter(id, addr string) error {
	f := n.raft.AddVoter(hraft.ServerID(id), hraft.ServerAddress(addr), 0, 0)
	return translate(f.Error())
}

// RemoveServer removes a server from the configuration and waits until the
// change is committed. Leader only. A leader that removes itself steps down.
func (n *Node) RemoveServer(id string) error {
	f := n.raft.RemoveServer(hraft.ServerID(id), 0, 0)
	return translate(f.Error())
}

// Configuration returns the latest Raft configuration this server knows,
// which may not be committed yet.
func (n *Node) Configuration() ([]Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, translate(err)
	}
	_, leaderID := n.raft.LeaderWithID()
	conf := f.Configuration()
	out := make([]Server, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		out = append(out, Server{
			ID:      string(s.ID),
			Address: string(s.Address),
			Voter:   s.Suffrage == hraft.Voter,
			Leader:  s.ID == leaderID && leaderID != "",
		})
	}
	return out, nil
}
