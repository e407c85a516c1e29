package store

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// stReader returns a reader of the records of buf.
func stReader(buf []byte) *packed.Reader {
	r := packed.New(logCodec{}).NewReader()
	r.Chunk(buf)
	return r
}

// stFillAll sets every field reachable from v (a pointer) to a value
// that is not its zero, with n to vary it: strings name their path,
// numbers are n, maps and slices hold one entry, pointers point at a
// filled value.
func stFillAll(t *testing.T, v reflect.Value, path string, n int) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type() == reflect.TypeFor[*state.Job]() {
			return // an allocation's job travels by reference
		}
		v.Set(reflect.New(v.Type().Elem()))
		stFillAll(t, v.Elem(), path, n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[state.Scores]() {
			// Every form an entry takes: a normalized score left out (the
			// mean of the others), one kept, a node of more than two
			// components, a key that names no known component.
			v.Set(reflect.ValueOf(state.ScoresOf(map[string]float64{
				path + "-n1.binpack": float64(n) + 0.125, path + "-n1.normalized-score": float64(n) + 0.125,
				path + "-n2.binpack": 0.5, path + "-n2.job-anti-affinity": -0.25, path + "-n2.allocation-spread": 0.75,
				path + "-n2.normalized-score": 1, path + "-raw": float64(n),
			})))
			return
		}
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2024, 1, 2, 3, 4, 5, n, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				t.Fatalf("%s has an unexported field: extend stFillAll", v.Type())
			}
			stFillAll(t, v.Field(i), path+"."+v.Type().Field(i).Name, n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", path, n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n) - 1000) // negative too
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n) + 1<<40)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.125)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		stFillAll(t, v.Index(0), path+"[0]", n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		stFillAll(t, k, path+".key", n)
		e := reflect.New(v.Type().Elem()).Elem()
		stFillAll(t, e, path+"[k]", n)
		v.SetMapIndex(k, e)
	case reflect.Interface:
		v.Set(reflect.ValueOf(fmt.Sprintf("%s-%d", path, n)))
	default:
		t.Fatalf("%s: kind %s: extend stFillAll", path, v.Kind())
	}
}

// stRecordRoundTrip writes allocs as format 3 records and reads them
// back.
func stRecordRoundTrip(t *testing.T, allocs []*state.Allocation) []*state.Allocation {
	t.Helper()
	w := packed.NewWriter(logCodec{})
	for i, a := range allocs {
		if err := w.Alloc(i%3-1, a); err != nil {
			t.Fatal(err)
		}
	}
	r := stReader(w.Bytes())
	var out []*state.Allocation
	for i := 0; r.More(); i++ {
		a, ref := r.Alloc()
		if r.Err() != nil {
			t.Fatalf("record %d: %v", i, r.Err())
		}
		if ref != i%3-1 {
			t.Fatalf("record %d: job reference %d, want %d", i, ref, i%3-1)
		}
		out = append(out, a)
	}
	return out
}

