package agent

import (
	"io"
	"runtime/debug"
	"runtime/metrics"

	"github.com/schedhq/sched/raft"
	"github.com/schedhq/sched/state/store"
)

// fsm adapts the state store to raft's FSM: the log carries state's
// encoded commands, and snapshots are the store's own.
type fsm struct {
	store *store.Store
}

var _ raft.BatchFSM = (*fsm)(nil)

func (f *fsm) Apply(e raft.Entry) any { return f.store.ApplyEntry(storeEntry(e)) }

// ApplyBatch applies the commands of one commit round in one store
// transaction (store.ApplyBatch).
func (f *fsm) ApplyBatch(entries []raft.Entry) []any {
	in := make([]store.Entry, len(entries))
	for i, e := range entries {
		in[i] = storeEntry(e)
	}
	return f.store.ApplyBatch(in)
}

// storeEntry is the store's entry of a raft entry: on the leader, the
// entry's Local is what the writer prepared (raftWriter.Apply), the
// command the store then applies without decoding the bytes again.
func storeEntry(e raft.Entry) store.Entry {
	p, _ := e.Local.(*store.Prepared)
	return store.Entry{Index: e.Index, Data: e.Data, Prepared: p}
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.store.Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{snap: snap}, nil
}

// Restore replaces the store's contents with a snapshot's. Into a small
// heap (a server's start, a new server's first snapshot from the leader)
// it runs with the collector's GOGC at restoreGCPercent: the heap grows
// from nearly nothing to the whole state, and at GOGC=100 the collector
// marks what is live at every doubling (some 12% of a restart's CPU at
// 500,000 allocations, more with the state). A restore allocates about
// twice what it keeps, so the heap peaks near where it would at GOGC=100
// (twice the live heap), and the setting is put back before Restore
// returns. Beside a large store (an operator's restore through the API,
// which builds the new store next to the old one) it keeps the setting:
// nine times the old store's heap could be reached before a collection.
func (f *fsm) Restore(r io.Reader) error {
	if liveHeap() <= restoreSmallHeap {
		if old := debug.SetGCPercent(restoreGCPercent); old < 0 || old > restoreGCPercent {
			debug.SetGCPercent(old) // GOGC=off or higher: the operator's choice stands
		} else {
			defer debug.SetGCPercent(old)
		}
	}
	return f.store.Restore(r)
}

// restoreGCPercent is GOGC during a restore into a small heap, and
// restoreSmallHeap the live heap at most that counts as small.
const (
	restoreGCPercent = 800
	restoreSmallHeap = 256 << 20
)

// liveHeap is the heap's live bytes as of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

type fsmSnapshot struct {
	snap *store.StateSnapshot
}

func (s *fsmSnapshot) Persist(w io.Writer) error { return s.snap.Persist(w) }

func (s *fsmSnapshot) Release() {}
