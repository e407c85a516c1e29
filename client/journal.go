package client

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/schedhq/sched/state"
)

// The client's state journal: every allocation's state, appended to one
// file,
//
//	<data_dir>/client/state/journal
//
// as framed records: a 4-byte little-endian payload length, the
// payload's CRC-32 (Castagnoli), and the payload, the JSON of a
// journalRecord. An allocation's state is the Alloc of its last record
// that carries one (a put, when the servers sent a new version) and the
// Run of its last record (every put; a runner's task changes write only
// that, without the allocation and its job, which were most of a
// record's bytes and of its encoding's CPU); a record with Removed set
// forgets it. A put is then (at most) one write(2) on a file already
// open, shared by the puts that arrive meanwhile (a group commit:
// appendLocked), where a file per allocation cost an open, a write, a
// close and a rename (about 30% of a dev agent's CPU while its client
// started allocations by the thousand, most of it in those system
// calls).
//
// A record is written whole, with those grouped with it, by one write on
// an O_APPEND descriptor, so a client process killed mid-put leaves at
// worst a torn last group: the loader stops at the first record whose
// frame or checksum does not hold and truncates the file there. As with
// the per-allocation files, nothing is fsynced: the journal survives the
// client process dying, not the machine losing power.
//
// The file grows with every put; once it holds more than
// journalCompactMin bytes and more than journalCompactRatio times the
// bytes of the live records, it is rewritten with only those (read back
// from the file: the client keeps where each allocation's last Alloc and
// last Run lie, not a copy of its state).
//
// The per-allocation files of earlier versions (<alloc id>.json) are
// still read at load; the journal's records override them, and a removed
// allocation's file is deleted.

// journalName is the journal's file name in the state directory.
const journalName = "journal"

// journalHeader is the frame's size: length and checksum.
const journalHeader = 8

// journalMaxRecord bounds a record's length: a larger one is corruption
// (an allocation's state with its job is kilobytes).
const journalMaxRecord = 64 << 20

// Compaction thresholds (see above).
const (
	journalCompactMin   = 8 << 20
	journalCompactRatio = 4
)

var journalCRC = crc32.MakeTable(crc32.Castagnoli)

// journalRecord is one record's payload. Alloc is nil in a record that
// updates only the runner's state.
type journalRecord struct {
	ID      string
	Removed bool              `json:",omitempty"`
	Alloc   *state.Allocation `json:",omitempty"`
	Run     *persistedRun     `json:",omitempty"`
	// Job, when set, is Alloc's job, encoded apart (Alloc.Job is then
	// null): the allocations of one job version share one *state.Job, and
	// its encoding is reused from one record to the next (a thousand
	// placements of a job encoded it a thousand times). Records of
	// earlier versions carry it in Alloc.
	Job json.RawMessage `json:",omitempty"`
	// runJSON, when set, is Run already encoded (by appendTaskParts and
	// appendRunRest, outside the journal's lock: allocRunner.persist),
	// written in its place; only with journalShapesKnown.
	runJSON []byte
}

// journalJobCache is how many jobs' encodings a journal keeps for reuse:
// the jobs of the allocations being started, a few at a time.
const journalJobCache = 8

// encodedJob is one job's encoding, kept for reuse.
type encodedJob struct {
	job *state.Job
	enc json.RawMessage
}

// jobJSONLocked returns j's encoding, from the cache when j was encoded
// lately (jobs read from the servers are never changed in place). s.mu
// must be held.
func (s *stateStore) jobJSONLocked(j *state.Job) (json.RawMessage, error) {
	for _, e := range s.jobs {
		if e.job == j {
			return e.enc, nil
		}
	}
	enc, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	if len(s.jobs) < journalJobCache {
		s.jobs = append(s.jobs, encodedJob{j, enc})
	} else {
		s.jobs[s.nextJob] = encodedJob{j, enc}
		s.nextJob = (s.nextJob + 1) % journalJobCache
	}
	return enc, nil
}

// extent is where a record lies in the journal.
type extent struct{ off, n int64 }

// liveRecs are where an allocation's live records lie: the last that
// carries its Alloc, and the last (its Run), which is the same record or
// a later one.
type liveRecs struct{ alloc, run extent }

// bytes is what the records weigh.
func (l liveRecs) bytes() int64 {
	if l.alloc == l.run {
		return l.run.n
	}
	return l.alloc.n + l.run.n
}

