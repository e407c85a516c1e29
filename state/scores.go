package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

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

// scoreKinds are the components Scores keeps by number: bit k of an
// entry's header is scoreKinds[k]. The order is the one the scheduler
// adds them in, which is the order the normalized score is the mean of.
var scoreKinds = [...]string{
	ScoreBinPack, ScoreJobAntiAffinity, ScoreReschedule, ScoreAffinity, ScoreSpread, ScoreNormalized,
}

const (
	kindNormalized = 5
	// kindBits are the header bits of the components.
	kindBits = 1<<len(scoreKinds) - 1
	// hasDerived marks an entry whose normalized score is the mean of its
	// other components, and is not stored.
	hasDerived = 1 << 6
	// hasRaw marks an entry whose node is a whole key that names no known
	// component, with one value.
	hasRaw = 1 << 7
	// kindRaw sorts raw keys after every component of a node.
	kindRaw = 7
	// uuidLen is the length of a node ID in the canonical UUID form
	// (lowercase hex, hyphens at 8, 13, 18 and 23), which an entry holds
	// as its 16 bytes.
	uuidLen = 36
)

// Scores are the score components of the nodes a scheduler ranked best
// for a placement. The API (JSON) and the log (msgpack) carry them as a
// map from "<node-id>.<component>" to the score, and Scores reads and
// writes that shape. In memory a map of some fifteen string keys cost
// ~1,000 bytes per allocation (BenchmarkAllocMetricBytes), a quarter of
// the server's live heap (issue 19), and any pointer in what a stored
// allocation holds is work for every cycle of the garbage collector; so
// Scores packs its entries in one byte slice, which holds no pointer and
// which the collector never scans. An entry per node (or per raw key):
//
//   - a header byte: which components follow (bit k is scoreKinds[k]),
//     hasDerived when the normalized score is, bit for bit, the mean of
//     the others (as the scheduler computes it) and is left out, hasRaw
//     for a key that names no known component;
//   - the node: a uvarint 0 and 16 bytes for an ID in the canonical UUID
//     form, else the uvarint len+1 and the ID's bytes (a raw key whole);
//   - its values, 8 bytes each (IEEE 754 bits, little endian), in
//     scoreKinds order: one for a raw key.
//
// A Scores is immutable: copies share it. The zero value is nil (the map
// was nil, JSON null); ScoresOf an empty map is empty but not nil. The
// representation is canonical (entries sorted by node, as strings, and a
// raw key after the components of the node it equals), so equal scores
// are reflect.DeepEqual whatever built them.
type Scores struct {
	b []byte
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
	t   []scoreTriple
	buf []byte
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
	return b.ScoresIn(func(n int) []byte { return make([]byte, n) })
}

// ScoresIn is Scores with the result's bytes in room(n), which returns n
// bytes (length n) that no one else writes: a store decoding many
// allocations takes them from a larger block.
func (b *ScoresBuilder) ScoresIn(room func(n int) []byte) Scores {
	t := b.t
	b.t = t[:0]
	slices.SortStableFunc(t, func(x, y scoreTriple) int {
		if c := strings.Compare(x.node, y.node); c != 0 {
			return c
		}
		return int(x.kind) - int(y.kind)
	})
	out := b.buf[:0]
	for i := 0; i < len(t); {
		node := t[i].node
		var vals [len(scoreKinds)]float64
		var has uint8
		// A raw key is the group's node string itself: one per group.
		raw, isRaw := 0.0, false
		j := i
		for ; j < len(t) && t[j].node == node; j++ {
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
			out = append(out, hasRaw)
			out = appendScoreNode(out, node, false)
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(raw))
		}
		i = j
	}
	b.buf = out
	dst := room(len(out))[:len(out)]
	copy(dst, out)
	return Scores{dst[:len(out):len(out)]}
}

// appendNode appends the entry of one node's components, if it has any.
func appendNode(out []byte, node string, has uint8, vals *[len(scoreKinds)]float64) []byte {
	if has == 0 {
		return out
	}
	var vs [len(scoreKinds)]float64
	n := 0
	for k := range uint8(kindNormalized) {
		if has&(1<<k) != 0 {
			vs[n] = vals[k]
			n++
		}
	}
	if has&(1<<kindNormalized) != 0 {
		if n > 0 && math.Float64bits(meanOf(vs[:n])) == math.Float64bits(vals[kindNormalized]) {
			has |= hasDerived
		} else {
			vs[n] = vals[kindNormalized]
			n++
		}
	}
	out = append(out, has)
	out = appendScoreNode(out, node, true)
	for _, v := range vs[:n] {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
	}
	return out
}

// appendScoreNode appends an entry's node: 16 bytes for a node ID in the
// canonical UUID form (when uuid is allowed), else its text.
func appendScoreNode(out []byte, node string, uuid bool) []byte {
	if uuid {
		if id, ok := parseUUID(node); ok {
			out = append(out, 0)
			return append(out, id[:]...)
		}
	}
	out = binary.AppendUvarint(out, uint64(len(node))+1)
	return append(out, node...)
}

