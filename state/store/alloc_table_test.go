package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// stOddIDs are IDs that are not UUIDs: shorter than a bucket's key, equal
// to one, and with characters around the hex digits, so that the buckets'
// order and parts are checked beyond what the leader generates.
var stOddIDs = []string{"", "a", "ab", "abc", "abc0", "abc-", "abc/", "abc:", "abca", "abcg", "abcz", "abc\xff",
	"ab-", "ab0", "A-1", "zzzz", "~", "0", "00", "000", "0000", "fff", "ffff", "fffg",
	// IDs whose sort keys (packed's entry) are equal: the same eight bytes
	// after their bucket's key, zero bytes or nothing past it.
	"abc12345678", "abc12345678\x00", "abc12345678-a", "abc12345678-b", "abc1234567", "abc1234567\x00", "abc1234567\x00\x00"}

// stModel is what the allocations table must hold: allocations by ID.
type stModel map[string]*state.Allocation

func (m stModel) sorted(prefix string) []*state.Allocation {
	var out []*state.Allocation
	for id, a := range m {
		if strings.HasPrefix(id, prefix) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *state.Allocation) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// stCheckTable compares what txn reads of the allocations table with m:
// every lookup, the iteration order, and prefix queries of every length.
func stCheckTable(t *testing.T, txn *memdb.Txn, m stModel, probes []string) {
	t.Helper()
	for _, id := range probes {
		got, err := getAlloc(nil, txn, id)
		if err != nil {
			t.Fatal(err)
		}
		if got != m[id] {
			t.Fatalf("getAlloc(%q) = %p, want %p", id, got, m[id])
		}
	}
	prefixes := map[string]bool{}
	for _, id := range probes {
		for n := 0; n <= min(len(id), 6); n++ {
			prefixes[id[:n]] = true
		}
	}
	for prefix := range prefixes {
		var got []*state.Allocation
		if err := eachAlloc(nil, txn, prefix, func(a *state.Allocation) bool { got = append(got, a); return true }); err != nil {
			t.Fatal(err)
		}
		if want := m.sorted(prefix); !slices.Equal(got, want) {
			t.Fatalf("prefix %q: %d allocations, want %d (or another order)", prefix, len(got), len(want))
		}
	}
	n := 0
	iter, err := txn.Get(TableAllocs, indexID)
	if err != nil {
		t.Fatal(err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		b := raw.(*packed.Bucket)
		if err := b.Check(); err != nil {
			t.Fatal(err)
		}
		n += b.Len()
	}
	if n != len(m) {
		t.Fatalf("table holds %d allocations, want %d", n, len(m))
	}
}

// TestAllocTableAgreesWithModel writes random sequences of new, replaced
// and removed allocations, some transactions aborted, and checks after
// each that lookups, ID order and prefix queries match a plain map, that a
// read transaction opened before a write still reads what it read, and
// that an aborted transaction left nothing.
func TestAllocTableAgreesWithModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			s := stStore(t, Config{})
			pool := append(benchUUIDs(300, seed), stOddIDs...)
			// A few IDs in a crowded bucket, to fill its parts.
			for i := range 40 {
				pool = append(pool, fmt.Sprintf("5a5%x-%d", i%16, i))
			}
			m := stModel{}
			for round := range 40 {
				before := s.currentDB().Txn(false)
				seen := stCopyModel(m)
				tx := s.writeTxn(uint64(round + 2))
				next := stCopyModel(m)
				for range 1 + r.IntN(60) {
					id := pool[r.IntN(len(pool))]
					if r.IntN(3) == 0 {
						if err := tx.removeAlloc(id); err != nil {
							t.Fatal(err)
						}
						delete(next, id)
					} else {
						a := &state.Allocation{ID: id, ModifyIndex: uint64(round)}
						if err := tx.putAlloc(a); err != nil {
							t.Fatal(err)
						}
						next[id] = a
					}
					// Reads inside the transaction see its writes.
					if got, err := tx.allocByID(id); err != nil || got != next[id] {
						t.Fatalf("in transaction: allocByID(%q) = %v, %v; want %v", id, got, err, next[id])
					}
				}
				if r.IntN(4) == 0 {
					tx.Abort()
				} else {
					tx.finishAllocTable()
					tx.Commit()
					m = next
				}
				stCheckTable(t, s.currentDB().Txn(false), m, pool)
				stCheckTable(t, before, seen, pool)
			}
		})
	}
}

