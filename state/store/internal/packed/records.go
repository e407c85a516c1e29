package packed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/schedhq/sched/state"
)

// Allocation records: format 3 of the store's snapshots writes
// allocations in chunks of records of a layout of their own rather than
// as msgpack maps, and a packed plan's entry carries its placements so:
// the reflection-driven msgpack decoder spent a third of its time
// matching field names and most of the rest allocating strings and maps
// that the store then replaced by shared ones (compact.go). In a
// snapshot a chunk is one msgpack byte string after a pseudo-table name,
// holding records back to back; each refers to a job by the number of a
// job row the store wrote before the chunk.
//
// A record, with uvarint and varint as in encoding/binary, a string as a
// uvarint length and its bytes, a shared string (*) as a uvarint n: 0 for
// a string that follows and takes the next number of the chunk, else the
// chunk's string number n-1 (score keys, node and evaluation IDs repeat
// across a chunk's allocations), and a blob as a uvarint length and that
// many bytes of msgpack (length 0: the zero value):
//
//	uvarint  job reference + 1 (0: no job)
//	string × 16   ID, Namespace*, EvalID*, Name, NodeID*, NodeName*, JobID*,
//	              TaskGroup*, DesiredStatus*, DesiredDescription*,
//	              ClientStatus*, ClientDescription*, PreviousAllocation,
//	              NextAllocation, DeploymentID*, FollowupEvalID*
//	uvarint × 3   CreateIndex, ModifyIndex, AllocModifyIndex
//	varint × 2    CreateTime, ModifyTime
//	resources     byte 0 (nil) or 1, then: a map of tasks (below), each a
//	              name, byte 0 (nil) or 1, varint CPU and MemoryMB, blob
//	              Networks (task names shared); varint Shared.DiskMB, blob Shared.Networks, blob
//	              Shared.Ports
//	metrics       byte 0 (nil) or 1, then varint NodesEvaluated,
//	              NodesFiltered, NodesInPool, NodesExhausted,
//	              CoalescedFailures, AllocationTime; maps NodesAvailable,
//	              ClassFiltered, ConstraintFiltered, ClassExhausted,
//	              DimensionExhausted (shared string keys, varint values); a
//	              list of shared strings QuotaExhausted; a map Scores
//	              (shared string keys "<node-id>.<component>",
//	              little-endian float64 bits: the map state.Scores
//	              stands for, however it is held in memory)
//	blob          allocExtras: the fields a placement leaves zero
//
// A map or list is a uvarint count + 1 (0: nil) and its entries. The
// layout is fixed for format 3: a field added to Allocation goes into
// allocExtras, which msgpack encodes by name (TestAllocRecordRoundTrip
// fails for a field the record drops).

// allocExtras are the fields of an allocation that a placement leaves
// zero, written as one msgpack blob when any is set.
type allocExtras struct {
	DesiredTransition state.DesiredTransition
	TaskStates        map[string]*state.TaskState
	DeploymentStatus  *state.AllocDeploymentStatus
	RescheduleTracker *state.RescheduleTracker
	// Preemption (docs/scheduler.md#preemption).
	PreemptedAllocations  []string
	PreemptedByAllocation string
	// MemoryMax maps a task to its AllocatedTaskResources.MemoryMaxMB,
	// for the tasks that have one (memory oversubscription).
	MemoryMax map[string]int
}

// isZero reports whether x holds nothing to write.
func (x *allocExtras) isZero() bool {
	t := x.DesiredTransition
	return t.Migrate == nil && t.Reschedule == nil && t.ForceReschedule == nil && t.NoShutdownDelay == nil &&
		x.TaskStates == nil && x.DeploymentStatus == nil && x.RescheduleTracker == nil &&
		x.PreemptedAllocations == nil && x.PreemptedByAllocation == "" && x.MemoryMax == nil
}

