package raft

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	hraft "github.com/hashicorp/raft"
)

// countingStore is an in-memory log store that counts the reads the cache
// let through.
type countingStore struct {
	*hraft.InmemStore
	reads int
}

func (s *countingStore) GetLog(idx uint64, l *hraft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(idx, l)
}

// entry is a log entry at idx whose data is size bytes naming idx.
func entry(idx uint64, size int) *hraft.Log {
	data := bytes.Repeat([]byte{'.'}, size)
	copy(data, fmt.Sprintf("%d", idx))
	return &hraft.Log{Index: idx, Term: 1, Type: hraft.LogCommand, Data: data[:size:size]}
}

// storeRange stores entries lo..hi, one call each, all of size bytes.
func storeRange(t *testing.T, c *logCache, lo, hi uint64, size int) {
	t.Helper()
	for i := lo; i <= hi; i++ {
		if err := c.StoreLog(entry(i, size)); err != nil {
			t.Fatal(err)
		}
	}
}

// readFrom reads idx through the cache, checks it is the entry written at
// idx with size bytes, and says whether the store was read.
func readFrom(t *testing.T, c *logCache, s *countingStore, idx uint64, size int) (fromStore bool) {
	t.Helper()
	before := s.reads
	var l hraft.Log
	if err := c.GetLog(idx, &l); err != nil {
		t.Fatalf("GetLog(%d): %v", idx, err)
	}
	if want := entry(idx, size); l.Index != idx || !bytes.Equal(l.Data, want.Data) {
		t.Fatalf("GetLog(%d) = index %d, %d bytes %.10q; want the entry written", idx, l.Index, len(l.Data), l.Data)
	}
	return s.reads > before
}

func TestLogCacheBoundedByBytes(t *testing.T) {
	s := &countingStore{InmemStore: hraft.NewInmemStore()}
	c := newLogCache(s, 512, 10_000)
	storeRange(t, c, 1, 100, 1000) // 100 KB written, 10 KB cached
	if c.bytes > c.budget {
		t.Fatalf("cache holds %d bytes, budget %d", c.bytes, c.budget)
	}
	for i := uint64(91); i <= 100; i++ {
		if readFrom(t, c, s, i, 1000) {
			t.Errorf("entry %d of the newest ten was read from the store", i)
		}
	}
	for i := uint64(1); i <= 90; i++ {
		if !readFrom(t, c, s, i, 1000) {
			t.Errorf("entry %d is older than the budget holds but did not come from the store", i)
		}
	}
}

func TestLogCacheBoundedByEntries(t *testing.T) {
	s := &countingStore{InmemStore: hraft.NewInmemStore()}
	c := newLogCache(s, 8, 1<<20)
	storeRange(t, c, 1, 20, 10)
	if got := c.next - c.first; got != 8 {
		t.Fatalf("window of %d entries; want 8", got)
	}
	if !readFrom(t, c, s, 12, 10) || readFrom(t, c, s, 13, 10) || readFrom(t, c, s, 20, 10) {
		t.Fatal("want entries 13..20 from memory and 12 from the store")
	}
}

func TestLogCacheOversizedEntry(t *testing.T) {
	s := &countingStore{InmemStore: hraft.NewInmemStore()}
	c := newLogCache(s, 512, 1000)
	storeRange(t, c, 1, 3, 100)
	storeRange(t, c, 4, 4, 5000)
	storeRange(t, c, 5, 5, 100)
	if !readFrom(t, c, s, 4, 5000) {
		t.Error("an entry over the whole budget was cached")
	}
	for _, i := range []uint64{1, 2, 3, 5} {
		if readFrom(t, c, s, i, 100) {
			t.Errorf("entry %d was read from the store", i)
		}
	}
	if c.bytes != 400 {
		t.Errorf("cache counts %d bytes; want 400", c.bytes)
	}
}