// Every field of an allocation survives a format 3 record, set or zero,
// nil or empty: a field added to Allocation (or to the structs the record
// writes field by field) that the record drops fails here.
func TestAllocRecordRoundTrip(t *testing.T) {
	full := func(n int) *state.Allocation {
		a := &state.Allocation{}
		stFillAll(t, reflect.ValueOf(a).Elem(), "a", n)
		return a
	}
	empties := full(3)
	empties.AllocatedResources.Tasks = map[string]*state.AllocatedTaskResources{"nil": nil, "empty": {Networks: []*state.NetworkResource{}}}
	empties.AllocatedResources.Shared.Ports = []state.AllocatedPort{}
	empties.Metrics.Scores = state.ScoresOf(map[string]float64{})
	empties.Metrics.QuotaExhausted = []string{}
	empties.Metrics.NodesAvailable = map[string]int{}
	empties.TaskStates = map[string]*state.TaskState{}
	nils := full(4)
	nils.AllocatedResources.Tasks = nil
	nils.Metrics.Scores = state.Scores{}
	nils.Metrics.ClassFiltered = nil
	nils.RescheduleTracker = nil
	allocs := []*state.Allocation{
		full(1), full(2), empties, nils,
		{ID: "bare"},
		{ID: "no-metrics", AllocatedResources: &state.AllocatedResources{}, Metrics: &state.AllocMetric{}},
		{ID: "unicode ✓", Name: strings.Repeat("x", 300), DesiredTransition: state.DesiredTransition{Migrate: new(bool)}},
	}
	got := stRecordRoundTrip(t, allocs)
	if len(got) != len(allocs) {
		t.Fatalf("%d records read back, want %d", len(got), len(allocs))
	}
	for i := range allocs {
		if !reflect.DeepEqual(got[i], allocs[i]) {
			t.Errorf("allocation %s read back as\n%+v\nwant\n%+v", allocs[i].ID, got[i], allocs[i])
		}
	}
	// Repeated strings come back as one string.
	again := stRecordRoundTrip(t, []*state.Allocation{full(1), full(1)})
	if !sameString(again[0].NodeID, again[1].NodeID) {
		t.Error("a node ID read twice is not shared")
	}
}

// sameString reports whether a and b share their bytes.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// A record cut anywhere, or with a field's length corrupted, is an error,
// never a panic or a huge allocation.
func TestAllocRecordMalformed(t *testing.T) {
	a := &state.Allocation{}
	stFillAll(t, reflect.ValueOf(a).Elem(), "a", 1)
	w := packed.NewWriter(logCodec{})
	if err := w.Alloc(0, a); err != nil {
		t.Fatal(err)
	}
	for cut := range len(w.Bytes()) {
		r := stReader(w.Bytes()[:cut])
		r.Alloc()
		if r.Err() == nil {
			t.Fatalf("a record cut at byte %d of %d parsed", cut, len(w.Bytes()))
		}
		if !errors.Is(r.Err(), packed.ErrBadRecord) {
			t.Fatalf("cut at %d: %v does not wrap packed.ErrBadRecord", cut, r.Err())
		}
	}
	// A string numbered past the chunk's strings: job 0, ID "", then
	// the namespace as string 5 of a chunk that holds none.
	r := stReader([]byte{1, 0, 6})
	if r.Alloc(); !errors.Is(r.Err(), packed.ErrBadRecord) {
		t.Fatalf("a string numbered past the chunk's: %v", r.Err())
	}
	for i := range len(w.Bytes()) {
		bad := bytes.Clone(w.Bytes())
		bad[i] = 0xff
		r := stReader(bad)
		r.Alloc() // must not panic; an error or a different allocation
	}
}

// stPersistOld writes s as Persist wrote formats 1 (every allocation
// with its job) and 2 (jobs once, allocations by reference as msgpack
// rows), for the tests that older snapshots still restore.
func stPersistOld(t *testing.T, s *Store, format int) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := newStreamEncoder(&buf)
	must := func(v any) {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	must(snapshotHeader{Format: format})
	txn := s.currentDB().Txn(false)
	jobRefs := map[*state.Job]int{}
	for _, def := range tableDefs() {
		if def.derived {
			continue
		}
		var rows []any
		if err := tableRows(txn, def.name, func(row any) error { rows = append(rows, row); return nil }); err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if a, ok := row.(*state.Allocation); ok && a.Job != nil && format == 2 {
				ref, seen := jobRefs[a.Job]
				if !seen {
					ref = len(jobRefs)
					jobRefs[a.Job] = ref
					must(snapshotJobName)
					must(&snapshotJobRow{Ref: ref, Job: a.Job})
				}
				bare := *a
				bare.Job = nil
				must(snapshotAllocName)
				must(&snapshotAllocRow{Ref: ref, Alloc: &bare})
				continue
			}
			must(def.name)
			must(row)
		}
	}
	must("")
	return buf.Bytes()
}

