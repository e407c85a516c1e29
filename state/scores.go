package state

import (
	"bytes"
	"encoding/json"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unique"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Score components a scheduler gives a node it ranks for a placement. The
// API and the log name a node's component "<node-id>.<component>" in
// AllocMetric.Scores.
const (
	ScoreBinPack         = "binpack"
	ScoreJobAntiAffinity = "job-anti-affinity"
	ScoreReschedule      = "node-reschedule-penalty"
	ScoreAffinity        = "node-affinity"
	ScoreSpread          = "allocation-spread"
	// ScoreNormalized is the node's final score: the mean of the others,
	// taken in the order above.
	ScoreNormalized = "normalized-score"
)

// scoreKinds are the components Scores keeps by number: bit k of a
// scoreEntry's has is scoreKinds[k]. The order is the one the scheduler
// adds them in, which is the order the normalized score is the mean of.
var scoreKinds = [...]string{
	ScoreBinPack, ScoreJobAntiAffinity, ScoreReschedule, ScoreAffinity, ScoreSpread, ScoreNormalized,
}

const (
	kindNormalized = 5
	// hasDerived marks an entry whose normalized score is the mean of its
	// other components, and is not stored.
	hasDerived = 1 << 6
	// hasRaw marks an entry whose node is a whole key that names no known
	// component, with its value in v[0].
	hasRaw = 1 << 7
	// kindRaw sorts raw keys after every component of a node.
	kindRaw = 7
)

// Scores are the score components of the nodes a scheduler ranked best
// for a placement. The API (JSON) and the log (msgpack) carry them as a
// map from "<node-id>.<component>" to the score, and Scores reads and
// writes that shape; in memory a map of some fifteen string keys cost
// ~1,000 bytes per allocation (BenchmarkAllocMetricBytes), a quarter of
// the server's live heap (issue 19), so Scores keeps one entry of 32 bytes
// (two values) per node, its node ID a unique.Handle (one copy of each ID
// in the process, however many allocations name it), and leaves out the
// normalized score when it is, bit for bit, the mean of the others (as
// the scheduler computes it).
//
// A Scores is immutable: copies share it. The zero value is nil (the map
// was nil, JSON null); ScoresOf an empty map is empty but not nil. The
// representation is canonical (entries sorted by node and component), so
// equal scores are reflect.DeepEqual whatever built them.
type Scores struct {
	e []scoreEntry
}

// scoreEntry holds up to two components of one node, in scoreKinds order.
// A node with more than two takes consecutive entries.
type scoreEntry struct {
	node unique.Handle[string]
	v    [2]float64
	has  uint8
}

// scoreTriple is one component of one node while Scores are built.
type scoreTriple struct {
	node string
	kind uint8
	v    float64
}

// ScoresBuilder collects score components and makes Scores of them. The
// zero value is ready; Add what a placement scored, then call Scores.
type ScoresBuilder struct {
	t []scoreTriple
}

// Reset drops what was added, keeping the room.
func (b *ScoresBuilder) Reset() { b.t = b.t[:0] }

// Grow makes room for n more components.
func (b *ScoresBuilder) Grow(n int) { b.t = slices.Grow(b.t, n) }

// Add records a component of a node. A component added twice keeps its
// last value.
func (b *ScoresBuilder) Add(nodeID, component string, v float64) {
	for k, name := range scoreKinds {
		if name == component {
			b.t = append(b.t, scoreTriple{nodeID, uint8(k), v})
			return
		}
	}
	b.t = append(b.t, scoreTriple{ScoreKey(nodeID, component), kindRaw, v})
}

// AddKey records the score of a key as the API names it,
// "<node-id>.<component>".
func (b *ScoresBuilder) AddKey(key string, v float64) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		for k, name := range scoreKinds {
			if key[i+1:] == name {
				b.t = append(b.t, scoreTriple{key[:i], uint8(k), v})
				return
			}
		}
	}
	b.t = append(b.t, scoreTriple{key, kindRaw, v})
}

