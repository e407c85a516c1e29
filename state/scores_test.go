package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// legacyAllocMetric is AllocMetric as it was before Scores had a type of
// its own: a plain map. What it encodes (JSON for the API, msgpack for
// the log) is what AllocMetric must go on encoding and decoding.
type legacyAllocMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	Scores             map[string]float64
	AllocationTime     time.Duration
	CoalescedFailures  int
}

// legacyOf returns m in the old shape, its Scores as the map they stand for.
func legacyOf(m *AllocMetric) *legacyAllocMetric {
	return &legacyAllocMetric{
		m.NodesEvaluated, m.NodesFiltered, m.NodesInPool, m.NodesAvailable, m.ClassFiltered, m.ConstraintFiltered,
		m.NodesExhausted, m.ClassExhausted, m.DimensionExhausted, m.QuotaExhausted, m.Scores.Map(),
		m.AllocationTime, m.CoalescedFailures,
	}
}

// scheduledScores returns scores as the scheduler records them: for each
// of n nodes a bin-pack score, sometimes more components, and the
// normalized score, the mean of the others in rank order.
func scheduledScores(rng *rand.Rand, n int) map[string]float64 {
	m := map[string]float64{}
	for i := range n {
		node := fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), i)
		comps := []float64{rng.Float64()}
		m[node+"."+ScoreBinPack] = comps[0]
		for _, c := range []string{ScoreJobAntiAffinity, ScoreReschedule, ScoreAffinity, ScoreSpread} {
			if rng.IntN(3) == 0 {
				v := -rng.Float64()
				m[node+"."+c] = v
				comps = append(comps, v)
			}
		}
		m[node+"."+ScoreNormalized] = meanOf(comps)
	}
	return m
}

// scoreCases are maps of scores of every shape: what the scheduler
// writes, normalized scores that are not the mean, nodes of many
// components, keys that name no component, odd numbers and strings.
func scoreCases() map[string]map[string]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]map[string]float64{
		"nil":   nil,
		"empty": {},
		"one node": {
			"n1.binpack": 0.5729166666666666, "n1.normalized-score": 0.5729166666666666,
		},
		"normalized not the mean": {
			"n1.binpack": 0.25, "n1.job-anti-affinity": -0.5, "n1.normalized-score": 0.75,
		},
		"normalized alone": {"n1.normalized-score": 0.3},
		"no normalized":    {"n1.binpack": 0.1, "n1.node-affinity": 0.2, "n1.allocation-spread": 0.3},
		"every component": {
			"n1.binpack": 0.1, "n1.job-anti-affinity": -0.2, "n1.node-reschedule-penalty": -1, "n1.node-affinity": 0.4,
			"n1.allocation-spread": 0.5, "n1.normalized-score": (0.1 - 0.2 - 1 + 0.4 + 0.5) / 5,
		},
		"raw keys": {
			"plain": 1, "n1.unknown-component": 2, "n1.binpack": 3, ".binpack": 4, "": 5, "n.1.binpack": 6,
			"n1": 7, "n1.binpack.x": 8,
		},
		"escapes": {
			"n<1>&\"\\.binpack": 1, "nœud\u2028.normalized-score": 1, "tab\t.binpack": 1,
		},
		"numbers": {
			"a.binpack": 1e-7, "b.binpack": -1e-7, "c.binpack": 1e21, "d.binpack": 123456789, "e.binpack": math.Copysign(0, -1),
			"f.binpack": 5e-324, "g.binpack": math.MaxFloat64, "h.binpack": 1e20, "i.binpack": 0.000001,
		},
		"node ids that sort apart from their keys": {
			"n1.binpack": 1, "n1-a.binpack": 2, "n1.normalized-score": 1, "n1-a.normalized-score": 2, "n1/.binpack": 3,
		},
	}
	for i := range 20 {
		cases[fmt.Sprintf("scheduled %d", i)] = scheduledScores(rng, 1+i%5)
	}
	return cases
}

// sameScores reports whether two maps hold the same keys with the same
// bits (0 and -0 apart).
func sameScores(a, b map[string]float64) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || math.Float64bits(v) != math.Float64bits(w) {
			return false
		}
	}
	return true
}