// stCopyModel copies a model.
func stCopyModel(m stModel) stModel {
	out := make(stModel, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestAllocTableRestoreInAnyOrder checks that a restore builds the same
// table from allocations in ID order (as Persist writes them), in reverse
// and shuffled, with repeated IDs (the last one wins, as an insert would).
func TestAllocTableRestoreInAnyOrder(t *testing.T) {
	ids := append(benchUUIDs(2000, 3), stOddIDs...)
	want := stModel{}
	for _, id := range ids {
		want[id] = &state.Allocation{ID: id}
	}
	sorted := want.sorted("")
	reversed := slices.Clone(sorted)
	slices.Reverse(reversed)
	shuffled := slices.Clone(sorted)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	repeated := append(slices.Clone(sorted[:500]), sorted...)
	for name, input := range map[string][]*state.Allocation{"sorted": sorted, "reversed": reversed, "shuffled": shuffled, "repeated": repeated} {
		t.Run(name, func(t *testing.T) {
			db, err := memdb.NewMemDB(dbSchema())
			if err != nil {
				t.Fatal(err)
			}
			txn := db.Txn(true)
			l := allocLoader{txn: txn}
			for _, a := range input {
				if err := l.add(a); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.flush(); err != nil {
				t.Fatal(err)
			}
			txn.Commit()
			stCheckTable(t, db.Txn(false), want, ids)
		})
	}
}

// TestAllocTableWatch checks that a read of one allocation wakes when it
// changes, appears or goes, and not for another allocation, even of its
// bucket (alloc_watch.go); and that a prefix query wakes for a new
// allocation of the buckets it read only.
func TestAllocTableWatch(t *testing.T) {
	web := stJob("web")
	// aaa0… and aaa1… share a bucket (and not a part); bbb0… is elsewhere.
	const a1, a2, b1, missing = "aaa0-1", "aaa1-1", "bbb0-1", "aaa2-1"
	setup := func(t *testing.T) *Store {
		s := stStore(t, Config{})
		stApply(t, s, 2, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
		stRegister(t, s, 3, web, nil)
		stApply(t, s, 4, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{
			stAlloc(a1, web, "n1"), stAlloc(a2, web, "n1"), stAlloc(b1, web, "n1"),
		}})
		return s
	}
	report := func(id string) any {
		return &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: id, ClientStatus: state.AllocClientStatusRunning}}}
	}
	place := func(id string) any {
		return &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc(id, web, "n1")}}
	}
	byID := func(id string) func(*Store, memdb.WatchSet) error {
		return func(s *Store, ws memdb.WatchSet) error { _, err := s.AllocByID(ws, id); return err }
	}
	byPrefix := func(prefix string) func(*Store, memdb.WatchSet) error {
		return func(s *Store, ws memdb.WatchSet) error { _, err := s.Allocs(ws, allNamespaces, prefix); return err }
	}
	tests := []struct {
		name     string
		read     func(*Store, memdb.WatchSet) error
		mt       MessageType
		req      any
		wantFire bool
	}{
		{"by id, it changed", byID(a1), AllocClientUpdateRequestType, report(a1), true},
		{"by id, same bucket changed", byID(a1), AllocClientUpdateRequestType, report(a2), false},
		{"by id, other bucket changed", byID(a1), AllocClientUpdateRequestType, report(b1), false},
		{"by id, missing one placed", byID(missing), AllocUpdateRequestType, place(missing), true},
		{"by id, missing bucket, placed", byID("ccc0"), AllocUpdateRequestType, place("ccc0"), true},
		{"by id, collected", byID(a1), EvalDeleteRequestType, &EvalDeleteRequest{Allocs: []string{a1}}, true},
		{"prefix a, placed under it", byPrefix("a"), AllocUpdateRequestType, place("a000"), true},
		{"prefix a, placed elsewhere", byPrefix("a"), AllocUpdateRequestType, place("c000"), false},
		{"prefix aaa1, placed in its bucket", byPrefix("aaa1"), AllocUpdateRequestType, place(missing), true},
		{"prefix aaa1, placed elsewhere", byPrefix("aaa1"), AllocUpdateRequestType, place("c000"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t)
			if tc.mt == EvalDeleteRequestType {
				// Only terminal allocations are collected.
				stApply(t, s, 5, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: a1, ClientStatus: state.AllocClientStatusComplete}}})
			}
			ws := memdb.NewWatchSet()
			if err := tc.read(s, ws); err != nil {
				t.Fatal(err)
			}
			if stFired(ws) {
				t.Fatal("fired before the write")
			}
			stApply(t, s, 10, tc.mt, tc.req)
			if got := stFired(ws); got != tc.wantFire {
				t.Errorf("fired = %v, want %v", got, tc.wantFire)
			}
		})
	}
}