// Snapshots of formats 1 and 2, which servers in the wild hold, restore to
// the same contents as format 3; format 3 is what Persist writes, with
// the allocations in chunks and each job once.
func TestSnapshotFormatsRestoreAlike(t *testing.T) {
	src := stStore(t, Config{})
	stFillEveryTable(t, src)
	job := stMust[*state.Job](t)(src.JobByID(nil, state.DefaultNamespace, "web"))
	var allocs []*state.Allocation
	for i := range 3000 { // several chunks
		a := stAlloc(fmt.Sprintf("b%05d", i), job, "n1")
		a.Job = job
		a.Metrics = &state.AllocMetric{NodesEvaluated: 3, NodesAvailable: map[string]int{"dc1": 1},
			Scores: state.ScoresOf(map[string]float64{"n1.binpack": 0.25, "n1.normalized-score": float64(i) / 7})}
		allocs = append(allocs, a)
	}
	stApply(t, src, 1000, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: 1000})
	want := stDump(t, src)

	snap := stMust[*StateSnapshot](t)(src.Snapshot())
	snap.chunkBytes = 64 << 10 // 3,000 allocations in several chunks
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	current := buf.Bytes()
	var hdr snapshotHeader
	if err := newStreamDecoder(bytes.NewReader(current)).Decode(&hdr); err != nil || hdr.Format != 3 {
		t.Fatalf("Persist wrote format %d (%v), want 3", hdr.Format, err)
	}
	if n := bytes.Count(current, []byte(snapshotAllocChunkName)); n < 2 {
		t.Errorf("3,000 allocations in %d chunks", n)
	}
	if n := bytes.Count(current, []byte(snapshotJobName)); n < 1 || n > 2 {
		t.Errorf("the stream holds %d job rows for the allocations of one job", n)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"format 1", stPersistOld(t, src, 1)},
		{"format 2", stPersistOld(t, src, 2)},
		{"format 3", current},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := VerifySnapshot(bytes.NewReader(c.data)); err != nil {
				t.Fatal(err)
			}
			dst := stStore(t, Config{})
			if err := dst.Restore(bytes.NewReader(c.data)); err != nil {
				t.Fatal(err)
			}
			stCompareDumps(t, want, stDump(t, dst))
			got := stMust[[]*state.Allocation](t)(dst.AllocsByNode(nil, "n1"))
			for _, a := range got[1:] {
				if a.Job != got[0].Job && a.Job.ModifyIndex == got[0].Job.ModifyIndex {
					t.Fatal("restored allocations of one job do not share it")
				}
				if !sameString(a.NodeID, got[0].NodeID) {
					t.Fatalf("restored allocation %s does not share its node ID", a.ID)
				}
			}
		})
	}
	// A chunk cut short, or referring to a job not written before it, is
	// refused by both.
	for name, bad := range map[string][]byte{
		"cut":      bytes.Replace(current, []byte(snapshotAllocChunkName), []byte("_alloc_chunK"), 1),
		"dangling": stDanglingChunk(t, allocs[0]),
	} {
		if VerifySnapshot(bytes.NewReader(bad)) == nil {
			t.Errorf("%s: verified", name)
		}
		if stStore(t, Config{}).Restore(bytes.NewReader(bad)) == nil {
			t.Errorf("%s: restored", name)
		}
	}
}

