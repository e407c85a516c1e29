// Package packed is the store's memory machinery: what makes a million
// stored allocations fit in about a kilobyte and a half each, kept apart
// from the store's deterministic tables and commands.
//
//   - compaction (compact.go): an allocation about to be stored shares
//     every value equal to one already held (its job, its node's ID and
//     name, its group's resources, strings and count maps of the command);
//   - interning (counts.go): the small count maps of allocation metrics,
//     shared across commands;
//   - allocation records (records.go): the compact layout of allocations
//     in snapshots and in packed plans, decoded into slabs (slab.go) of
//     many allocations at once;
//   - the packed allocation table (buckets.go): the rows of the store's
//     allocations table are buckets of a few hundred allocations, not one
//     allocation each.
//
// The Packer is the one entry point: a store holds one, and everything it
// hands out (compactors, readers) shares its count maps. Buckets and
// record writers are plain values the store's table and snapshots use
// directly: they hold nothing shared. What the package
// does changes what is shared in memory, never what is read: every value
// it returns is equal to the one it was given, so the store's Apply gives
// the same results with or without it.
package packed

import (
	"io"
	"sync"

	"github.com/schedhq/sched/state"
)

// Codec is the msgpack codec of the store's log and snapshots, in which
// records carry the fields they hold as blobs (networks, ports, the rare
// fields of allocExtras).
type Codec interface {
	// Encode writes v to w.
	Encode(w io.Writer, v any) error
	// Decode decodes b into out.
	Decode(b []byte, out any) error
}

// Packer is the entry point of the memory machinery: one per store, used
// by its Apply, Restore and snapshot decoding. Its methods are safe for
// concurrent use; what they return is used by one goroutine.
type Packer struct {
	codec  Codec
	counts *countMaps
	// plans pools the readers of packed plans: a plan of a thousand
	// placements filled maps of thousands of strings from empty, every
	// plan. A reader's slab stays with it: the allocations of the next
	// plan go on filling its blocks.
	plans sync.Pool
}

// New returns a Packer whose records encode their blobs with c.
func New(c Codec) *Packer {
	p := &Packer{codec: c, counts: newCountMaps()}
	p.plans.New = func() any { return p.NewReader() }
	return p
}

// Compactor returns a compactor for the allocations of one command, which
// reads the rows they may share in rows.
func (p *Packer) Compactor(rows Rows) *Compactor { return newCompactor(rows, p.counts, false) }

// RestoreCompactor is Compactor for a restore, where every allocation
// decodes its own copy of its job: jobs are shared by row identity
// without being compared whole (compact.go).
func (p *Packer) RestoreCompactor(rows Rows) *Compactor { return newCompactor(rows, p.counts, true) }

// NewReader returns a reader of allocation records that takes the objects
// of what it decodes from slabs (slab.go).
func (p *Packer) NewReader() *Reader {
	return &Reader{codec: p.codec, counts: p.counts, strs: map[string]string{}, slab: new(slab)}
}

// Unpack decodes the allocations PackAllocs wrote.
func (p *Packer) Unpack(b []byte) ([]*state.Allocation, error) {
	r := p.plans.Get().(*Reader)
	defer func() {
		// The strings and scores decoded stay with the allocations;
		// the reader keeps only its room.
		r.buf, r.err = nil, nil
		clear(r.strs)
		clear(r.table)
		r.scores.Reset() // a record that failed half-way leaves scores added
		p.plans.Put(r)
	}()
	r.Chunk(b)
	n := r.uvarint()
	// A record takes dozens of bytes: a count the entry cannot hold is
	// corrupt, and allocates nothing.
	if r.err == nil && n > uint64(len(r.buf)) {
		r.fail("count past the entry")
	}
	allocs := make([]*state.Allocation, 0, min(n, uint64(len(r.buf))))
	for range n {
		if r.err != nil {
			break
		}
		a, _ := r.Alloc()
		allocs = append(allocs, a)
	}
	if r.err == nil && len(r.buf) != 0 {
		r.fail("bytes after the last record")
	}
	if r.err != nil {
		return nil, r.err
	}
	return allocs, nil
}
