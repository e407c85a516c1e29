package raft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
)

// FSM is the replicated state machine. Every server applies the same
// commands in the same order, so Apply must be deterministic: no clock, no
// randomness, no I/O, nothing but the state and the command.
//
// Apply, Snapshot and Restore are never called concurrently with each other.
type FSM interface {
	// Apply applies one committed command. e.Index is its Raft log index,
	// unique and increasing, suitable as a modify index. The return value
	// becomes Node.Apply's response on the server that proposed it; an
	// error value is returned as Node.Apply's error instead, unwrapped, so
	// callers can match the FSM's sentinel errors with errors.Is.
	Apply(e Entry) any
	// Snapshot returns a point-in-time view of the state. It must be cheap
	// (applies are stalled while it runs); the expensive part belongs in
	// FSMSnapshot.Persist, which runs concurrently with later applies.
	Snapshot() (FSMSnapshot, error)
	// Restore replaces all state with the contents of a snapshot written by
	// FSMSnapshot.Persist.
	Restore(r io.Reader) error
}

// BatchFSM is an FSM that can apply the committed commands of one commit
// round at once. The node uses ApplyBatch instead of Apply when the FSM has
// it; it must give every entry the response Apply would have given, in
// the same order, and leave the same state.
type BatchFSM interface {
	FSM
	// ApplyBatch applies entries in order and returns one response per
	// entry, as Apply would.
	ApplyBatch(entries []Entry) []any
}

// Entry is one committed command: its log index and its data.
type Entry struct {
	Index uint64
	Data  []byte
	// Local is what the proposer handed Node.ApplyLocal with Data, on
	// the server that proposed the entry and while the proposer waits
	// for it; nil on every other server, in a replay, and for a copy of
	// the bytes. It never leaves the server, so the FSM must give the
	// same result with it as without it: it is for work the proposer did
	// already (the command it decoded from Data), not for state.
	Local any
}

// FSMSnapshot is a point-in-time view returned by FSM.Snapshot.
type FSMSnapshot interface {
	// Persist writes the view to w. It runs concurrently with FSM.Apply, so
	// it must read only the view, not the live state.
	Persist(w io.Writer) error
	// Release frees the view; it is called once, after Persist or instead
	// of it.
	Release()
}

// snapshotMagic starts every snapshot this package writes, ahead of the
// applied index and the FSM's own bytes.
var snapshotMagic = [8]byte{'s', 'c', 'h', 'e', 'd', 's', 'n', '1'}

// snapshotHeaderLen is the magic plus the big-endian applied index.
const snapshotHeaderLen = len(snapshotMagic) + 8

// fsmAdapter turns an FSM into a hashicorp/raft BatchingFSM and tracks the
// index the FSM has applied.
//
// That index is ours rather than hashicorp/raft's AppliedIndex, because
// raft's moves when entries are handed to the FSM goroutine, before they are
// applied, and a read barrier needs "applied". It counts only entries the FSM
// goroutine sees (fsmVisible: commands, markers and configuration changes),
// never no-op or barrier entries; VerifyLeader returns an index of the same
// kind, so a follower waiting for it never waits for an entry it will not be
// shown. Snapshots carry the index in a header, because FSM.Restore is not
// told which index it restores to.
type fsmAdapter struct {
	fsm     FSM
	applied appliedIndex
	// locals holds the Local values of the proposals in flight on this
	// server (Node.ApplyLocal), by the address of their entry's first
	// byte: hashicorp/raft gives the leader's FSM the very Log it was
	// handed, whose Data is the proposer's slice, and carries nothing
	// else of a proposal to it. An entry takes its value once.
	locals sync.Map

	// Diagnostics for Stats and the group-commit benchmark.
	batches atomic.Uint64
	entries atomic.Uint64
	// bytes adds up the Data of the entries applied (snapshot_bytes.go).
	bytes atomic.Uint64
	// persists counts the snapshots written since start; persistNanos and
	// persistBytes describe the last one (how long Persist took and what it
	// wrote), for Stats and sched-bench's progress lines.
	persists     atomic.Uint64
	persistNanos atomic.Int64
	persistBytes atomic.Uint64
}

var (
	_ hraft.BatchingFSM = (*fsmAdapter)(nil)
	_ hraft.FSMSnapshot = (*fsmSnapshot)(nil)
)

// Apply implements hraft.FSM. raft uses ApplyBatch instead, since the
// adapter is a BatchingFSM; this exists to satisfy the interface.
func (a *fsmAdapter) Apply(l *hraft.Log) any {
	return a.ApplyBatch([]*hraft.Log{l})[0]
}