// Writer appends allocation records to a chunk. Its maps and caches keep
// their room from chunk to chunk (Reset), so a writer is worth reusing.
type Writer struct {
	codec Codec
	buf   []byte
	// table numbers the shared strings written in the chunk so far, and
	// scoreKeys the score keys, by node and component (the key
	// "<node-id>.<component>" is never built); next is the next number.
	// scoreKeys maps a ref's Hash to i for the first ref of that hash:
	// scoreRefs[i] is the ref, scoreNums[i] its number. A map of uint64 to
	// uint64 takes the runtime's fast path and 16 bytes an entry, where a
	// map keyed by the ref hashed it field by field (a string among them)
	// and held 48-byte keys, a cache miss per lookup at 30,000 keys a
	// chunk (10,000 nodes). Refs whose hash another ref has go to
	// scoreClash.
	table      map[string]uint64
	scoreKeys  map[uint64]uint64
	scoreRefs  []state.ScoreRef
	scoreNums  []uint64
	scoreClash map[state.ScoreRef]uint64
	// counts caches the encoding of the count maps of allocation metrics
	// by the map's identity (countSlot); a snapshot's writer has one
	// (NewSnapshotWriter), a plan's writes too few records to use it.
	counts []countSlot
	// recent caches scoreKeys by a cheap hash of the ref: a placement's
	// scores name the same few hundred nodes again and again, and a map
	// lookup of a ScoreRef was most of a record's cost. Made on first
	// use and kept by the writer (plan writers are pooled); its slots are
	// valid for the chunk numbered gen only, so reset clears nothing.
	recent *scoreCache
	gen    uint64
	// fields caches, per field of a record (sharedAt), the last string
	// written there and its number.
	fields [12]fieldSlot
	next   uint64
	// blob is scratch space for the msgpack of one blob, key for a score
	// key.
	blob bytes.Buffer
	key  []byte
}

// fieldSlot is an entry of Writer.fields: the number of s, when
// set in this chunk.
type fieldSlot struct {
	s   string
	n   uint64
	set bool
}

// scoreSlot is an entry of Writer.recent: the number of ref in the
// chunk numbered gen (0 is no chunk: the writer's chunks count from 1).
type scoreSlot struct {
	ref state.ScoreRef
	n   uint64
	gen uint64
}

// scoreCache is Writer.recent.
type scoreCache [1024]scoreSlot

// scoreHash is what Writer numbers score keys by; a test makes every ref
// clash.
var scoreHash = state.ScoreRef.Hash

// countSlot is an entry of Writer.counts: the encoding of the count map
// m in the chunk numbered gen. The store's count maps are interned and
// never changed (countMaps, Compactor.metrics), so the placements of a
// chunk hold a few thousand distinct maps among them, and a map seen
// before is written by copying its bytes rather than by walking it (an
// iterator's start was two thirds of a walk, and the map's memory a cache
// miss per allocation in a large store). Only an encoding that names
// strings by number alone is cached: it stays valid for the rest of the
// chunk.
type countSlot struct {
	m   unsafe.Pointer
	gen uint64
	enc []byte
}

// snapshotCountSlots is the size of a snapshot writer's cache of count
// maps: a chunk's records (some 16,000 at 10,000 nodes) hold a few
// thousand distinct maps once nodes fill up (the store interns up to
// countMapSlots).
const snapshotCountSlots = 1 << 12

// NewWriter returns a writer whose blobs are encoded with c.
func NewWriter(c Codec) *Writer { return &Writer{codec: c} }

// NewSnapshotWriter returns a writer for the chunks of a snapshot, which
// writes a count map it has written in the chunk by copying its
// encoding.
func NewSnapshotWriter(c Codec) *Writer {
	return &Writer{codec: c, counts: make([]countSlot, snapshotCountSlots)}
}

// Reset starts a new chunk, keeping the room of the last.
func (w *Writer) Reset() {
	w.buf = w.buf[:0]
	clear(w.table)
	clear(w.scoreKeys)
	w.scoreRefs = w.scoreRefs[:0]
	w.scoreNums = w.scoreNums[:0]
	clear(w.scoreClash)
	w.gen++
	clear(w.fields[:])
	w.next = 0
}

// shared writes a string that repeats: by number when the chunk holds it,
// whole (numbered next) when it is new to the chunk. It returns the
// string's number.
func (w *Writer) shared(s string) uint64 {
	if n, ok := w.table[s]; ok {
		w.uvarint(n + 1)
		return n
	}
	if w.table == nil {
		w.table = map[string]uint64{}
	}
	n := w.next
	w.table[s] = n
	w.next++
	w.uvarint(0)
	w.str(s)
	return n
}

