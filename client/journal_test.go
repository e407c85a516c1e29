package client

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func journalAlloc(id, meta string) *state.Allocation {
	return &state.Allocation{ID: id, TaskGroup: "g", Job: &state.Job{ID: "j", Meta: map[string]string{"m": meta}}}
}

func loadedByID(t *testing.T, s *stateStore) (map[string]*persistedAlloc, []error) {
	t.Helper()
	got, errs := s.load()
	out := map[string]*persistedAlloc{}
	for _, p := range got {
		out[p.Alloc.ID] = p
	}
	return out, errs
}

// A client killed mid-put leaves a torn last record: the loader keeps
// what came before, reports the tail, and cuts it off so that later
// records are read again.
func TestJournalTornTail(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	for _, id := range []string{"a1", "a2"} {
		if err := s.put(journalAlloc(id, "v1"), &persistedRun{}); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	path := filepath.Join(s.dir, journalName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	got, errs := loadedByID(t, s)
	if len(got) != 1 || got["a1"] == nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "torn") {
		t.Fatalf("after a torn tail: %d allocs %v, errors %v", len(got), got, errs)
	}
	if err := s.put(journalAlloc("a3", "v1"), &persistedRun{}); err != nil {
		t.Fatal(err)
	}
	got, errs = loadedByID(t, s)
	if len(got) != 2 || got["a1"] == nil || got["a3"] == nil || len(errs) != 0 {
		t.Fatalf("a record after the cut: %d allocs, errors %v", len(got), errs)
	}
}

// A flipped byte fails the checksum: the record and the rest are
// dropped, not misread.
func TestJournalChecksum(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	if err := s.put(journalAlloc("a1", "v1"), &persistedRun{}); err != nil {
		t.Fatal(err)
	}
	if err := s.put(journalAlloc("a1", "v2"), &persistedRun{}); err != nil {
		t.Fatal(err)
	}
	s.close()
	path := filepath.Join(s.dir, journalName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(string(b), "v2")
	b[i] = 'x'
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, errs := loadedByID(t, s)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "checksum") || got["a1"] == nil || got["a1"].Alloc.Job.Meta["m"] != "v1" {
		t.Fatalf("after a corrupt record: %v, errors %v", got, errs)
	}
}

// Rewrites of the same allocations past the threshold compact the file
// to its live records, and each keeps its last state.
func TestJournalCompacts(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	big := strings.Repeat("x", 64<<10)
	for i := range 2 * journalCompactMin / len(big) {
		for _, id := range []string{"a1", "a2"} {
			if err := s.put(journalAlloc(id, big+string(rune('a'+i%26))), &persistedRun{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.remove("a2"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(s.dir, journalName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= journalCompactMin {
		t.Fatalf("journal of %d bytes after %d bytes of puts was not compacted", fi.Size(), 2*journalCompactMin)
	}
	last := big + string(rune('a'+(2*journalCompactMin/len(big)-1)%26))
	got, errs := loadedByID(t, s)
	if len(got) != 1 || len(errs) != 0 || got["a1"].Alloc.Job.Meta["m"] != last {
		t.Fatalf("after compaction: %d allocs, errors %v", len(got), errs)
	}
	entries, _ := os.ReadDir(s.dir)
	if len(entries) != 1 {
		t.Fatalf("files left in the state dir: %v", entries)
	}
}

// The per-allocation files of earlier versions load; the journal
// overrides them, and remove deletes them.
func TestJournalReadsLegacyFiles(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	for _, id := range []string{"old1", "old2"} {
		b, _ := json.Marshal(&persistedAlloc{Alloc: journalAlloc(id, "file"), Run: &persistedRun{Stopping: true}})
		if err := os.WriteFile(filepath.Join(s.dir, id+stateSuffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, errs := loadedByID(t, s)
	if len(got) != 2 || len(errs) != 0 || !got["old1"].Run.Stopping {
		t.Fatalf("legacy files: %d allocs, errors %v", len(got), errs)
	}
	if err := s.put(journalAlloc("old1", "journal"), &persistedRun{}); err != nil {
		t.Fatal(err)
	}
	if err := s.remove("old2"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "old2"+stateSuffix)); !os.IsNotExist(err) {
		t.Fatalf("a removed allocation's file is still there: %v", err)
	}
	got, errs = loadedByID(t, s)
	if len(got) != 1 || len(errs) != 0 || got["old1"].Alloc.Job.Meta["m"] != "journal" {
		t.Fatalf("journal over files: %v, errors %v", got, errs)
	}
}

// A record of the runner's state alone keeps the allocation of the last
// full record, through a reload and through compaction; there must be one
// to keep.
func TestJournalRunOnlyRecords(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	if err := s.putRun("a0", &persistedRun{}); err == nil {
		t.Fatal("a runner's state was recorded for an allocation never put")
	}
	if err := s.put(journalAlloc("a1", "v1"), &persistedRun{Description: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := s.putRun("a1", &persistedRun{Description: "second"}); err != nil {
		t.Fatal(err)
	}
	got, errs := loadedByID(t, s)
	if len(got) != 1 || len(errs) != 0 || got["a1"].Alloc.Job.Meta["m"] != "v1" || got["a1"].Run.Description != "second" {
		t.Fatalf("after a run-only record: %v, errors %v", got["a1"], errs)
	}
	big := strings.Repeat("y", 64<<10)
	n := 2 * journalCompactMin / len(big)
	for i := range n {
		if err := s.putRun("a1", &persistedRun{Description: big + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(s.dir, journalName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= journalCompactMin {
		t.Fatalf("journal of %d bytes was not compacted", fi.Size())
	}
	got, errs = loadedByID(t, s)
	if len(got) != 1 || len(errs) != 0 || got["a1"].Alloc.Job.Meta["m"] != "v1" || got["a1"].Run.Description != big+strconv.Itoa(n-1) {
		t.Fatalf("after compaction of run-only records: %d allocs, errors %v", len(got), errs)
	}
	// A new version of the allocation, then a removal: nothing is left.
	if err := s.put(journalAlloc("a1", "v2"), &persistedRun{}); err != nil {
		t.Fatal(err)
	}
	if err := s.remove("a1"); err != nil {
		t.Fatal(err)
	}
	if got, errs = loadedByID(t, s); len(got) != 0 || len(errs) != 0 {
		t.Fatalf("after removal: %v, errors %v", got, errs)
	}
}

// Allocations of one job share its encoding in the journal, and share one
// *state.Job once loaded; a record of an earlier version, with the job in
// the allocation, still loads.
func TestJournalSharesJobs(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	j := &state.Job{ID: "web", Meta: map[string]string{"m": "shared"}}
	for _, id := range []string{"a1", "a2"} {
		if err := s.put(&state.Allocation{ID: id, TaskGroup: "g", Job: j}, &persistedRun{}); err != nil {
			t.Fatal(err)
		}
	}
	// An earlier version's record: the job inside the allocation.
	old, err := json.Marshal(map[string]any{"ID": "a3", "Alloc": journalAlloc("a3", "inline"), "Run": &persistedRun{}})
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, journalHeader, journalHeader+len(old))
	binary.LittleEndian.PutUint32(frame[0:4], uint32(len(old)))
	binary.LittleEndian.PutUint32(frame[4:8], crc32.Checksum(old, journalCRC))
	s.close()
	f, err := os.OpenFile(filepath.Join(s.dir, journalName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(frame, old...)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if j.ID != "web" {
		t.Fatal("put changed the job")
	}
	got, errs := loadedByID(t, s)
	if len(got) != 3 || len(errs) != 0 {
		t.Fatalf("loaded %d allocations, errors %v", len(got), errs)
	}
	if a1, a2 := got["a1"].Alloc.Job, got["a2"].Alloc.Job; a1 == nil || a1 != a2 || a1.Meta["m"] != "shared" {
		t.Fatalf("jobs after load: %+v and %+v, want one shared job", a1, a2)
	}
	if a3 := got["a3"].Alloc.Job; a3 == nil || a3.Meta["m"] != "inline" {
		t.Fatalf("job of an earlier version's record: %+v", a3)
	}
}

// Puts and removals from many goroutines at once, their records written
// in groups and the journal compacted meanwhile, leave every allocation's
// last state and forget the removed ones; a fresh store on the same
// directory reads the same, without errors.
func TestJournalConcurrentPuts(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	const writers, puts = 32, 40
	big := strings.Repeat("z", 16<<10)
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			id := "a" + strconv.Itoa(w)
			err := s.put(journalAlloc(id, "v"+strconv.Itoa(w)), &persistedRun{})
			for i := 0; err == nil && i < puts; i++ {
				err = s.putRun(id, &persistedRun{Description: big + strconv.Itoa(i)})
			}
			if err == nil && w%3 == 0 {
				err = s.remove(id)
			}
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(s.dir, journalName))
	if err != nil {
		t.Fatal(err)
	}
	if written := int64(writers * puts * len(big)); fi.Size() >= written {
		t.Errorf("journal of %d bytes after %d bytes of records: never compacted", fi.Size(), written)
	}
	got, loadErrs := loadedByID(t, &stateStore{dir: s.dir})
	if len(loadErrs) != 0 {
		t.Fatalf("load errors: %v", loadErrs)
	}
	for w := range writers {
		id := "a" + strconv.Itoa(w)
		p := got[id]
		switch {
		case w%3 == 0 && p != nil:
			t.Errorf("%s was removed but loads", id)
		case w%3 != 0 && (p == nil || p.Run.Description != big+strconv.Itoa(puts-1) || p.Alloc.Job.Meta["m"] != "v"+strconv.Itoa(w)):
			t.Errorf("%s: loaded %v, want its last state", id, p)
		}
	}
}