// ApplyBatch implements hraft.BatchingFSM: the committed entries of one
// commit round, in order. The applied index moves only after the whole batch,
// but before raft answers the proposers, so a proposer that gets its index
// back always sees AppliedIndex at or past it.
func (a *fsmAdapter) ApplyBatch(logs []*hraft.Log) []any {
	out := make([]any, len(logs))
	var n uint64
	var cmds []int // positions in logs of the commands, for a BatchFSM
	batch, isBatch := a.fsm.(BatchFSM)
	for i, l := range logs {
		if l.Type == hraft.LogCommand && !isMarker(l) {
			n += uint64(len(l.Data))
			if isBatch {
				cmds = append(cmds, i)
				continue
			}
			out[i] = a.fsm.Apply(a.entry(l))
		}
	}
	switch {
	case len(cmds) == 1:
		out[cmds[0]] = a.fsm.Apply(a.entry(logs[cmds[0]]))
	case len(cmds) > 1:
		// Markers and configuration entries change no FSM state, so the
		// commands around them can be applied together.
		entries := make([]Entry, len(cmds))
		for j, i := range cmds {
			entries[j] = a.entry(logs[i])
		}
		for j, resp := range batch.ApplyBatch(entries) {
			out[cmds[j]] = resp
		}
	}
	a.bytes.Add(n)
	if len(logs) > 0 {
		a.applied.set(logs[len(logs)-1].Index)
	}
	a.batches.Add(1)
	a.entries.Add(uint64(len(logs)))
	return out
}

// entry is the Entry of a command log, with the Local value its proposer
// left for it on this server, which it takes.
func (a *fsmAdapter) entry(l *hraft.Log) Entry {
	e := Entry{Index: l.Index, Data: l.Data}
	if len(l.Data) > 0 {
		e.Local, _ = a.locals.LoadAndDelete(&l.Data[0])
	}
	return e
}

// Snapshot implements hraft.FSM.
func (a *fsmAdapter) Snapshot() (hraft.FSMSnapshot, error) {
	s, err := a.fsm.Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{inner: s, index: a.applied.load(), stats: a}, nil
}

// Restore implements hraft.FSM.
func (a *fsmAdapter) Restore(rc io.ReadCloser) error {
	var hdr [snapshotHeaderLen]byte
	if _, err := io.ReadFull(rc, hdr[:]); err != nil {
		return fmt.Errorf("raft: reading snapshot header: %w", err)
	}
	if !bytes.Equal(hdr[:len(snapshotMagic)], snapshotMagic[:]) {
		return errors.New("raft: snapshot was not written by this package (bad magic)")
	}
	index := binary.BigEndian.Uint64(hdr[len(snapshotMagic):])
	if err := a.fsm.Restore(rc); err != nil {
		return err
	}
	// A restored backup (Node.RestoreSnapshot) carries an older index than
	// this server has applied; the applied index never moves backwards, or
	// readers waiting for an index already passed would stall until the
	// next write. That leaves the index naming a state the backup replaced,
	// so RestoreSnapshot follows the restore with a marker entry: the
	// marker's index is reached only by a server holding the backup's state,
	// and read indexes taken after the restore is acknowledged cover it.
	index = max(index, a.applied.load())
	a.applied.set(index)
	return nil
}

// markerExtension tags a command entry that the adapter applies itself,
// without showing it to the FSM: it changes no state but moves the applied
// index, giving every server an index to reach (see Restore).
var markerExtension = []byte("sched.raft.marker")

// isMarker reports whether l is a marker entry.
func isMarker(l *hraft.Log) bool { return bytes.Equal(l.Extensions, markerExtension) }

// fsmVisible reports whether raft hands l to the FSM goroutine, and so
// whether the applied index can come to name it: commands (markers
// included) and, with raft protocol version 3, configuration changes.
// No-op and barrier entries never reach a BatchingFSM.
func fsmVisible(l *hraft.Log) bool {
	return l.Type == hraft.LogCommand || l.Type == hraft.LogConfiguration
}

// fsmSnapshot prefixes the FSM's snapshot with the header Restore reads.
type fsmSnapshot struct {
	inner FSMSnapshot
	index uint64
	// stats, when set, records a successful Persist.
	stats *fsmAdapter
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}

// Persist implements hraft.FSMSnapshot.
func (s *fsmSnapshot) Persist(sink hraft.SnapshotSink) error {
	var hdr [snapshotHeaderLen]byte
	copy(hdr[:], snapshotMagic[:])
	binary.BigEndian.PutUint64(hdr[len(snapshotMagic):], s.index)
	if _, err := sink.Write(hdr[:]); err != nil {
		_ = sink.Cancel()
		return err
	}
	start := time.Now()
	cw := &countingWriter{w: sink}
	if err := s.inner.Persist(cw); err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	if s.stats != nil {
		s.stats.persistNanos.Store(int64(time.Since(start)))
		s.stats.persistBytes.Store(cw.n + uint64(snapshotHeaderLen))
		s.stats.persists.Add(1)
	}
	return nil
}

// Release implements hraft.FSMSnapshot.
func (s *fsmSnapshot) Release() { s.inner.Release() }