// sharedAt is shared for the string of field f of a record, which is
// often the string the previous record had there (the namespace, the
// statuses, and in a plan's records the job, evaluation and deployment):
// then its number is known without a map lookup.
func (w *Writer) sharedAt(f int, s string) {
	if c := &w.fields[f]; c.set && c.s == s {
		w.uvarint(c.n + 1)
		return
	}
	w.fields[f] = fieldSlot{s: s, n: w.shared(s), set: true}
}

// scoreKey writes a score key as shared writes the string
// state.ScoreKey(r.Node(), r.Component()), numbering it by its ref (a
// node ID's 16 bytes and a component number hash much faster than the
// key).
func (w *Writer) scoreKey(r state.ScoreRef) {
	if w.recent == nil {
		w.recent = new(scoreCache)
	}
	if w.gen == 0 {
		w.gen = 1 // a writer never reset: its first chunk
	}
	h := scoreHash(r)
	slot := &w.recent[h%uint64(len(scoreCache{}))]
	if slot.gen == w.gen && slot.ref == r {
		w.uvarint(slot.n + 1)
		return
	}
	var n uint64
	i, ok := w.scoreKeys[h]
	if ok && w.scoreRefs[i] == r {
		n = w.scoreNums[i]
	} else if ok {
		if n, ok = w.scoreClash[r]; !ok {
			if w.scoreClash == nil {
				w.scoreClash = map[state.ScoreRef]uint64{}
			}
			w.scoreClash[r] = w.next
		}
	} else {
		if w.scoreKeys == nil {
			w.scoreKeys = map[uint64]uint64{}
		}
		w.scoreKeys[h] = uint64(len(w.scoreRefs))
		w.scoreRefs = append(w.scoreRefs, r)
		w.scoreNums = append(w.scoreNums, w.next)
	}
	if ok {
		*slot = scoreSlot{r, n, w.gen}
		w.uvarint(n + 1)
		return
	}
	*slot = scoreSlot{r, w.next, w.gen}
	w.next++
	w.uvarint(0)
	w.key = r.AppendKey(w.key[:0])
	w.uvarint(uint64(len(w.key)))
	w.buf = append(w.buf, w.key...)
}

func (w *Writer) uvarint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *Writer) varint(v int64)   { w.buf = binary.AppendVarint(w.buf, v) }
func (w *Writer) byte(b byte)      { w.buf = append(w.buf, b) }