// stDanglingChunk is a format 3 stream whose one allocation refers to a
// job it does not hold.
func stDanglingChunk(t *testing.T, a *state.Allocation) []byte {
	t.Helper()
	w := packed.NewWriter(logCodec{})
	if err := w.Alloc(7, a); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := newStreamEncoder(&buf)
	for _, v := range []any{snapshotHeader{Format: 3}, snapshotAllocChunkName, w.Bytes(), ""} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestRecordScoreKeysAcrossManyNodes: score keys of thousands of nodes in
// one chunk, more than packed.Writer's cache of recent score keys has entries (so refs collide
// in it), come back exactly; a key seen again is written by number, so
// the chunk is smaller than the same scores with every key whole.
func TestRecordScoreKeysAcrossManyNodes(t *testing.T) {
	nodes := make([]string, 3000)
	for i := range nodes {
		nodes[i] = state.NewID()
	}
	nodes = append(nodes, "short", "node-0001", "node-0002") // under 8 bytes, and alike but for the end
	var allocs []*state.Allocation
	for i := range 400 {
		scores := map[string]float64{}
		for k := range 5 {
			n := nodes[(i*7+k*13)%len(nodes)]
			scores[n+"."+state.ScoreBinPack] = float64(i) / 1000
			scores[n+"."+state.ScoreJobAntiAffinity] = -float64(k) / 10
			scores[n+".custom"] = 1 // a key that names no known component
		}
		scores[nodes[len(nodes)-1-i%3]+"."+state.ScoreNormalized] = 0.25
		allocs = append(allocs, &state.Allocation{ID: fmt.Sprintf("a-%03d", i), Metrics: &state.AllocMetric{Scores: state.ScoresOf(scores)}})
	}
	got := stRecordRoundTrip(t, allocs)
	for i := range allocs {
		if want, have := allocs[i].Metrics.Scores.Map(), got[i].Metrics.Scores.Map(); !reflect.DeepEqual(have, want) {
			t.Fatalf("allocation %d scores read back as %v, want %v", i, have, want)
		}
	}
	// The same allocations again in the same chunk: every key is known
	// by then, and written by number (a byte or two) rather than whole.
	w := packed.NewWriter(logCodec{})
	for _, a := range allocs {
		if err := w.Alloc(-1, a); err != nil {
			t.Fatal(err)
		}
	}
	first := len(w.Bytes())
	for _, a := range allocs {
		if err := w.Alloc(-1, a); err != nil {
			t.Fatal(err)
		}
	}
	second := len(w.Bytes()) - first
	whole := 0
	for _, a := range allocs {
		for k := range a.Metrics.Scores.Map() {
			whole += len(k)
		}
	}
	if second > first-whole*3/4 {
		t.Fatalf("the second pass took %d bytes, the first %d: keys (%d bytes whole) were written again", second, first, whole)
	}
}

// TestRecordWriterCachesStartAfreshPerChunk: what the writer remembers of
// a chunk (a field's last string, a score key's number) is not used in the
// next chunk: each chunk decodes alone, with fields that change from
// record to record and back.
func TestRecordWriterCachesStartAfreshPerChunk(t *testing.T) {
	mk := func(i int, node string) *state.Allocation {
		return &state.Allocation{
			ID: fmt.Sprintf("a-%03d", i), Namespace: []string{"default", "other"}[i%2], EvalID: fmt.Sprintf("e-%d", i%3),
			NodeID: node, JobID: "web", TaskGroup: "g", DesiredStatus: state.AllocDesiredStatusRun,
			ClientStatus: []string{"pending", "running", "pending"}[i%3], DeploymentID: fmt.Sprintf("d-%d", i/4),
			Metrics: &state.AllocMetric{Scores: state.ScoresOf(map[string]float64{node + "." + state.ScoreBinPack: float64(i)})},
		}
	}
	decode := func(buf []byte) []*state.Allocation {
		t.Helper()
		r := stReader(buf)
		var out []*state.Allocation
		for r.More() {
			a, _ := r.Alloc()
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			out = append(out, a)
		}
		return out
	}
	check := func(what string, got, want []*state.Allocation) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
		}
		for i := range want {
			if got[i].ID != want[i].ID || got[i].Namespace != want[i].Namespace || got[i].EvalID != want[i].EvalID ||
				got[i].ClientStatus != want[i].ClientStatus || got[i].DeploymentID != want[i].DeploymentID || got[i].NodeID != want[i].NodeID ||
				!reflect.DeepEqual(got[i].Metrics.Scores.Map(), want[i].Metrics.Scores.Map()) {
				t.Fatalf("%s: record %d read back as %+v, want %+v", what, i, got[i], want[i])
			}
		}
	}
	var first, second []*state.Allocation
	for i := range 12 {
		first = append(first, mk(i, fmt.Sprintf("node-%04d", i%5)))
		second = append(second, mk(i+1, fmt.Sprintf("node-%04d", (i+1)%5))) // the same strings, in other places
	}
	w := packed.NewWriter(logCodec{})
	for _, a := range first {
		if err := w.Alloc(-1, a); err != nil {
			t.Fatal(err)
		}
	}
	check("first chunk", decode(bytes.Clone(w.Bytes())), first)
	w.Reset()
	for _, a := range second {
		if err := w.Alloc(-1, a); err != nil {
			t.Fatal(err)
		}
	}
	check("second chunk", decode(bytes.Clone(w.Bytes())), second)
	// A third chunk, after a reset with nothing written in between.
	w.Reset()
	w.Reset()
	for _, a := range first {
		if err := w.Alloc(-1, a); err != nil {
			t.Fatal(err)
		}
	}
	check("third chunk", decode(bytes.Clone(w.Bytes())), first)
	// A writer of its own, never reset.
	w2 := packed.NewWriter(logCodec{})
	for _, a := range second {
		if err := w2.Alloc(-1, a); err != nil {
			t.Fatal(err)
		}
	}
	check("next writer", decode(w2.Bytes()), second)
}

