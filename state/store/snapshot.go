package store

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// StateSnapshot is a point-in-time view of the store. Its read methods are
// the Store's, answered from the moment Snapshot was taken; writes to the
// store after that do not show. Scheduler workers plan against one, and the
// Raft FSM persists one.
type StateSnapshot struct {
	reader
	db *memdb.MemDB
	// chunkBytes is the size past which Persist ends a chunk of
	// allocation records; 0 means allocChunkBytes (tests make chunks
	// small).
	chunkBytes int
}

// Snapshot returns a point-in-time view of the store. It is cheap: the
// view shares the store's immutable trees.
func (s *Store) Snapshot() (*StateSnapshot, error) {
	db := s.currentDB().Snapshot()
	// One read transaction serves every read of the snapshot: its
	// contents never change, and a memdb read transaction holds no state
	// of its own (its reads may run at once). A transaction per read was
	// a tenth of the scheduler's garbage (a placement reads some fifteen
	// nodes' usage).
	txn := db.Txn(false)
	return &StateSnapshot{reader: reader{txn: func() *memdb.Txn { return txn }, allocs: s.allocs}, db: db}, nil
}

// Release frees the snapshot. It does nothing (the garbage collector
// reclaims the trees) but lets a StateSnapshot serve as a Raft FSM
// snapshot.
func (s *StateSnapshot) Release() {}

// snapshotFormat identifies the layout written by Persist. Format 2
// writes each job an allocation runs once, however many allocations share
// it (snapshotJobRow, snapshotAllocRow); format 3 writes the allocations
// as records of a layout of their own, in chunks (internal/packed).
// Restore reads formats 1, 2 and 3.
const snapshotFormat = 3

// Pseudo-table names of formats 2 and 3: they never name a table of the
// store. Format 3 writes job rows as format 2 did, and allocations in
// chunks (snapshotAllocChunkName) rather than as snapshotAllocRows.
const (
	// snapshotJobName precedes a snapshotJobRow: a job allocations run,
	// written before the first allocation that refers to it.
	snapshotJobName = "_alloc_job"
	// snapshotAllocName precedes a snapshotAllocRow (format 2): an
	// allocation of the allocations table, its job given by reference.
	snapshotAllocName = "_alloc_ref"
	// snapshotAllocChunkName precedes a chunk of allocation records
	// (format 3, packed.Writer): one msgpack byte string.
	snapshotAllocChunkName = "_alloc_chunk"
)

// allocChunkBytes is the size past which Persist ends a chunk. A chunk's
// strings are written whole once and then by number, so larger chunks
// share more: score keys ("<node-id>.<component>", five nodes of
// thousands per placement) and node IDs rarely repeat within 64 KiB.
// 200,000 placements on 5,000 nodes took 173 MB with chunks of 64 KiB
// (866 bytes per allocation; 4.5 s to save through the API), 83 MB with
// 1 MiB, 61 MB with 4 MiB (303 bytes; 2.0 s). A restore holds one
// chunk's records and strings at a time.
const allocChunkBytes = 4 << 20

// snapshotJobRow is one job allocations run, numbered in the stream.
type snapshotJobRow struct {
	Ref int
	Job *state.Job
}

// snapshotAllocRow is an allocation whose Job is the snapshotJobRow of
// Ref. The allocations of one stored job object share one row, so a
// snapshot of a million allocations of a thousand jobs holds a thousand
// jobs, and the restored allocations share them again.
type snapshotAllocRow struct {
	Ref   int
	Alloc *state.Allocation
}

// snapshotHeader opens a persisted snapshot.
type snapshotHeader struct {
	Format int
}