func (w *Writer) str(s string) {
	w.uvarint(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// count writes a map's or list's size, nil apart from empty.
func (w *Writer) count(n int, isNil bool) {
	if isNil {
		w.uvarint(0)
		return
	}
	w.uvarint(uint64(n) + 1)
}

// msgpack writes v as a blob, or an empty one when zero is set.
func (w *Writer) msgpack(v any, zero bool) error {
	if zero {
		w.uvarint(0)
		return nil
	}
	w.blob.Reset()
	if err := w.codec.Encode(&w.blob, v); err != nil {
		return err
	}
	w.uvarint(uint64(w.blob.Len()))
	w.buf = append(w.buf, w.blob.Bytes()...)
	return nil
}

func (w *Writer) intMap(m map[string]int) {
	if len(m) == 0 || w.counts == nil {
		w.count(len(m), m == nil)
		for k, v := range m {
			w.shared(k)
			w.varint(int64(v))
		}
		return
	}
	if w.gen == 0 {
		w.gen = 1 // a writer never reset: its first chunk
	}
	id := *(*unsafe.Pointer)(unsafe.Pointer(&m))
	slot := &w.counts[(uintptr(id)>>4)%uintptr(len(w.counts))]
	if slot.gen == w.gen && slot.m == id {
		w.buf = append(w.buf, slot.enc...)
		return
	}
	start, next := len(w.buf), w.next
	w.count(len(m), false)
	for k, v := range m {
		w.shared(k)
		w.varint(int64(v))
	}
	if w.next == next { // no string written whole
		*slot = countSlot{id, w.gen, append(slot.enc[:0], w.buf[start:]...)}
	}
}

// Bytes returns the chunk written since the last Reset; it stays the
// writer's until the next Reset or Take.
func (w *Writer) Bytes() []byte { return w.buf }

// Alloc appends a's record; ref is its job's reference, -1 for none.
func (w *Writer) Alloc(ref int, a *state.Allocation) error {
	w.uvarint(uint64(ref + 1))
	w.str(a.ID)
	w.sharedAt(0, a.Namespace)
	w.sharedAt(1, a.EvalID)
	w.str(a.Name)
	for i, s := range [...]string{
		a.NodeID, a.NodeName, a.JobID, a.TaskGroup, a.DesiredStatus, a.DesiredDescription, a.ClientStatus, a.ClientDescription,
	} {
		w.sharedAt(2+i, s)
	}
	w.str(a.PreviousAllocation)
	w.str(a.NextAllocation)
	w.sharedAt(10, a.DeploymentID)
	w.sharedAt(11, a.FollowupEvalID)
	w.uvarint(a.CreateIndex)
	w.uvarint(a.ModifyIndex)
	w.uvarint(a.AllocModifyIndex)
	w.varint(a.CreateTime)
	w.varint(a.ModifyTime)
	if r := a.AllocatedResources; r == nil {
		w.byte(0)
	} else {
		w.byte(1)
		w.count(len(r.Tasks), r.Tasks == nil)
		for name, t := range r.Tasks {
			w.shared(name)
			if t == nil {
				w.byte(0)
				continue
			}
			w.byte(1)
			w.varint(int64(t.CPU))
			w.varint(int64(t.MemoryMB))
			if err := w.msgpack(t.Networks, t.Networks == nil); err != nil {
				return err
			}
		}
		w.varint(int64(r.Shared.DiskMB))
		if err := w.msgpack(r.Shared.Networks, r.Shared.Networks == nil); err != nil {
			return err
		}
		if err := w.msgpack(r.Shared.Ports, r.Shared.Ports == nil); err != nil {
			return err
		}
	}
	if m := a.Metrics; m == nil {
		w.byte(0)
	} else {
		w.byte(1)
		for _, v := range [...]int64{
			int64(m.NodesEvaluated), int64(m.NodesFiltered), int64(m.NodesInPool), int64(m.NodesExhausted),
			int64(m.CoalescedFailures), int64(m.AllocationTime),
		} {
			w.varint(v)
		}
		for _, cm := range [...]map[string]int{m.NodesAvailable, m.ClassFiltered, m.ConstraintFiltered, m.ClassExhausted, m.DimensionExhausted} {
			w.intMap(cm)
		}
		w.count(len(m.QuotaExhausted), m.QuotaExhausted == nil)
		for _, q := range m.QuotaExhausted {
			w.shared(q)
		}
		w.count(m.Scores.Len(), m.Scores.IsNil())
		m.Scores.EachRef(func(r state.ScoreRef, v float64) bool {
			w.scoreKey(r)
			w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(v))
			return true
		})
	}
	var memoryMax map[string]int
	if r := a.AllocatedResources; r != nil {
		for name, t := range r.Tasks {
			if t != nil && t.MemoryMaxMB != 0 {
				if memoryMax == nil {
					memoryMax = map[string]int{}
				}
				memoryMax[name] = t.MemoryMaxMB
			}
		}
	}
	// Checked before the extras are made: a value handed to the codec
	// escapes, and most records have none (an allocation each, else).
	if t := a.DesiredTransition; t.Migrate == nil && t.Reschedule == nil && t.ForceReschedule == nil && t.NoShutdownDelay == nil &&
		a.TaskStates == nil && a.DeploymentStatus == nil && a.RescheduleTracker == nil &&
		a.PreemptedAllocations == nil && a.PreemptedByAllocation == "" && memoryMax == nil {
		w.uvarint(0)
		return nil
	}
	x := &allocExtras{a.DesiredTransition, a.TaskStates, a.DeploymentStatus, a.RescheduleTracker, a.PreemptedAllocations, a.PreemptedByAllocation, memoryMax}
	return w.msgpack(x, x.isZero())
}

// packedRecordGuess is about what one placement's record takes in a
// packed plan (a placement with five nodes' scores: ~250 bytes), so that
// the entry's buffer rarely grows.
const packedRecordGuess = 320

// PackAllocs writes allocs as a count and their records (no job
// references), in a buffer of its own, for Packer.Unpack: a packed plan's
// placements. The error of an allocation that cannot be written is
// state.Invalidf's, with the field path under field.
func (w *Writer) PackAllocs(field string, allocs []*state.Allocation) ([]byte, error) {
	w.Reset()
	w.buf = make([]byte, 0, 16+len(allocs)*packedRecordGuess)
	defer func() { w.buf = nil }()
	w.uvarint(uint64(len(allocs)))
	for i, a := range allocs {
		if a == nil {
			return nil, state.Invalidf(state.Fieldf(field, i, "ID"), "missing allocation")
		}
		if err := w.Alloc(-1, a); err != nil {
			return nil, state.Invalidf(state.Fieldf(field, i, ""), "cannot be packed: %v", err)
		}
	}
	return w.buf, nil
}

// ErrBadRecord is the error of a record that does not parse.
var ErrBadRecord = errors.New("malformed allocation record")

// Reader parses allocation records from a chunk. Errors are sticky: a
// read past a malformed field returns zero values, and Err says why.
// Readers come from a Packer (NewReader), whose count maps they share.
type Reader struct {
	codec  Codec
	counts *countMaps
	buf    []byte
	err    error
	// strs interns the strings that repeat across allocations (IDs of
	// nodes, jobs and evaluations, statuses, map keys), so that most
	// decode into a string already held rather than a new one.
	strs map[string]string
	// table holds the chunk's shared strings by number.
	table []string
	// scores builds each record's Scores, its room reused.
	scores state.ScoresBuilder
	// pairs holds a count map's entries while it is read.
	pairs []countPair
	// slab, when set, is where alloc takes the objects of what it
	// decodes; else each is an object of its own.
	slab *slab
}

// Chunk starts reading the records of a chunk.
func (r *Reader) Chunk(b []byte) {
	r.buf = b
	r.table = r.table[:0]
}

// More reports whether the chunk holds more bytes to read.
func (r *Reader) More() bool { return len(r.buf) > 0 }

// Err is the first error met reading the chunk, or nil.
func (r *Reader) Err() error { return r.err }

func (r *Reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrBadRecord, what)
	}
	r.buf = nil
}

