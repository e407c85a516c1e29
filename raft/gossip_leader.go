package raft

// LeaderChanged returns a channel closed the next time the leader this
// server knows changes (including to or from "none"). Take it, check
// Leader, then wait on it, and no change is missed.
func (n *Node) LeaderChanged() <-chan struct{} { return n.leaderChanged.changed() }

// ConfigurationIndex is the log index of the latest Raft configuration
// this server knows.
func (n *Node) ConfigurationIndex() (uint64, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, translate(err)
	}
	return f.Index(), nil
}
