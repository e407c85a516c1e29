package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// TestAllocListChunks: random inserts and removes, spread over many
// transactions, keep a row equal to a sorted set, its chunks within
// bounds and in order; and a row committed earlier is never changed by a
// later transaction's edits of its copy.
func TestAllocListChunks(t *testing.T) {
	var txns atomic.Uint64 // as Store.listTxns numbers a store's transactions
	r := rand.New(rand.NewPCG(7, 11))
	id := func() string {
		return string(rune('a'+r.IntN(26))) + string(rune('a'+r.IntN(26))) + string(rune('a'+r.IntN(26)))
	}
	var stored allocList // the committed row
	model := map[string]bool{}
	type frozen struct {
		row *allocList
		ids []string
	}
	var past []frozen
	for range 400 {
		txn := txns.Add(1)
		row := &allocList{chunks: slices.Clone(stored.chunks), n: stored.n}
		for range r.IntN(60) {
			switch k := id(); {
			case r.IntN(3) > 0 && !model[k]:
				row.insert(k, txn)
				model[k] = true
			default:
				if got := row.remove(k, txn); got != model[k] {
					t.Fatalf("remove %q reported %v, the set held it: %v", k, got, model[k])
				}
				delete(model, k)
			}
		}
		want := slices.Sorted(func(yield func(string) bool) {
			for k := range model {
				if !yield(k) {
					return
				}
			}
		})
		if got := row.ids(); !slices.Equal(got, want) || row.len() != len(want) {
			t.Fatalf("row %v (len %d), want %v", got, row.len(), want)
		}
		for i, c := range row.chunks {
			if len(c.ids) == 0 || len(c.ids) > maxListChunk {
				t.Fatalf("chunk %d holds %d IDs", i, len(c.ids))
			}
			if i > 0 {
				prev := row.chunks[i-1].ids
				if prev[len(prev)-1] >= c.ids[0] {
					t.Fatalf("chunk %d starts at %q, before the end of the previous one %q", i, c.ids[0], prev[len(prev)-1])
				}
			}
		}
		stored = *row
		past = append(past, frozen{row: &allocList{chunks: stored.chunks, n: stored.n}, ids: row.ids()})
	}
	for i, f := range past {
		if got := f.row.ids(); !slices.Equal(got, f.ids) {
			t.Fatalf("row committed by transaction %d changed afterwards: %v, was %v", i, got, f.ids)
		}
	}
}

// TestAllocListEditCopiesOneChunk: adding an ID to a long stored row
// copies one chunk, and shares the others with the stored row.
func TestAllocListEditCopiesOneChunk(t *testing.T) {
	var txns atomic.Uint64 // as Store.listTxns numbers a store's transactions
	var row allocList
	txn := txns.Add(1)
	for i := range 1000 {
		row.insert(string(rune(0x4e00+2*i)), txn)
	}
	next := txns.Add(1)
	edit := &allocList{chunks: slices.Clone(row.chunks), n: row.n}
	edit.insert(string(rune(0x4e00+501)), next)
	shared := 0
	for i, c := range edit.chunks {
		if c == row.chunks[i] {
			shared++
		}
	}
	if len(edit.chunks) != len(row.chunks) || shared != len(row.chunks)-1 {
		t.Fatalf("%d of %d chunks shared after one insert (row had %d chunks)", shared, len(edit.chunks), len(row.chunks))
	}
	if row.len() != 1000 || edit.len() != 1001 {
		t.Fatalf("lengths %d and %d", row.len(), edit.len())
	}
}

// ids returns the row's IDs in order, in a new slice.
func (l *allocList) ids() []string {
	out := make([]string, 0, l.n)
	for _, c := range l.chunks {
		out = append(out, c.ids...)
	}
	return out
}

// TestNodeAllocsServerIndex: a node's server index moves with the
// servers' writes of its allocations (placed, stopped, collected), not
// with a client's report, and wakes a read that watched it; a restored
// store starts from the highest AllocModifyIndex of each node.
func TestNodeAllocsServerIndex(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	at := func(node string) uint64 { return stMust[uint64](t)(s.NodeAllocsServerIndex(nil, node)) }
	if got := at("n1"); got != 0 {
		t.Fatalf("a node without allocations: %d, want 0", got)
	}
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a1", job, "n1"), stAlloc("a2", job, "n1")}})
	stApply(t, s, 12, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a3", job, "n2")}})
	if at("n1") != 11 || at("n2") != 12 {
		t.Fatalf("after placements: n1 %d, n2 %d; want 11 and 12", at("n1"), at("n2"))
	}

	ws := memdb.NewWatchSet()
	s.NodeAllocsServerIndex(ws, "n1")
	stApply(t, s, 13, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: "a1", ClientStatus: state.AllocClientStatusRunning}}})
	if at("n1") != 11 {
		t.Errorf("after a client's report: %d, want 11 still", at("n1"))
	}
	if !stFired(ws) {
		t.Error("a report did not wake the node's read (it must re-run it to see)")
	}

	stop := stMust[*state.Allocation](t)(s.AllocByID(nil, "a2")).Copy()
	stop.DesiredStatus = state.AllocDesiredStatusStop
	stApply(t, s, 14, PlanApplyRequestType, &PlanApplyRequest{Stops: []*state.Allocation{stop}})
	if at("n1") != 14 || at("n2") != 12 {
		t.Errorf("after a stop: n1 %d, n2 %d; want 14 and 12", at("n1"), at("n2"))
	}
	stApply(t, s, 15, GarbageCollectRequestType, &GarbageCollectRequest{Allocs: []string{"a2"}})
	if at("n1") != 15 {
		t.Errorf("after a collection: %d, want 15", at("n1"))
	}

	snap := stMust[*StateSnapshot](t)(s.Snapshot())
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	restored := stStore(t, Config{})
	if err := restored.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if got := stMust[uint64](t)(restored.NodeAllocsServerIndex(nil, "n1")); got != 11 {
		t.Errorf("restored: n1 %d, want 11 (a1's AllocModifyIndex)", got)
	}
}

