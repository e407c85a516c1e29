package raft

import (
	"os"
	"path/filepath"
	"testing"

	hraft "github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// appendLogs stores n entries of size bytes after *next, in batches of
// batch, as raft's leader does.
func appendLogs(tb testing.TB, s *raftboltdb.BoltStore, next *uint64, n, batch, size int) {
	tb.Helper()
	data := make([]byte, size)
	for n > 0 {
		k := min(batch, n)
		logs := make([]*hraft.Log, k)
		for i := range logs {
			logs[i] = &hraft.Log{Index: *next, Term: 1, Type: hraft.LogCommand, Data: data}
			*next++
		}
		if err := s.StoreLogs(logs); err != nil {
			tb.Fatal(err)
		}
		n -= k
	}
}

// TestLogStoreReopensAfterCompaction checks that the log store, whose
// free-page list is not written to disk (logStoreOptions), keeps every
// entry and the stable store across a reopen after raft deleted a
// prefix of the log, and reuses the freed pages rather than growing.
func TestLogStoreReopensAfterCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	next := uint64(1)
	appendLogs(t, s, &next, 4000, 50, 2000)
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 3000); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = openLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 3001 || last != 4000 {
		t.Fatalf("after reopen the log is [%d, %d], want [3001, 4000]", first, last)
	}
	var l hraft.Log
	if err := s.GetLog(3500, &l); err != nil || len(l.Data) != 2000 {
		t.Fatalf("entry 3500 after reopen: %v (%d bytes)", err, len(l.Data))
	}
	if term, err := s.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
		t.Fatalf("CurrentTerm after reopen: %d, %v", term, err)
	}
	// The pages the deleted prefix held are free again: as many
	// entries as were deleted fit without the file growing much.
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	appendLogs(t, s, &next, 3000, 50, 2000)
	if after := size(); after > before+before/4 {
		t.Fatalf("raft.db grew from %d to %d bytes writing over freed pages", before, after)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLogStoreAfterCompaction is the cost of one commit of four
// 4 KB entries after raft deleted a 256 MiB log behind a snapshot (the
// most SnapshotBytesMax lets build up), with bolt's default free-page
// list (written at every commit, searched linearly) and with the one
// the servers use (logStoreOptions).
func BenchmarkLogStoreAfterCompaction(b *testing.B) {
	for _, c := range []struct {
		name string
		opts *bbolt.Options
	}{
		{"default-freelist", &bbolt.Options{Timeout: boltOpenTimeout}},
		{"servers", logStoreOptions()},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "raft.db"), BoltOptions: c.opts})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			next := uint64(1)
			appendLogs(b, s, &next, 64_000, 64, 4000)
			if err := s.DeleteRange(1, next-1000); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				appendLogs(b, s, &next, 4, 4, 4000)
			}
		})
	}
}

// BenchmarkLogStoreFresh is the cost of a new server's first 64 MiB of
// log: 64 entries of 1 MiB (a plan placing about a thousand allocations
// is of that size), eight to a commit, into an empty raft.db, with bolt's
// default map size, which starts at 32 KiB and doubles, each time the
// file outgrows it, by unmapping and remapping the file after copying
// every node the commit holds off the old mapping, and with the one the
// servers use (logStoreOptions).
func BenchmarkLogStoreFresh(b *testing.B) {
	def := logStoreOptions()
	def.InitialMmapSize = 0
	for _, c := range []struct {
		name string
		opts *bbolt.Options
	}{
		{"default-mmap", def},
		{"servers", logStoreOptions()},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "raft.db"), BoltOptions: c.opts})
				if err != nil {
					b.Fatal(err)
				}
				next := uint64(1)
				b.StartTimer()
				appendLogs(b, s, &next, 64, 8, 1<<20)
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}
