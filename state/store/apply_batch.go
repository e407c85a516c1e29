package store

import (
	"errors"

	memdb "github.com/hashicorp/go-memdb"
)

// Entry is one committed log entry: its Raft index and its data, as Apply
// takes them.
type Entry struct {
	Index uint64
	Data  []byte
	// Prepared, on the server that proposed the entry, is what
	// PrepareCommand made of it: the entry is applied from the command it
	// decoded (taken once) rather than decoded again. Nil elsewhere.
	Prepared *Prepared
}

// ApplyBatch applies entries, in order, exactly as that many calls of
// Apply would, and returns their responses in the same order. The entries
// share one memdb write transaction: the nodes near a tree's root, the
// index rows and the watch channels are copied, written and closed once
// per batch rather than once per entry, and a blocking query wakes once
// for the batch. Raft hands the FSM the entries of one commit round
// together, and nothing reads the state between them (the applied index
// moves once per round), so what readers can see is the same.
//
// A command that fails writes nothing, as with Apply: when one fails after
// it may have written into the shared transaction, the transaction is
// dropped, the entries before it are applied again (Apply is
// deterministic, so they succeed again), the failing one is applied alone,
// and the batch goes on after it. Every entry's events are published with
// its own index, in order, once the batch is committed.
//
// ApplyBatch must be called from one goroutine at a time (the Raft FSM's),
// never concurrently with Apply.
func (s *Store) ApplyBatch(entries []Entry) []any {
	out := make([]any, len(entries))
	for from := 0; from < len(entries); {
		from += s.applyRun(entries[from:], out[from:])
	}
	return out
}

// batchEvents are the events of one entry of a run, published after the
// run commits.
type batchEvents struct {
	index   uint64
	written []written
}

// applyRun applies entries from the first in one transaction, until the
// last or until one fails after it may have written, and returns how many
// it has answered in out (at least one).
func (s *Store) applyRun(entries []Entry, out []any) int {
	db := s.currentDB()
	txn := db.Txn(true)
	defer txn.Abort()
	rows := &txnRows{db: db} // shared by the run's commands, as txn is
	var pubs []batchEvents
	for i, e := range entries {
		resp, events, err := s.applyInto(txn, rows, e)
		if errors.Is(err, errNoWrite) {
			out[i] = resp // refused before any write, as Apply refuses it
			continue
		}
		if err != nil {
			// The shared transaction may hold part of entry i: drop it,
			// apply the entries before i again in a run of their own, and
			// entry i alone (it fails as before, writing nothing).
			txn.Abort()
			if i > 0 {
				s.applyRun(entries[:i], out[:i])
			}
			out[i] = s.ApplyEntry(e)
			return i + 1
		}
		out[i] = resp
		pubs = append(pubs, batchEvents{index: e.Index, written: events})
	}
	rows.seal()
	txn.Commit()
	for _, p := range pubs {
		s.allocs.notify(p.written)
		s.events.publish(p.index, eventsOf(p.index, p.written))
	}
	return len(entries)
}

// errNoWrite marks an entry applyInto refused before writing anything; its
// response is the one Apply gives (nil for an ignored unknown command, or
// the decoding or checking error).
var errNoWrite = errors.New("entry refused before any write")

// applyInto applies one entry into txn (keeping rows aside in rows, which
// the run's commands share) without committing it, and returns
// the command's response and the writes that have events. An error other
// than errNoWrite means the entry may have written part of itself into
// txn.
func (s *Store) applyInto(txn *memdb.Txn, rows *txnRows, e Entry) (any, []written, error) {
	t, req, err := decodeEntry(e)
	if err != nil {
		if errors.Is(err, ErrUnknownCommand) && MessageType(e.Data[0])&IgnoreUnknownTypeFlag != 0 {
			return nil, nil, errNoWrite
		}
		return err, nil, errNoWrite
	}
	if err := check(req); err != nil {
		return err, nil, errNoWrite
	}
	cmd, _ := lookupCommand(t)
	wt := s.writeTxnOn(txn, rows, e.Index)
	var written []written
	wt.written = &written
	resp, err := cmd.apply(wt, req)
	if err != nil {
		return nil, nil, err
	}
	if err := refreshJobStatuses(wt); err != nil {
		return nil, nil, err
	}
	if err := wt.finish(); err != nil {
		return nil, nil, err
	}
	return resp, written, nil
}