// Persist writes every row of every table, in the order of tableDefs, as a
// stream of msgpack values: a header, then a table name and a row for each
// row, then an empty table name that marks the end, so a truncated stream
// is detected on Restore.
func (s *StateSnapshot) Persist(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := newStreamEncoder(bw)
	if err := enc.Encode(snapshotHeader{Format: snapshotFormat}); err != nil {
		return fmt.Errorf("persist snapshot: %w", err)
	}
	txn := s.db.Txn(false)
	// jobRefs numbers the job objects allocations point at (one per job
	// version, shared by the store).
	jobRefs := map[*state.Job]int{}
	chunk := packed.NewSnapshotWriter(logCodec{})
	flush := func() error {
		if len(chunk.Bytes()) == 0 {
			return nil
		}
		if err := enc.Encode(snapshotAllocChunkName); err != nil {
			return err
		}
		if err := enc.Encode(chunk.Bytes()); err != nil {
			return err
		}
		chunk.Reset()
		return nil
	}
	for _, def := range tableDefs() {
		if def.derived {
			continue
		}
		err := tableRows(txn, def.name, func(row any) error {
			if a, ok := row.(*state.Allocation); ok {
				ref := -1
				if a.Job != nil {
					seen := false
					if ref, seen = jobRefs[a.Job]; !seen {
						ref = len(jobRefs)
						jobRefs[a.Job] = ref
						// Before the chunk that refers to it.
						if err := enc.Encode(snapshotJobName); err != nil {
							return err
						}
						if err := enc.Encode(&snapshotJobRow{Ref: ref, Job: a.Job}); err != nil {
							return err
						}
					}
				}
				if err := chunk.Alloc(ref, a); err != nil {
					return err
				}
				if len(chunk.Bytes()) >= cmp.Or(s.chunkBytes, allocChunkBytes) {
					return flush()
				}
				return nil
			}
			if err := enc.Encode(def.name); err != nil {
				return err
			}
			return enc.Encode(row)
		})
		if err != nil {
			return fmt.Errorf("persist %s: %w", def.name, err)
		}
		if err := flush(); err != nil {
			return fmt.Errorf("persist %s: %w", def.name, err)
		}
	}
	if err := enc.Encode(""); err != nil {
		return fmt.Errorf("persist snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return nil
}

// Restore replaces the store's contents with a snapshot written by Persist.
// It builds a new database aside and swaps it in at once, so readers see
// either the old contents or the new, never a mix; then it closes the old
// AbandonCh so that blocked readers re-run against the new contents. On
// error the store is unchanged.
func (s *Store) Restore(r io.Reader) error {
	db, err := restoreDB(s.packer, r)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	s.mu.Lock()
	abandoned := s.abandonCh
	s.db = db
	s.abandonCh = make(chan struct{})
	s.mu.Unlock()
	close(abandoned)
	s.allocs.closeAll()
	return nil
}

func restoreDB(p *packed.Packer, r io.Reader) (*memdb.MemDB, error) {
	db, err := memdb.NewMemDB(dbSchema())
	if err != nil {
		return nil, err
	}
	txn := db.Txn(true)
	defer txn.Abort()
	compact := p.RestoreCompactor(compactRows{txn})
	allocs := allocLoader{txn: txn}
	err = decodePipelined(p, r, func(rows []snapshotRow) error {
		for _, rw := range rows {
			if a, ok := rw.v.(*state.Allocation); ok {
				// Each allocation decodes its own copy of its job and
				// strings (format 1 and 2), or shares what its chunk's
				// records share (format 3): share the rest
				// (packed.Compactor).
				var err error
				if rw.record {
					err = compact.AllocRecord(a)
				} else {
					err = compact.Alloc(nil, a)
				}
				if err != nil {
					return fmt.Errorf("restore %s row: %w", rw.name, err)
				}
				if err := allocs.add(a); err != nil {
					return fmt.Errorf("restore %s row: %w", rw.name, err)
				}
				continue
			}
			if err := txn.Insert(rw.name, rw.v); err != nil {
				return fmt.Errorf("restore %s row: %w", rw.name, err)
			}
		}
		return nil
	})
	if err == nil {
		err = allocs.flush()
	}
	if err != nil {
		return nil, err
	}
	if err := ensureBuiltins(txn); err != nil {
		return nil, err
	}
	if err := rebuildUsage(txn); err != nil {
		return nil, fmt.Errorf("rebuild node usage: %w", err)
	}
	if err := rebuildQuotaUsage(txn); err != nil {
		return nil, fmt.Errorf("rebuild quota usage: %w", err)
	}
	txn.Commit()
	return db, nil
}

// snapshotRow is one decoded row and the table it goes to; record marks
// an allocation of a format 3 chunk (packed.Compactor.AllocRecord).
type snapshotRow struct {
	name   string
	v      any
	record bool
}

// Batches of the restore pipeline: a restore decodes on one goroutine and
// inserts on another, so decoding (half of a restore's CPU with format
// 2's msgpack rows, a fifth with format 3's records) runs beside the
// inserts into the single write transaction rather than before each of
// them. Rows travel in batches so that the hand-over
// costs little per row; what is in flight at once is bounded by
// restoreBatchRows × (restoreBatchesQueued + 2) rows.
const (
	restoreBatchRows     = 512
	restoreBatchesQueued = 4
)

// decodePipelined decodes the stream Persist wrote on a goroutine of its
// own and hands the rows to insert, on the caller's goroutine, in stream
// order, in batches. The first error, of either side, ends both; the
// decoding goroutine has returned when decodePipelined does.
func decodePipelined(p *packed.Packer, r io.Reader, insert func([]snapshotRow) error) error {
	batches := make(chan []snapshotRow, restoreBatchesQueued)
	stop := make(chan struct{})
	decodeErr := make(chan error, 1)
	go func() {
		defer close(batches)
		batch := make([]snapshotRow, 0, restoreBatchRows)
		send := func() bool {
			select {
			case batches <- batch:
				batch = make([]snapshotRow, 0, restoreBatchRows)
				return true
			case <-stop:
				return false
			}
		}
		err := decodeSnapshot(p, r, func(name string, v any) error {
			if n, ok := v.(*state.Node); ok {
				n.SealSecret() // a snapshot written before node secrets were hashed
			}
			record := name == snapshotAllocChunkName
			if record {
				name = TableAllocs // an allocation of a format 3 chunk
			}
			batch = append(batch, snapshotRow{name: name, v: v, record: record})
			if len(batch) == restoreBatchRows && !send() {
				return errRestoreStopped
			}
			return nil
		})
		if err == nil && len(batch) > 0 && !send() {
			err = errRestoreStopped
		}
		decodeErr <- err
	}()
	var err error
	for batch := range batches {
		if err = insert(batch); err != nil {
			break
		}
	}
	if err != nil {
		close(stop)
		for range batches { // let the decoder see stop and return
		}
		<-decodeErr
		return err
	}
	return <-decodeErr
}

// errRestoreStopped ends the decoding of a restore whose inserts failed.
var errRestoreStopped = errors.New("restore stopped")

// VerifySnapshot reads a stream Persist wrote to its end and reports
// whether Restore could load it (format, table names, every row
// decodable, not truncated), holding one row at a time: an operator's
// restore is checked before the cluster is touched without building a
// second copy of the state.
func VerifySnapshot(r io.Reader) error {
	// A Packer of its own: the strings and maps decoded are dropped.
	if err := decodeSnapshot(packed.New(logCodec{}), r, func(string, any) error { return nil }); err != nil {
		return fmt.Errorf("verify snapshot: %w", err)
	}
	return nil
}

// decodeSnapshot reads a stream Persist wrote and hands each row, with
// its table's name, to row; an allocation of a format 3 chunk comes
// named snapshotAllocChunkName (its strings are shared already).
func decodeSnapshot(p *packed.Packer, r io.Reader, row func(name string, v any) error) error {
	defs := make(map[string]tableDef)
	for _, d := range tableDefs() {
		defs[d.name] = d
	}
	dec := newStreamDecoder(bufio.NewReader(r))
	var hdr snapshotHeader
	if err := dec.Decode(&hdr); err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	if hdr.Format < 1 || hdr.Format > snapshotFormat {
		return fmt.Errorf("unsupported snapshot format %d", hdr.Format)
	}
	jobs := map[int]*state.Job{} // format 2's and 3's jobs, by reference
	var chunk []byte             // format 3's chunk being read
	records := p.NewReader()
	for {
		var name string
		if err := dec.Decode(&name); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("snapshot is truncated")
			}
			return fmt.Errorf("read table name: %w", err)
		}
		if name == "" {
			return nil
		}
		switch {
		case hdr.Format >= 2 && name == snapshotJobName:
			var j snapshotJobRow
			if err := dec.Decode(&j); err != nil {
				return fmt.Errorf("read %s row: %w", name, err)
			}
			if _, dup := jobs[j.Ref]; dup || j.Job == nil {
				return fmt.Errorf("read %s row: job reference %d is repeated or empty", name, j.Ref)
			}
			jobs[j.Ref] = j.Job
			continue
		case hdr.Format >= 3 && name == snapshotAllocChunkName:
			if err := dec.Decode(&chunk); err != nil {
				return fmt.Errorf("read %s: %w", name, err)
			}
			records.Chunk(chunk)
			for records.More() {
				a, ref := records.Alloc()
				if err := records.Err(); err != nil {
					return fmt.Errorf("read %s: %w", name, err)
				}
				if ref >= 0 {
					job, ok := jobs[ref]
					if !ok {
						return fmt.Errorf("read %s: an allocation refers to job %d, which the snapshot does not hold before it", name, ref)
					}
					a.Job = job
				}
				// Named by the chunk: its strings are shared already.
				if err := row(snapshotAllocChunkName, a); err != nil {
					return err
				}
			}
			continue
		case hdr.Format >= 2 && name == snapshotAllocName:
			var a snapshotAllocRow
			if err := dec.Decode(&a); err != nil {
				return fmt.Errorf("read %s row: %w", name, err)
			}
			job, ok := jobs[a.Ref]
			if !ok || a.Alloc == nil {
				return fmt.Errorf("read %s row: an allocation refers to job %d, which the snapshot does not hold before it", name, a.Ref)
			}
			a.Alloc.Job = job
			if err := row(TableAllocs, a.Alloc); err != nil {
				return err
			}
			continue
		}
		def, ok := defs[name]
		if !ok || def.derived {
			return fmt.Errorf("unknown table %q (snapshot from a newer version?)", name)
		}
		v := def.newRow()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("read %s row: %w", name, err)
		}
		if err := row(name, v); err != nil {
			return err
		}
	}
}