func TestLogCacheDeleteRange(t *testing.T) {
	s := &countingStore{InmemStore: hraft.NewInmemStore()}
	c := newLogCache(s, 512, 1<<20)
	storeRange(t, c, 1, 10, 10)

	// Compaction deletes a prefix: the newer entries stay cached.
	if err := c.DeleteRange(1, 4); err != nil {
		t.Fatal(err)
	}
	if c.first != 5 || c.bytes != 60 {
		t.Fatalf("after compacting 1..4: window starts at %d with %d bytes; want 5 and 60", c.first, c.bytes)
	}
	var l hraft.Log
	if err := c.GetLog(3, &l); err == nil {
		t.Fatal("a compacted entry is still readable")
	}
	if readFrom(t, c, s, 5, 10) {
		t.Fatal("entry 5 was read from the store after compacting a prefix")
	}

	// A follower deletes a conflicting suffix, then writes over it: the
	// new entries are read, never the cached old ones.
	if err := c.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	storeRange(t, c, 8, 10, 30)
	for i := uint64(8); i <= 10; i++ {
		readFrom(t, c, s, i, 30)
	}
	readFrom(t, c, s, 5, 10)
	readFrom(t, c, s, 7, 10)
}

func TestLogCacheStoreFailureCachesNothing(t *testing.T) {
	c := newLogCache(failingStore{hraft.NewInmemStore()}, 512, 1<<20)
	if err := c.StoreLog(entry(1, 10)); err == nil {
		t.Fatal("StoreLog succeeded over a failing store")
	}
	var l hraft.Log
	if err := c.GetLog(1, &l); err == nil {
		t.Fatal("an entry the store refused is readable")
	}
}

// failingStore refuses every write.
type failingStore struct{ *hraft.InmemStore }

func (failingStore) StoreLogs([]*hraft.Log) error { return fmt.Errorf("disk full") }

// TestLogCacheRandomAgreesWithStore runs random writes, compactions and
// suffix rewrites: every read through the cache equals the store's, and
// the cache's byte count is the sum of what it holds, within its bounds.
func TestLogCacheRandomAgreesWithStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2))
	s := hraft.NewInmemStore()
	c := newLogCache(s, 16, 2000)
	var lo, hi uint64 = 1, 0 // the store holds lo..hi
	for step := range 2000 {
		switch op := rng.IntN(10); {
		case op < 7:
			n := 1 + rng.IntN(4)
			var batch []*hraft.Log
			for range n {
				hi++
				batch = append(batch, entry(hi, 1+rng.IntN(700)))
			}
			if err := c.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
		case op < 9 && hi > lo:
			to := lo + uint64(rng.IntN(int(hi-lo)))
			if err := c.DeleteRange(lo, to); err != nil {
				t.Fatal(err)
			}
			lo = to + 1
		case hi > lo:
			from := lo + 1 + uint64(rng.IntN(int(hi-lo)))
			if err := c.DeleteRange(from, hi); err != nil {
				t.Fatal(err)
			}
			hi = from - 1
		}
		held := 0
		for i := c.first; i < c.next; i++ {
			if l := c.ring[i%uint64(len(c.ring))]; l != nil {
				held += entrySize(l)
			}
		}
		if held != c.bytes || c.bytes > c.budget || c.next-c.first > uint64(len(c.ring)) {
			t.Fatalf("step %d: cache counts %d bytes, holds %d, budget %d, window %d..%d", step, c.bytes, held, c.budget, c.first, c.next)
		}
		for i := lo; i <= hi; i++ {
			var got, want hraft.Log
			if err := c.GetLog(i, &got); err != nil {
				t.Fatalf("step %d: GetLog(%d): %v", step, i, err)
			}
			if err := s.GetLog(i, &want); err != nil {
				t.Fatal(err)
			}
			if got.Index != want.Index || !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("step %d: entry %d from the cache differs from the store's", step, i)
			}
		}
	}
}
