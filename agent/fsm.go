package agent

import (
	"io"

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

func (f *fsm) Restore(r io.Reader) error { return f.store.Restore(r) }

type fsmSnapshot struct {
	snap *store.StateSnapshot
}

func (s *fsmSnapshot) Persist(w io.Writer) error { return s.snap.Persist(w) }

func (s *fsmSnapshot) Release() {}