// TestNodeAllocsChangedSince checks the node rows' logs against the
// states they summarize: after every write of a seeded run of
// placements, client reports, stops, moves and collections, the answer
// for each earlier index (when the log reaches it) holds exactly the
// node's allocations written since, every allocation that left the node
// since, none that is on it, and its count; the index just before the
// last write is always reached. A restored store has no log until its
// next write.
func TestNodeAllocsChangedSince(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	nodes := []string{"n1", "n2", "n3"}
	// onNode[i][node] are the IDs on node after index i.
	onNode := map[uint64]map[string]map[string]bool{}
	record := func(index uint64) {
		m := map[string]map[string]bool{}
		for _, n := range nodes {
			m[n] = map[string]bool{}
			for _, a := range stMust[[]*state.Allocation](t)(s.AllocsByNode(nil, n)) {
				m[n][a.ID] = true
			}
		}
		onNode[index] = m
	}
	record(10)
	check := func(index uint64) {
		t.Helper()
		for _, n := range nodes {
			now := stMust[[]*state.Allocation](t)(s.AllocsByNode(nil, n))
			for since := uint64(10); since < index; since++ {
				got, ok, err := s.NodeAllocsChangedSince(n, since)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if since == index-1 && len(now) > 0 {
						t.Fatalf("index %d, %s: the log does not reach %d, the index before the last write", index, n, since)
					}
					continue
				}
				if got.Count != len(now) {
					t.Fatalf("index %d, %s since %d: count %d, want %d", index, n, since, got.Count, len(now))
				}
				var want []string
				for _, a := range now {
					if a.ModifyIndex > since {
						want = append(want, a.ID)
					}
				}
				var changed []string
				for _, a := range got.Changed {
					changed = append(changed, a.ID)
				}
				if !slices.Equal(changed, want) {
					t.Fatalf("index %d, %s since %d: changed %v, want %v", index, n, since, changed, want)
				}
				for id := range onNode[since][n] {
					if !onNode[index][n][id] && !slices.Contains(got.Removed, id) {
						t.Fatalf("index %d, %s since %d: %s left the node but is not removed (%v)", index, n, since, id, got.Removed)
					}
				}
				for _, id := range got.Removed {
					if onNode[index][n][id] {
						t.Fatalf("index %d, %s since %d: %s is on the node but removed", index, n, since, id)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(34, 1))
	index := uint64(10)
	next := 0
	for range 300 {
		index++
		all := stMust[[]*state.Allocation](t)(s.Allocs(nil, allNamespaces, ""))
		pick := func() *state.Allocation { return all[rng.IntN(len(all))] }
		switch op := rng.IntN(10); {
		case op < 4 || len(all) == 0:
			var as []*state.Allocation
			for range 1 + rng.IntN(3) {
				next++
				as = append(as, stAlloc(fmt.Sprintf("a%03d", next), job, nodes[rng.IntN(len(nodes))]))
			}
			stApply(t, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: as})
		case op < 7:
			stApply(t, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: pick().ID, ClientStatus: state.AllocClientStatusRunning}}})
		case op < 8:
			moved := pick().Copy()
			moved.NodeID = nodes[rng.IntN(len(nodes))]
			moved.AllocModifyIndex = index
			stApply(t, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{moved}})
		case op < 9:
			stop := pick().Copy()
			stop.DesiredStatus = state.AllocDesiredStatusStop
			stApply(t, s, index, PlanApplyRequestType, &PlanApplyRequest{Stops: []*state.Allocation{stop}})
		default:
			stApply(t, s, index, GarbageCollectRequestType, &GarbageCollectRequest{Allocs: []string{pick().ID}})
		}
		record(index)
		check(index)
	}

	snap := stMust[*StateSnapshot](t)(s.Snapshot())
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	restored := stStore(t, Config{})
	if err := restored.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := restored.NodeAllocsChangedSince("n1", index-1); ok {
		t.Error("a restored row answered from a log it does not have")
	}
	stApply(t, restored, index+1, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("new", job, "n1")}})
	got, ok, err := restored.NodeAllocsChangedSince("n1", index)
	if err != nil || !ok || len(got.Changed) != 1 || got.Changed[0].ID != "new" {
		t.Errorf("after a write to the restored row: %+v, %v, %v; want the new allocation", got, ok, err)
	}
}