func TestScoresKeepTheMap(t *testing.T) {
	for name, m := range scoreCases() {
		t.Run(name, func(t *testing.T) {
			s := ScoresOf(m)
			if got := s.Map(); !sameScores(got, m) {
				t.Fatalf("Map() = %v, want %v", got, m)
			}
			if s.IsNil() != (m == nil) || s.Len() != len(m) {
				t.Fatalf("IsNil %v Len %d, want %v %d", s.IsNil(), s.Len(), m == nil, len(m))
			}
			for k, v := range m {
				node, comp := k, ""
				var b ScoresBuilder
				b.AddKey(k, v)
				b.Scores().Each(func(n, c string, _ float64) bool { node, comp = n, c; return false })
				if got, ok := s.Get(node, comp); !ok || math.Float64bits(got) != math.Float64bits(v) {
					t.Errorf("Get(%q, %q) = %v %v, want %v", node, comp, got, ok, v)
				}
			}
			// Canonical: built in any order, from keys or from parts,
			// the same value.
			var b ScoresBuilder
			keys := reflect.ValueOf(m).MapKeys()
			for i := len(keys) - 1; i >= 0; i-- {
				b.AddKey(keys[i].String(), m[keys[i].String()])
			}
			if again := b.Scores(); m != nil && !reflect.DeepEqual(again, s) {
				t.Errorf("built in another order: %#v, want %#v", again, s)
			}
		})
	}
}

// What the scheduler records (a normalized score that is the mean of the
// node's other components) keeps one entry per node and no normalized
// score; a component added twice keeps its last value.
func TestScoresBuilderCompact(t *testing.T) {
	var b ScoresBuilder
	for i := range 5 {
		node := fmt.Sprintf("node-%d", i)
		bp, aa := 0.1*float64(i+1), -0.5
		b.Add(node, ScoreBinPack, 99)
		b.Add(node, ScoreBinPack, bp)
		b.Add(node, ScoreJobAntiAffinity, aa)
		b.Add(node, ScoreNormalized, (bp+aa)/2)
	}
	s := b.Scores()
	entries := 0
	s.entries(func(has uint8, r ScoreRef, vals []byte) bool {
		entries++
		if has&hasDerived == 0 || len(vals) != 16 {
			t.Errorf("node %s keeps its normalized score (%d bytes of values)", r.Node(), len(vals))
		}
		return true
	})
	if entries != 5 {
		t.Fatalf("%d entries for 5 nodes, want 5", entries)
	}
	if v, ok := s.Get("node-2", ScoreBinPack); !ok || v != 0.30000000000000004 {
		t.Errorf("binpack of node-2 = %v %v, want the last value added", v, ok)
	}
	if v, _ := s.Get("node-2", ScoreNormalized); v != (0.30000000000000004-0.5)/2 {
		t.Errorf("normalized of node-2 = %v", v)
	}
	if len(b.t) != 0 {
		t.Error("Scores did not reset the builder")
	}
	if got := b.Scores(); got.IsNil() || got.Len() != 0 {
		t.Errorf("an empty builder's scores are %#v, want empty and not nil", got)
	}
}

// The API's JSON of a metric is byte for byte what the map gave, and
// reads back as the same scores.
func TestScoresJSONAsTheMap(t *testing.T) {
	for name, m := range scoreCases() {
		t.Run(name, func(t *testing.T) {
			metric := &AllocMetric{NodesEvaluated: 3, NodesAvailable: map[string]int{"dc1": 3}, Scores: ScoresOf(m), AllocationTime: 1234}
			got, err := json.Marshal(metric)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(legacyOf(metric))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("JSON\n%s\nwant\n%s", got, want)
			}
			var back AllocMetric
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&back, metric) {
				t.Fatalf("read back as %#v, want %#v", back, metric)
			}
			indented, _ := json.MarshalIndent(metric, "", "  ")
			wantIndented, _ := json.MarshalIndent(legacyOf(metric), "", "  ")
			if !bytes.Equal(indented, wantIndented) {
				t.Fatalf("indented JSON\n%s\nwant\n%s", indented, wantIndented)
			}
		})
	}
	if _, err := json.Marshal(ScoresOf(map[string]float64{"n.binpack": math.NaN()})); err == nil {
		t.Error("NaN encoded: encoding/json refuses it")
	}
	var s Scores
	if err := json.Unmarshal([]byte(`{"n.binpack":"x"}`), &s); err == nil {
		t.Error("a string score decoded")
	}
}

// stMsgpack is the log's codec configuration (state/store's).
func stMsgpack() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	h.TypeInfos = codec.NewTypeInfos([]string{"codec"})
	return h
}

func stEncodeMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, stMsgpack()).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func stDecodeMsgpack(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := codec.NewDecoderBytes(b, stMsgpack()).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// Log entries and snapshots written when Scores was a map decode into
// Scores, and what Scores writes decodes as that map: old and new servers
// read each other's entries.
func TestScoresMsgpackAsTheMap(t *testing.T) {
	for name, m := range scoreCases() {
		t.Run(name, func(t *testing.T) {
			old := &legacyAllocMetric{NodesEvaluated: 2, ClassFiltered: map[string]int{}, Scores: m, AllocationTime: 9}
			var got AllocMetric
			stDecodeMsgpack(t, stEncodeMsgpack(t, old), &got)
			if !sameScores(got.Scores.Map(), m) || got.NodesEvaluated != 2 || got.AllocationTime != 9 || got.ClassFiltered == nil {
				t.Fatalf("old entry decoded as %#v, want %v", got, m)
			}
			var back legacyAllocMetric
			stDecodeMsgpack(t, stEncodeMsgpack(t, &got), &back)
			if !sameScores(back.Scores, m) {
				t.Fatalf("new entry decoded by the old shape as %v, want %v", back.Scores, m)
			}
			if !reflect.DeepEqual(&back, old) {
				t.Fatalf("round trip through the old shape: %#v, want %#v", back, old)
			}
			// An evaluation's metrics, in a map of pointers, the same.
			ev := &Evaluation{ID: "e", FailedTGAllocs: map[string]*AllocMetric{"web": &got}}
			var evBack Evaluation
			stDecodeMsgpack(t, stEncodeMsgpack(t, ev), &evBack)
			if !reflect.DeepEqual(evBack.FailedTGAllocs["web"], &got) {
				t.Fatalf("evaluation metrics read back as %#v", evBack.FailedTGAllocs["web"])
			}
		})
	}
}

// Scores are immutable, so a copy shares them; decoding into the copy
// replaces its Scores and leaves the original's alone.
func TestAllocMetricCopyScoresIsolated(t *testing.T) {
	m := map[string]float64{"n1.binpack": 0.5, "n1.normalized-score": 0.5, "n2.binpack": 0.25, "n2.normalized-score": 1}
	orig := &AllocMetric{NodesEvaluated: 2, Scores: ScoresOf(m)}
	c := orig.Copy()
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("copy %#v differs", c)
	}
	if err := json.Unmarshal([]byte(`{"Scores":{"x.binpack":9,"n1.binpack":1}}`), c); err != nil {
		t.Fatal(err)
	}
	stDecodeMsgpack(t, stEncodeMsgpack(t, &legacyAllocMetric{Scores: map[string]float64{"y.binpack": 2}}), c)
	a := orig.Copy()
	a.Scores = ScoresOf(nil)
	if !sameScores(orig.Scores.Map(), m) {
		t.Fatalf("original's scores changed through a copy: %v", orig.Scores.Map())
	}
	if v, _ := c.Scores.Get("y", ScoreBinPack); v != 2 || c.Scores.Len() != 1 {
		t.Fatalf("copy's scores %v, want the decoded ones", c.Scores.Map())
	}
	// Nothing of Scores is reachable to change: no exported field.
	st := reflect.TypeFor[Scores]()
	for i := range st.NumField() {
		if st.Field(i).IsExported() {
			t.Errorf("Scores.%s is exported: copies share Scores, which must not change", st.Field(i).Name)
		}
	}
}

// Scores hold no pointer, so the garbage collector never scans them: a
// node ID in the canonical UUID form takes its 16 bytes; any other ID,
// and a raw key, keep their text and come back as they were.
func TestScoresPacked(t *testing.T) {
	if reflect.TypeFor[Scores]().Field(0).Type != reflect.TypeFor[[]byte]() {
		t.Fatal("Scores is not one byte slice")
	}
	const id = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	s := ScoresOf(map[string]float64{id + ".binpack": 0.5, id + ".job-anti-affinity": -0.5, id + ".normalized-score": 0})
	// Header, tag, 16 bytes of ID, two values (the normalized is derived).
	if want := 1 + 1 + 16 + 16; len(s.b) != want {
		t.Errorf("a UUID node's entry takes %d bytes, want %d", len(s.b), want)
	}
	for _, m := range []map[string]float64{
		{strings.ToUpper(id) + ".binpack": 1},              // not the canonical form
		{id[:35] + "g.binpack": 1},                         // not hex
		{strings.ReplaceAll(id, "-", "_") + ".binpack": 1}, // no hyphens
		{id: 3, id + ".binpack": 1},                        // a raw key equal to a node
		{"": 4, ".binpack": 5},                             // empty raw key and node
	} {
		got := ScoresOf(m)
		if !sameScores(got.Map(), m) {
			t.Errorf("ScoresOf(%v).Map() = %v", m, got.Map())
		}
	}
	// A ref's key, hash and node agree with the key it stands for.
	var refs []ScoreRef
	ScoresOf(map[string]float64{id + ".binpack": 1, "n1.binpack": 2, "raw": 3}).EachRef(func(r ScoreRef, _ float64) bool {
		refs = append(refs, r)
		if key := string(r.AppendKey(nil)); key != ScoreKey(r.Node(), r.Component()) {
			t.Errorf("AppendKey = %q, want %q", key, ScoreKey(r.Node(), r.Component()))
		}
		return true
	})
	var again []ScoreRef
	ScoresOf(map[string]float64{id + ".binpack": 9, "n1.binpack": 8, "raw": 7}).EachRef(func(r ScoreRef, _ float64) bool {
		again = append(again, r)
		return true
	})
	if !slices.Equal(refs, again) || len(refs) != 3 {
		t.Fatalf("refs %v and %v of the same keys differ", refs, again)
	}
	for i := range refs {
		if refs[i].Hash() != again[i].Hash() {
			t.Errorf("equal refs hash apart: %v", refs[i])
		}
	}
}