// Scores returns what was added, empty (not nil) when nothing was, and
// resets b, which keeps its room for the next Scores.
func (b *ScoresBuilder) Scores() Scores {
	t := b.t
	b.t = t[:0]
	slices.SortStableFunc(t, func(x, y scoreTriple) int {
		if c := strings.Compare(x.node, y.node); c != 0 {
			return c
		}
		return int(x.kind) - int(y.kind)
	})
	var scratch [8]scoreEntry
	out := scratch[:0]
	for i := 0; i < len(t); {
		node := unique.Make(t[i].node)
		var vals [len(scoreKinds)]float64
		var has uint8
		// A raw key is the group's node string itself: one per group.
		raw, isRaw := 0.0, false
		j := i
		for ; j < len(t) && t[j].node == t[i].node; j++ {
			// Sorted stably: the last value of a component wins.
			if x := t[j]; x.kind == kindRaw {
				raw, isRaw = x.v, true
			} else {
				vals[x.kind] = x.v
				has |= 1 << x.kind
			}
		}
		out = appendNode(out, node, has, &vals)
		if isRaw {
			out = append(out, scoreEntry{node: node, has: hasRaw, v: [2]float64{raw}})
		}
		i = j
	}
	return Scores{append(make([]scoreEntry, 0, len(out)), out...)}
}

// appendNode appends the entries of one node's components.
func appendNode(out []scoreEntry, node unique.Handle[string], has uint8, vals *[len(scoreKinds)]float64) []scoreEntry {
	if has == 0 {
		return out
	}
	var vs [len(scoreKinds)]float64
	var kinds [len(scoreKinds)]uint8
	n := 0
	for k := range uint8(kindNormalized) {
		if has&(1<<k) != 0 {
			vs[n], kinds[n] = vals[k], k
			n++
		}
	}
	norm := has&(1<<kindNormalized) != 0
	if norm && n > 0 && n <= 2 && math.Float64bits(meanOf(vs[:n])) == math.Float64bits(vals[kindNormalized]) {
		return append(out, scoreEntry{node: node, has: has | hasDerived, v: [2]float64{vs[0], vs[1]}})
	}
	if norm {
		vs[n], kinds[n] = vals[kindNormalized], kindNormalized
		n++
	}
	for i := 0; i < n; i += 2 {
		e := scoreEntry{node: node, has: 1 << kinds[i], v: [2]float64{vs[i]}}
		if i+1 < n {
			e.has |= 1 << kinds[i+1]
			e.v[1] = vs[i+1]
		}
		out = append(out, e)
	}
	return out
}

// meanOf is the normalized score of components, as the scheduler takes
// it: their sum in order, divided by their count.
func meanOf(vs []float64) float64 {
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}

// IsNil reports whether s is nil (the zero Scores).
func (s Scores) IsNil() bool { return s.e == nil }

// Len is how many keys s has in the API's map.
func (s Scores) Len() int {
	n := 0
	for _, e := range s.e {
		if e.has&hasRaw != 0 {
			n++
			continue
		}
		n += bits.OnesCount8(e.has & (1<<len(scoreKinds) - 1))
	}
	return n
}

// Each calls f for every component of s, node by node, until f returns
// false. A key that names no known component comes whole as node, with
// an empty component.
func (s Scores) Each(f func(node, component string, v float64) bool) {
	s.EachRef(func(r ScoreRef, v float64) bool { return f(r.Node(), r.Component(), v) })
}

// ScoreRef names one component of one node in a Scores: what Each gives
// as a node and a component, held as the node's unique handle and the
// component's number. It is comparable, and much cheaper to hash or
// compare than the key "<node-id>.<component>" it stands for (snapshot
// records number the keys they write by it).
type ScoreRef struct {
	node unique.Handle[string]
	kind uint8
}

// Node is the ref's node ID (a whole raw key, when Component is empty).
func (r ScoreRef) Node() string { return r.node.Value() }

// Kind numbers the ref's component (the same component, the same
// number, within a process).
func (r ScoreRef) Kind() uint8 { return r.kind }

// Component is the ref's component, empty for a key that names no known
// component.
func (r ScoreRef) Component() string {
	if r.kind == kindRaw {
		return ""
	}
	return scoreKinds[r.kind]
}

// EachRef calls f with each score as Each does, naming it by a ScoreRef,
// until f returns false.
func (s Scores) EachRef(f func(r ScoreRef, v float64) bool) {
	for _, e := range s.e {
		if e.has&hasRaw != 0 {
			if !f(ScoreRef{e.node, kindRaw}, e.v[0]) {
				return
			}
			continue
		}
		j := 0
		for k := range kindNormalized {
			if e.has&(1<<k) != 0 {
				if !f(ScoreRef{e.node, uint8(k)}, e.v[j]) {
					return
				}
				j++
			}
		}
		if e.has&(1<<kindNormalized) != 0 {
			var v float64
			if e.has&hasDerived != 0 {
				v = meanOf(e.v[:j])
			} else {
				v = e.v[j]
			}
			if !f(ScoreRef{e.node, kindNormalized}, v) {
				return
			}
		}
	}
}