// TestAllocTableSnapshotRoundTrip persists a store of allocations spread
// over many buckets and restores it: the same allocations, in order,
// through the public reads.
func TestAllocTableSnapshotRoundTrip(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 2, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	web := stJob("web")
	stRegister(t, s, 3, web, nil)
	var allocs []*state.Allocation
	for _, id := range append(benchUUIDs(3000, 9), "a", "ab", "abc", "abc0") {
		allocs = append(allocs, stAlloc(id, web, "n1"))
	}
	stApply(t, s, 4, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs})
	want := stMust[[]*state.Allocation](t)(s.Allocs(nil, allNamespaces, ""))
	if len(want) != len(allocs) {
		t.Fatalf("%d allocations stored, want %d", len(want), len(allocs))
	}
	snap := stMust[*StateSnapshot](t)(s.Snapshot())
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	dst := stStore(t, Config{})
	if err := dst.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	got := stMust[[]*state.Allocation](t)(dst.Allocs(nil, allNamespaces, ""))
	if len(got) != len(want) {
		t.Fatalf("%d allocations restored, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].ModifyIndex != want[i].ModifyIndex {
			t.Fatalf("restored allocation %d is %s@%d, want %s@%d", i, got[i].ID, got[i].ModifyIndex, want[i].ID, want[i].ModifyIndex)
		}
	}
	if n := dst.TableSizes()[TableAllocs]; n != len(want) {
		t.Errorf("TableSizes counts %d allocations, want %d", n, len(want))
	}
	stCheckTable(t, dst.currentDB().Txn(false), stModelOf(got), append(benchUUIDs(3000, 9), stOddIDs...))
}

// stModelOf is the model of a list of allocations.
func stModelOf(allocs []*state.Allocation) stModel {
	m := stModel{}
	for _, a := range allocs {
		m[a.ID] = a
	}
	return m
}

// TestAllocWatchSnapshotAndRestore checks that a read of one allocation
// through a snapshot wakes when the store writes it, and that a restore
// wakes every read of one allocation.
func TestAllocWatchSnapshotAndRestore(t *testing.T) {
	web := stJob("web")
	s := stStore(t, Config{})
	stApply(t, s, 2, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	stRegister(t, s, 3, web, nil)
	stApply(t, s, 4, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("aaa0", web, "n1"), stAlloc("aaa1", web, "n1")}})

	snap := stMust[*StateSnapshot](t)(s.Snapshot())
	ws := memdb.NewWatchSet()
	if a := stMust[*state.Allocation](t)(snap.AllocByID(ws, "aaa0")); a == nil {
		t.Fatal("allocation not read")
	}
	stApply(t, s, 5, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: "aaa1", ClientStatus: state.AllocClientStatusRunning}}})
	if stFired(ws) {
		t.Fatal("fired for another allocation")
	}
	stApply(t, s, 6, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: "aaa0", ClientStatus: state.AllocClientStatusRunning}}})
	if !stFired(ws) {
		t.Fatal("did not fire when the store wrote the allocation")
	}

	ws = memdb.NewWatchSet()
	stMust[*state.Allocation](t)(s.AllocByID(ws, "aaa1"))
	var buf bytes.Buffer
	if err := stMust[*StateSnapshot](t)(s.Snapshot()).Persist(&buf); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if !stFired(ws) {
		t.Fatal("did not fire on restore")
	}
}

// TestAllocTableIDsSharingAPrefix: allocation IDs whose first bytes are
// all the same (sequential numbers, as the scheduler harness makes them)
// share one bucket and one sort key, and are still each found, and an ID
// between two of them is not.
func TestAllocTableIDsSharingAPrefix(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	var allocs []*state.Allocation
	for i := range 600 {
		allocs = append(allocs, stAlloc(fmt.Sprintf("00000000-0000-4000-8000-%012d", 2*i), job, "n1"))
	}
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: 1})
	for _, a := range allocs {
		if got := stMust[*state.Allocation](t)(s.AllocByID(nil, a.ID)); got == nil || got.ID != a.ID {
			t.Fatalf("%s read back as %v", a.ID, got)
		}
	}
	if got := stMust[*state.Allocation](t)(s.AllocByID(nil, fmt.Sprintf("00000000-0000-4000-8000-%012d", 301))); got != nil {
		t.Fatalf("an ID between two stored ones found %s", got.ID)
	}
}
