package raft

import (
	"strconv"
	"time"
)

// snapshotOnBytes takes a snapshot whenever the entries applied since the
// last snapshot (whoever took it) add up to Config.SnapshotBytes, checking
// every interval until shutdown. Raft's own trigger counts entries; this
// one bounds what a restart after a crash replays by its size.
func (n *Node) snapshotOnBytes(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	tr := n.newBytesTrigger()
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		if _, err := n.checkSnapshotBytes(&tr, n.cfg.SnapshotBytes); err != nil {
			n.logger.Warn("snapshot after a large log failed; retrying at the next check", "error", err)
		}
	}
}

// bytesTrigger is where the count of applied bytes starts: at the last
// snapshot seen.
type bytesTrigger struct {
	lastIndex uint64
	base      uint64
}

func (n *Node) newBytesTrigger() bytesTrigger {
	return bytesTrigger{lastIndex: n.lastSnapshotIndex(), base: n.fsm.bytes.Load()}
}

// checkSnapshotBytes takes a snapshot when at least limit bytes of entries
// were applied since the last snapshot tr saw, and reports whether it
// did. A snapshot raft took on its own meanwhile (threshold, restore,
// shutdown) restarts the count instead. A failed snapshot leaves the
// count as it was, to be tried again.
func (n *Node) checkSnapshotBytes(tr *bytesTrigger, limit int64) (bool, error) {
	if idx := n.lastSnapshotIndex(); idx != tr.lastIndex {
		tr.lastIndex, tr.base = idx, n.fsm.bytes.Load()
		return false, nil
	}
	applied := n.fsm.bytes.Load()
	if int64(applied-tr.base) < limit {
		return false, nil
	}
	if err := n.Snapshot(); err != nil {
		return false, err
	}
	tr.lastIndex, tr.base = n.lastSnapshotIndex(), applied
	return true, nil
}

// lastSnapshotIndex is the index of the newest snapshot, 0 if none.
func (n *Node) lastSnapshotIndex() uint64 {
	idx, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	return idx
}