func (r *Reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *Reader) varint() int64 {
	v, n := binary.Varint(r.buf)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *Reader) int() int { return int(r.varint()) }

func (r *Reader) byte() byte {
	if len(r.buf) == 0 {
		r.fail("short")
		return 0
	}
	b := r.buf[0]
	r.buf = r.buf[1:]
	return b
}

func (r *Reader) float64() float64 {
	b := r.bytes(8)
	if len(b) < 8 {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// bytes returns the next n bytes, which stay r.buf's.
func (r *Reader) bytes(n uint64) []byte {
	if n > uint64(len(r.buf)) {
		r.fail("length past the chunk")
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

// str reads a string of its own (IDs that do not repeat).
func (r *Reader) str() string {
	b := r.bytes(r.uvarint())
	if r.slab != nil {
		return r.slab.string(b)
	}
	return string(b)
}

// shared reads a string that repeats: one of the chunk's by number, or a
// new one, interned.
func (r *Reader) shared() string {
	if n := r.uvarint(); n > 0 {
		if n > uint64(len(r.table)) {
			r.fail("string number past the chunk's strings")
			return ""
		}
		return r.table[n-1]
	}
	if r.err != nil {
		return ""
	}
	b := r.bytes(r.uvarint())
	s, ok := r.strs[string(b)]
	if !ok {
		s = string(b)
		r.strs[s] = s
	}
	r.table = append(r.table, s)
	return s
}

// count reads a map's or list's size: -1 for nil. A size that the rest of
// the chunk cannot hold (an entry takes a byte at least) is an error, so
// a corrupt count allocates nothing.
func (r *Reader) count() int {
	n := r.uvarint()
	if n == 0 {
		return -1
	}
	if n-1 > uint64(len(r.buf)) {
		r.fail("count past the chunk")
		return -1
	}
	return int(n - 1)
}

// msgpack decodes a blob into out; an empty blob leaves out zero.
func (r *Reader) msgpack(out any) {
	b := r.bytes(r.uvarint())
	if len(b) == 0 || r.err != nil {
		return
	}
	if err := r.codec.Decode(b, out); err != nil && r.err == nil {
		r.err = fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
}

func (r *Reader) intMap() map[string]int {
	n := r.count()
	if n < 0 {
		return nil
	}
	pairs := r.pairs[:0]
	for range n {
		k := r.shared()
		pairs = append(pairs, countPair{k, r.int()})
	}
	// A map the store already holds is shared as it is read, rather than
	// made and then replaced by compaction.
	m := r.counts.fromPairs(pairs)
	clear(pairs)
	r.pairs = pairs[:0]
	return m
}

// Alloc parses the next record: the allocation and its job's reference
// (-1 for none).
func (r *Reader) Alloc() (*state.Allocation, int) {
	var a *state.Allocation
	if r.slab != nil {
		a = r.slab.alloc()
	} else {
		a = &state.Allocation{}
	}
	ref := int(r.uvarint()) - 1
	a.ID = r.str()
	a.Namespace = r.shared()
	a.EvalID = r.shared()
	a.Name = r.str()
	a.NodeID = r.shared()
	a.NodeName = r.shared()
	a.JobID = r.shared()
	a.TaskGroup = r.shared()
	a.DesiredStatus = r.shared()
	a.DesiredDescription = r.shared()
	a.ClientStatus = r.shared()
	a.ClientDescription = r.shared()
	a.PreviousAllocation = r.str()
	a.NextAllocation = r.str()
	a.DeploymentID = r.shared()
	a.FollowupEvalID = r.shared()
	a.CreateIndex = r.uvarint()
	a.ModifyIndex = r.uvarint()
	a.AllocModifyIndex = r.uvarint()
	a.CreateTime = r.varint()
	a.ModifyTime = r.varint()
	if r.byte() == 1 {
		res := &state.AllocatedResources{}
		if n := r.count(); n >= 0 {
			res.Tasks = make(map[string]*state.AllocatedTaskResources, n)
			for range n {
				name := r.shared()
				if r.byte() == 0 {
					res.Tasks[name] = nil
					continue
				}
				t := &state.AllocatedTaskResources{CPU: r.int(), MemoryMB: r.int()}
				r.msgpack(&t.Networks)
				res.Tasks[name] = t
			}
		}
		res.Shared.DiskMB = r.int()
		r.msgpack(&res.Shared.Networks)
		r.msgpack(&res.Shared.Ports)
		a.AllocatedResources = res
	}
	if r.byte() == 1 {
		var m *state.AllocMetric
		if r.slab != nil {
			m = r.slab.metric()
		} else {
			m = new(state.AllocMetric)
		}
		m.NodesEvaluated, m.NodesFiltered, m.NodesInPool, m.NodesExhausted = r.int(), r.int(), r.int(), r.int()
		m.CoalescedFailures = r.int()
		m.AllocationTime = time.Duration(r.varint())
		m.NodesAvailable = r.intMap()
		m.ClassFiltered = r.intMap()
		m.ConstraintFiltered = r.intMap()
		m.ClassExhausted = r.intMap()
		m.DimensionExhausted = r.intMap()
		if n := r.count(); n >= 0 {
			m.QuotaExhausted = make([]string, n)
			for i := range m.QuotaExhausted {
				m.QuotaExhausted[i] = r.shared()
			}
		}
		if n := r.count(); n >= 0 {
			r.scores.Grow(n)
			for range n {
				k := r.shared()
				r.scores.AddKey(k, r.float64())
			}
			if r.slab != nil {
				m.Scores = r.scores.ScoresIn(r.slab.take)
			} else {
				m.Scores = r.scores.Scores()
			}
		}
		a.Metrics = m
	}
	var x allocExtras
	r.msgpack(&x)
	a.DesiredTransition, a.TaskStates, a.DeploymentStatus, a.RescheduleTracker = x.DesiredTransition, x.TaskStates, x.DeploymentStatus, x.RescheduleTracker
	a.PreemptedAllocations, a.PreemptedByAllocation = x.PreemptedAllocations, x.PreemptedByAllocation
	if a.AllocatedResources != nil {
		for name, mb := range x.MemoryMax {
			if t := a.AllocatedResources.Tasks[name]; t != nil {
				t.MemoryMaxMB = mb
			}
		}
	}
	return a, ref
}