// TestSnapshotCountMapsRoundTrip: the snapshot's writer writes a count map
// it has written in the chunk by copying its encoding (the store's count
// maps are interned, so many allocations hold one map); a snapshot of
// allocations whose maps repeat, within a chunk and across chunks, and
// name strings that first appear in a later chunk, restores to the same
// contents.
func TestSnapshotCountMapsRoundTrip(t *testing.T) {
	src := stStore(t, Config{})
	stFillEveryTable(t, src)
	job := stMust[*state.Job](t)(src.JobByID(nil, state.DefaultNamespace, "web"))
	var allocs []*state.Allocation
	for i := range 3000 { // several chunks
		a := stAlloc(fmt.Sprintf("c%05d", i), job, fmt.Sprintf("n%d", i%7))
		a.Job = job
		a.Metrics = &state.AllocMetric{NodesEvaluated: 3, NodesExhausted: i % 5,
			NodesAvailable:     map[string]int{"dc1": 7},
			ClassExhausted:     map[string]int{"": i % 5},
			DimensionExhausted: map[string]int{"memory": i % 3, fmt.Sprintf("dim-%d", i/700): 1},
			ConstraintFiltered: map[string]int{},
			Scores:             state.ScoresOf(map[string]float64{a.NodeID + ".binpack": float64(i) / 3}),
		}
		allocs = append(allocs, a)
	}
	stApply(t, src, 1000, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: 1000})
	want := stDump(t, src)
	snap := stMust[*StateSnapshot](t)(src.Snapshot())
	snap.chunkBytes = 32 << 10
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf.Bytes(), []byte(snapshotAllocChunkName)); n < 3 {
		t.Errorf("3,000 allocations in %d chunks", n)
	}
	dst := stStore(t, Config{})
	if err := dst.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	stCompareDumps(t, want, stDump(t, dst))
	for _, a := range allocs[:50] {
		got := stMust[*state.Allocation](t)(dst.AllocByID(nil, a.ID))
		if got == nil || !reflect.DeepEqual(got.Metrics, a.Metrics) {
			t.Fatalf("%s restored with metrics %+v, want %+v", a.ID, got.Metrics, a.Metrics)
		}
	}
}