// parseUUID reads s in the canonical UUID form: 32 lowercase hex digits
// and hyphens at 8, 13, 18 and 23. Only that form is packed, so that the
// text comes back as it was.
func parseUUID(s string) (id [16]byte, ok bool) {
	if len(s) != uuidLen || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, false
	}
	j := 0
	for i := 0; i < uuidLen; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i--
			continue
		}
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi > 15 || lo > 15 {
			return id, false
		}
		id[j] = hi<<4 | lo
		j++
	}
	return id, true
}

// unhex is the value of a lowercase hex digit, 255 for anything else.
func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}

// appendUUID appends id in the canonical UUID form.
func appendUUID(dst []byte, id *[16]byte) []byte {
	const digits = "0123456789abcdef"
	for i, b := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, digits[b>>4], digits[b&15])
	}
	return dst
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
func (s Scores) IsNil() bool { return s.b == nil }

// Len is how many keys s has in the API's map.
func (s Scores) Len() int {
	n := 0
	s.entries(func(has uint8, _ ScoreRef, _ []byte) bool {
		if has&hasRaw != 0 {
			n++
		} else {
			n += bits.OnesCount8(has & kindBits)
		}
		return true
	})
	return n
}

// entries calls f with each entry of s: its header, its node (kind
// unset) and its values' bytes, until f returns false.
func (s Scores) entries(f func(has uint8, node ScoreRef, vals []byte) bool) {
	b := s.b
	for len(b) > 0 {
		has := b[0]
		b = b[1:]
		var r ScoreRef
		l, w := binary.Uvarint(b)
		b = b[w:]
		if l == 0 {
			copy(r.id[:], b[:16])
			b = b[16:]
		} else {
			r.text, r.isText = string(b[:l-1]), true
			b = b[l-1:]
		}
		n := 1
		if has&hasRaw == 0 {
			n = bits.OnesCount8(has & kindBits)
			if has&hasDerived != 0 {
				n--
			}
		}
		if !f(has, r, b[:8*n]) {
			return
		}
		b = b[8*n:]
	}
}

// Each calls f for every component of s, node by node, until f returns
// false. A key that names no known component comes whole as node, with
// an empty component.
func (s Scores) Each(f func(node, component string, v float64) bool) {
	s.EachRef(func(r ScoreRef, v float64) bool { return f(r.Node(), r.Component(), v) })
}

// ScoreRef names one component of one node in a Scores: what Each gives
// as a node and a component, held as the node ID's 16 bytes (its text
// for an ID that is not a UUID in the canonical form) and the
// component's number. It is comparable, and much cheaper to hash or
// compare than the key "<node-id>.<component>" it stands for (snapshot
// records number the keys they write by it).
type ScoreRef struct {
	id     [16]byte
	text   string
	isText bool
	kind   uint8
}

// Node is the ref's node ID (a whole raw key, when Component is empty).
func (r ScoreRef) Node() string {
	if r.isText {
		return r.text
	}
	var buf [uuidLen]byte
	return string(appendUUID(buf[:0], &r.id))
}

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

// AppendKey appends the ref's key as the API names it: ScoreKey(r.Node(),
// r.Component()), without making either string.
func (r ScoreRef) AppendKey(dst []byte) []byte {
	if r.isText {
		dst = append(dst, r.text...)
	} else {
		dst = appendUUID(dst, &r.id)
	}
	if r.kind == kindRaw {
		return dst
	}
	dst = append(dst, '.')
	return append(dst, scoreKinds[r.kind]...)
}

// Hash mixes the ref's node and component into a number, the same for
// equal refs: for direct-mapped caches of refs.
func (r ScoreRef) Hash() uint64 {
	h := uint64(r.kind) * 0x9e3779b97f4a7c15
	if r.isText {
		for i := 0; i < len(r.text); i++ {
			h = (h ^ uint64(r.text[i])) * 0x100000001b3
		}
		return h ^ h>>29
	}
	h ^= binary.LittleEndian.Uint64(r.id[:8])
	h ^= binary.LittleEndian.Uint64(r.id[8:]) * 0xbf58476d1ce4e5b9
	return h ^ h>>31
}

// EachRef calls f with each score as Each does, naming it by a ScoreRef,
// until f returns false.
func (s Scores) EachRef(f func(r ScoreRef, v float64) bool) {
	s.entries(func(has uint8, r ScoreRef, vals []byte) bool {
		value := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(vals[8*i:])) }
		if has&hasRaw != 0 {
			r.kind = kindRaw
			return f(r, value(0))
		}
		j := 0
		for k := range uint8(kindNormalized) {
			if has&(1<<k) != 0 {
				r.kind = k
				if !f(r, value(j)) {
					return false
				}
				j++
			}
		}
		if has&(1<<kindNormalized) != 0 {
			var v float64
			if has&hasDerived != 0 {
				var vs [len(scoreKinds)]float64
				for i := range j {
					vs[i] = value(i)
				}
				v = meanOf(vs[:j])
			} else {
				v = value(j)
			}
			r.kind = kindNormalized
			return f(r, v)
		}
		return true
	})
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
	if s.b == nil {
		return nil
	}
	m := make(map[string]float64, s.Len())
	var key []byte
	s.EachRef(func(r ScoreRef, v float64) bool {
		key = r.AppendKey(key[:0])
		m[string(key)] = v
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
	if s.b == nil {
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
	s.EachRef(func(r ScoreRef, v float64) bool {
		off := len(keys)
		keys = r.AppendKey(keys)
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