// BenchmarkAllocMetricBytes measures the live heap of one placement's
// metric as the store keeps it: five nodes' scores (bin-pack,
// anti-affinity and normalized, as the scheduler records them), node IDs
// shared with other allocations. "map" is the map[string]float64 that
// Scores replaced, its keys shared store-wide as compaction shared them.
func BenchmarkAllocMetricBytes(b *testing.B) {
	const nodes, keep = 500, 20000
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([]string, nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), i)
	}
	keys := map[string]string{}
	shared := func(k string) string {
		if v, ok := keys[k]; ok {
			return v
		}
		keys[k] = k
		return k
	}
	placement := func(i int, add func(node, comp string, v float64)) {
		for k := range 5 {
			node := ids[(i*7+k)%nodes]
			bp, aa := rng.Float64(), -rng.Float64()
			add(node, ScoreBinPack, bp)
			add(node, ScoreJobAntiAffinity, aa)
			add(node, ScoreNormalized, (bp+aa)/2)
		}
	}
	for _, c := range []struct {
		name string
		make func(i int) any
	}{
		{"map", func(i int) any {
			m := &legacyAllocMetric{NodesEvaluated: 13, NodesInPool: nodes, AllocationTime: time.Duration(i), Scores: make(map[string]float64, 15)}
			placement(i, func(node, comp string, v float64) { m.Scores[shared(node+"."+comp)] = v })
			return m
		}},
		{"scores", func(i int) any {
			m := &AllocMetric{NodesEvaluated: 13, NodesInPool: nodes, AllocationTime: time.Duration(i)}
			var sb ScoresBuilder
			sb.Grow(15)
			placement(i, sb.Add)
			m.Scores = sb.Scores()
			return m
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := range keep { // warm the shared keys
				c.make(i)
			}
			var perOp float64
			for range b.N {
				held := make([]any, keep)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i := range held {
					held[i] = c.make(i)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perOp = float64(after.HeapAlloc-before.HeapAlloc) / keep
				runtime.KeepAlive(held)
			}
			b.ReportMetric(perOp, "heap-bytes/metric")
		})
	}
}

// BenchmarkAllocMetricJSON encodes one placement's metric for the API:
// five nodes' scores as a map (before) and as Scores.
func BenchmarkAllocMetricJSON(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := scheduledScores(rng, 5)
	metric := &AllocMetric{NodesEvaluated: 13, NodesInPool: 5000, NodesAvailable: map[string]int{"dc1": 5000}, Scores: ScoresOf(m)}
	for _, c := range []struct {
		name string
		v    any
	}{{"map", legacyOf(metric)}, {"scores", metric}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := json.Marshal(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestScoresInUsesTheRoomGiven: ScoresIn writes what Scores would make
// into the room it is given, capped at its length.
func TestScoresInUsesTheRoomGiven(t *testing.T) {
	var b ScoresBuilder
	b.Add("n1", ScoreBinPack, 0.5)
	b.Add("n2", ScoreBinPack, 0.25)
	want := b.Scores()
	b.Add("n1", ScoreBinPack, 0.5)
	b.Add("n2", ScoreBinPack, 0.25)
	room := make([]byte, 256)
	got := b.ScoresIn(func(n int) []byte { return room[8 : 8+n] })
	if string(got.b) != string(want.b) || got.Len() != want.Len() {
		t.Fatalf("ScoresIn %v, Scores %v", got, want)
	}
	if &got.b[0] != &room[8] || cap(got.b) != len(got.b) {
		t.Errorf("not in the room given, or not capped: cap %d len %d", cap(got.b), len(got.b))
	}
}