// openJournalLocked opens the journal for appending, creating the
// directory and the file when missing. s.mu must be held.
func (s *stateStore) openJournalLocked() error {
	if s.f != nil {
		return nil
	}
	if s.live == nil {
		s.live = map[string]liveRecs{}
	}
	path := filepath.Join(s.dir, journalName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return err
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	s.f, s.size = f, fi.Size()
	return nil
}

// appendLocked writes one record and returns where it lies. s.mu must
// be held; it is released while the record is written (writeQueueLocked).
//
// The records of puts that arrive while one is being written are written
// together, in the order they came, by the next of them to run (a group
// commit): a thousand task runners persisting at once make a few dozen
// write(2) calls, not a thousand, and each put still returns only once
// its record is in the file.
func (s *stateStore) appendLocked(rec *journalRecord) (extent, error) {
	start := len(s.pending)
	if err := s.frameLocked(rec); err != nil {
		s.pending = s.pending[:start]
		return extent{}, err
	}
	q := &queuedRecord{n: int64(len(s.pending) - start), id: rec.ID, withAlloc: rec.Alloc != nil, removed: rec.Removed}
	s.queue = append(s.queue, q)
	for !q.done {
		if s.writing {
			s.cond().Wait()
			continue
		}
		s.writeQueueLocked()
	}
	return q.e, q.err
}

// queuedRecord is a framed record of n bytes waiting in s.pending to be
// written, of allocation id (carrying its Alloc, or removing it); e and
// err are set once it was (done).
type queuedRecord struct {
	n                  int64
	id                 string
	withAlloc, removed bool
	e                  extent
	err                error
	done               bool
}

// cond is signalled when a group of records was written. s.mu must be
// held.
func (s *stateStore) cond() *sync.Cond {
	if s.written == nil {
		s.written = sync.NewCond(&s.mu)
	}
	return s.written
}

// waitIdleLocked waits until no put is writing (s.mu is released
// meanwhile), so that s.f and s.size can be replaced. s.mu must be held.
func (s *stateStore) waitIdleLocked() {
	for s.writing {
		s.cond().Wait()
	}
}

// journalMaxSpare bounds the pending buffer kept for reuse after a
// write, so that one burst does not pin a large buffer for ever.
const journalMaxSpare = 1 << 20

// writeQueueLocked writes every queued record in one write, with s.mu
// released, and marks each done. A failed write fails them all, and a
// partial one is cut off (it would hide every later record from the
// loader). s.mu must be held and no put be writing.
//
// The records are framed straight into s.pending (frameLocked), one
// buffer for the group: the write takes it, and the puts that arrive
// meanwhile frame theirs into the spare one, which the buffer written
// becomes once the write is done.
func (s *stateStore) writeQueueLocked() {
	batch, buf := s.queue, s.pending
	s.queue, s.pending, s.spare = nil, s.spare[:0], nil
	finish := func(base int64, err error) {
		off := base
		for _, q := range batch {
			if err != nil {
				q.err = err
			} else {
				q.e = extent{off: off, n: q.n}
				off += q.n
				s.recordWrittenLocked(q.id, q.withAlloc, q.removed, q.e)
			}
			q.done = true
		}
		if cap(buf) <= journalMaxSpare && s.spare == nil {
			s.spare = buf[:0]
		}
		s.cond().Broadcast()
	}
	if err := s.openJournalLocked(); err != nil {
		finish(0, err)
		return
	}
	f, base := s.f, s.size
	s.writing = true
	s.mu.Unlock()
	n, err := f.Write(buf)
	if err != nil && n > 0 {
		_ = f.Truncate(base)
	}
	s.mu.Lock()
	s.writing = false
	if err == nil {
		s.size += int64(len(buf))
	}
	finish(base, err)
}

// pendingWriter appends to s.pending: a record is encoded in place, not
// into a buffer of its own copied into its frame and then into the
// group's.
type pendingWriter struct{ s *stateStore }

func (w pendingWriter) Write(p []byte) (int, error) {
	w.s.pending = append(w.s.pending, p...)
	return len(p), nil
}

// frameLocked appends one record with its frame to s.pending. s.mu must
// be held (the job encodings it reuses and s.pending are s's). The
// payload is the record's JSON, written by appendRecord (journal_enc.go),
// or by json.Encoder when the appenders do not know the record's types
// as they are (journalShapesKnown) or cannot write one of its values;
// either way with a trailing newline, which a reader skips as white
// space.
func (s *stateStore) frameLocked(rec *journalRecord) error {
	var job json.RawMessage
	if rec.Alloc != nil && rec.Alloc.Job != nil {
		var err error
		if job, err = s.jobJSONLocked(rec.Alloc.Job); err != nil {
			return err
		}
	}
	start := len(s.pending)
	s.pending = append(s.pending, make([]byte, journalHeader)...)
	if journalShapesKnown() {
		var err error
		if s.pending, err = appendRecord(s.pending, rec, job); err == nil {
			s.pending = append(s.pending, '\n')
			s.frameHeader(start)
			return nil
		}
		s.pending = s.pending[:start+journalHeader]
		if rec.runJSON != nil {
			// The runner's tasks are only in runJSON, which
			// encoding/json would leave out.
			return err
		}
	}
	if job != nil {
		a := *rec.Alloc
		a.Job = nil
		cp := *rec
		cp.Alloc, cp.Job = &a, nil
		rec = &cp
	}
	if s.enc == nil {
		s.enc = json.NewEncoder(pendingWriter{s})
	}
	if err := s.enc.Encode(rec); err != nil {
		return err
	}
	if job != nil {
		// The job's encoding goes in as it is: through the encoder, a
		// RawMessage is scanned and copied again. Job is the record's
		// last field, left out above: its closing brace and the newline
		// are replaced.
		s.pending = append(append(append(s.pending[:len(s.pending)-2], `,"Job":`...), job...), '}')
	}
	s.frameHeader(start)
	return nil
}

// frameHeader fills in the header of the record framed from start on in
// s.pending: its payload's length and checksum.
func (s *stateStore) frameHeader(start int) {
	payload := s.pending[start+journalHeader:]
	binary.LittleEndian.PutUint32(s.pending[start:start+4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(s.pending[start+4:start+8], crc32.Checksum(payload, journalCRC))
}

// journalPut records an allocation's state: a record without Alloc
// keeps the one recorded before, and fails when there is none.
func (s *stateStore) journalPut(rec *journalRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live[rec.ID]; rec.Alloc == nil && !ok {
		return fmt.Errorf("journal: allocation %s has no state to update", rec.ID)
	}
	if _, err := s.appendLocked(rec); err != nil {
		return err
	}
	return s.maybeCompactLocked()
}

// recordWrittenLocked indexes a record just written at e (by the put
// that wrote its group, before s.mu is released: a compaction copies the
// live records, and must find this one among them). s.mu must be held.
func (s *stateStore) recordWrittenLocked(id string, withAlloc, removed bool, e extent) {
	old, ok := s.live[id]
	if ok {
		s.liveBytes -= old.bytes()
	}
	if removed {
		delete(s.live, id)
		return
	}
	next := liveRecs{alloc: e, run: e}
	if ok && !withAlloc {
		next.alloc = old.alloc
	}
	s.live[id] = next
	s.liveBytes += next.bytes()
}

// journalRemove forgets an allocation, and deletes its file of an
// earlier version when there was one.
func (s *stateStore) journalRemove(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.legacy[id] {
		delete(s.legacy, id)
		if err := os.Remove(filepath.Join(s.dir, id+stateSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if _, ok := s.live[id]; !ok {
		return nil
	}
	if _, err := s.appendLocked(&journalRecord{ID: id, Removed: true}); err != nil {
		return err
	}
	return s.maybeCompactLocked()
}

// readJournal reads the journal's records in order, calling fn with each
// and where it lies. It returns the length of the valid prefix and an
// error when a record is torn or corrupt (the rest is then unread).
func readJournal(path string, fn func(rec *journalRecord, e extent) error) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	// jobs shares the jobs read: records of the same job carry the same
	// encoding.
	jobs := map[string]*state.Job{}
	var off int64
	var hdr [journalHeader]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return off, nil
			}
			return off, fmt.Errorf("journal: torn record header at offset %d", off)
		}
		n := binary.LittleEndian.Uint32(hdr[0:4])
		if n > journalMaxRecord {
			return off, fmt.Errorf("journal: record of %d bytes at offset %d", n, off)
		}
		payload = append(payload[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r, payload); err != nil {
			return off, fmt.Errorf("journal: torn record at offset %d", off)
		}
		if crc32.Checksum(payload, journalCRC) != binary.LittleEndian.Uint32(hdr[4:8]) {
			return off, fmt.Errorf("journal: checksum mismatch at offset %d", off)
		}
		var rec journalRecord
		if err := json.Unmarshal(payload, &rec); err != nil || rec.ID == "" {
			return off, fmt.Errorf("journal: unreadable record at offset %d", off)
		}
		if rec.Job != nil && rec.Alloc != nil && rec.Alloc.Job == nil {
			j := jobs[string(rec.Job)]
			if j == nil {
				j = new(state.Job)
				if err := json.Unmarshal(rec.Job, j); err != nil {
					return off, fmt.Errorf("journal: unreadable job in the record at offset %d", off)
				}
				jobs[string(rec.Job)] = j
			}
			rec.Alloc.Job = j
		}
		e := extent{off: off, n: journalHeader + int64(n)}
		if err := fn(&rec, e); err != nil {
			return off, err
		}
		off += e.n
	}
}

// loadJournal reads the journal into byID (an allocation's last Alloc
// and last Run win; a removal deletes), indexes the live records, cuts a
// torn or corrupt tail off, and opens the journal for appending. The
// error, when not nil, reports the tail that was cut.
func (s *stateStore) loadJournal(byID map[string]*persistedAlloc) (tailErr, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitIdleLocked()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.live, s.liveBytes = map[string]liveRecs{}, 0
	path := filepath.Join(s.dir, journalName)
	valid, tailErr := readJournal(path, func(rec *journalRecord, e extent) error {
		old, ok := s.live[rec.ID]
		if ok {
			s.liveBytes -= old.bytes()
			delete(s.live, rec.ID)
		}
		if rec.Removed {
			delete(byID, rec.ID)
			return nil
		}
		next := liveRecs{alloc: e, run: e}
		p := byID[rec.ID]
		if rec.Alloc == nil {
			if p == nil {
				// Its Alloc was in a record before a removal, or in a
				// file of an earlier version that is gone: the
				// runner's state alone restores nothing.
				return nil
			}
			if ok {
				next.alloc = old.alloc
			} else {
				// The Alloc is a legacy file's: nothing to keep of
				// the journal's but this record.
				next.alloc = e
			}
			p.Run = rec.Run
		} else {
			byID[rec.ID] = &persistedAlloc{Alloc: rec.Alloc, Run: rec.Run}
		}
		s.live[rec.ID] = next
		s.liveBytes += next.bytes()
		return nil
	})
	if tailErr != nil {
		if err := os.Truncate(path, valid); err != nil {
			return tailErr, err
		}
	}
	if err := s.openJournalLocked(); err != nil {
		return tailErr, err
	}
	return tailErr, s.maybeCompactLocked()
}

// maybeCompactLocked rewrites the journal with its live records only,
// when the dead ones outweigh them (see above). s.mu must be held.
func (s *stateStore) maybeCompactLocked() error {
	if s.size < journalCompactMin || s.size < journalCompactRatio*s.liveBytes {
		return nil
	}
	return s.compactLocked()
}

// compactLocked copies every live record into a new journal and renames
// it over the old one. s.mu must be held.
func (s *stateStore) compactLocked() error {
	s.waitIdleLocked()
	path := filepath.Join(s.dir, journalName)
	old, err := os.Open(path)
	if err != nil {
		return err
	}
	defer old.Close()
	tmp, err := os.CreateTemp(s.dir, "."+journalName+".tmp*")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(tmp, 256<<10)
	next := make(map[string]liveRecs, len(s.live))
	var off int64
	var buf []byte
	// copyRec copies the record at e and returns where it lies in tmp.
	copyRec := func(e extent) (extent, error) {
		buf = append(buf[:0], make([]byte, e.n)...)
		if _, err := old.ReadAt(buf, e.off); err != nil {
			return extent{}, err
		}
		if _, err := w.Write(buf); err != nil {
			return extent{}, err
		}
		ne := extent{off: off, n: e.n}
		off += e.n
		return ne, nil
	}
	for id, l := range s.live {
		// The Alloc's record first: the Run of a later one overrides
		// the older Run it carries.
		var nl liveRecs
		if nl.alloc, err = copyRec(l.alloc); err != nil {
			break
		}
		nl.run = nl.alloc
		if l.run != l.alloc {
			if nl.run, err = copyRec(l.run); err != nil {
				break
			}
		}
		next[id] = nl
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("journal: compact: %w", err)
	}
	s.f.Close()
	s.f = nil
	if err := s.openJournalLocked(); err != nil {
		return err
	}
	s.live = next
	return nil
}

// close closes the journal; a later put opens it again.
func (s *stateStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitIdleLocked()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