// ScoreKey is the API's key of a node's component: "<node-id>.<component>",
// or node alone when component is empty.
func ScoreKey(node, component string) string {
	if component == "" {
		return node
	}
	return node + "." + component
}

// Get returns the score of a node's component.
func (s Scores) Get(nodeID, component string) (float64, bool) {
	var out float64
	found := false
	s.Each(func(node, comp string, v float64) bool {
		if node == nodeID && comp == component {
			out, found = v, true
			return false
		}
		return true
	})
	return out, found
}

// Map returns s as the API shows it: "<node-id>.<component>" to score;
// nil when s is nil.
func (s Scores) Map() map[string]float64 {
	if s.e == nil {
		return nil
	}
	m := make(map[string]float64, s.Len())
	s.Each(func(node, component string, v float64) bool {
		m[ScoreKey(node, component)] = v
		return true
	})
	return m
}

// ScoresOf returns the scores of m, a map as the API shows them: nil for
// nil.
func ScoresOf(m map[string]float64) Scores {
	if m == nil {
		return Scores{}
	}
	var b ScoresBuilder
	b.t = make([]scoreTriple, 0, len(m))
	for k, v := range m {
		b.AddKey(k, v)
	}
	return b.Scores()
}

// MarshalJSON writes s as the API's map: the keys sorted, numbers as
// encoding/json writes a float64, null when s is nil.
func (s Scores) MarshalJSON() ([]byte, error) {
	if s.e == nil {
		return []byte("null"), nil
	}
	// The keys, written once into one buffer, sorted as strings.
	type kv struct {
		off, end int
		v        float64
	}
	n := s.Len()
	kvs := make([]kv, 0, n)
	keys := make([]byte, 0, n*48)
	s.Each(func(node, component string, v float64) bool {
		off := len(keys)
		keys = append(keys, node...)
		if component != "" {
			keys = append(keys, '.')
			keys = append(keys, component...)
		}
		kvs = append(kvs, kv{off, len(keys), v})
		return true
	})
	slices.SortFunc(kvs, func(a, b kv) int { return bytes.Compare(keys[a.off:a.end], keys[b.off:b.end]) })
	buf := make([]byte, 0, 2+len(keys)+n*24)
	buf = append(buf, '{')
	for i, p := range kvs {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = appendJSONString(buf, keys[p.off:p.end]); err != nil {
			return nil, err
		}
		buf = append(buf, ':')
		if buf, err = appendJSONFloat(buf, p.v); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// appendJSONString appends s quoted as encoding/json quotes it: plainly
// when it holds only printable ASCII that needs no escape.
func appendJSONString(buf, s []byte) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(string(s))
			return append(buf, q...), err
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"'), nil
}

// appendJSONFloat appends v as encoding/json writes a float64: the
// shortest decimal that reads back as v, in exponent form only below 1e-6
// or from 1e21 on, and an error for NaN and infinities.
func appendJSONFloat(buf []byte, v float64) ([]byte, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(v, 'g', -1, 64)}
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, v, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-7, not e-07.
		out := buf[start:]
		if n := len(out); n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			buf = buf[:len(buf)-1]
		}
	}
	return buf, nil
}

// UnmarshalJSON reads the API's map (or null).
func (s *Scores) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*s = Scores{}
		return nil
	}
	var m map[string]float64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*s = ScoresOf(m)
	return nil
}

// CodecEncodeSelf writes s in the log's shape: the msgpack map
// "<node-id>.<component>" to score that AllocMetric.Scores always was, so
// entries and snapshots written before and after read alike.
func (s Scores) CodecEncodeSelf(e *codec.Encoder) {
	e.MustEncode(s.Map())
}

// CodecDecodeSelf reads the msgpack map CodecEncodeSelf writes.
func (s *Scores) CodecDecodeSelf(d *codec.Decoder) {
	var m map[string]float64
	d.MustDecode(&m)
	*s = ScoresOf(m)
}
