package http

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedhq/sched/http/blocking"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state/store"
)

// Response headers.
const (
	HeaderIndex       = "X-Sched-Index"
	HeaderKnownLeader = "X-Sched-KnownLeader"
	HeaderLastContact = "X-Sched-LastContact"
	HeaderNextToken   = codec.HeaderNextToken
)

// wrap adapts a codec.Handler to httprouter, writing the JSON body or the
// error. A nil value with a nil error writes JSON null, which is what
// readers of an absent optional object (the latest deployment) expect.
func (s *Server) wrap(rt route, h codec.Handler) httprouter.Handle {
	// auth.go: the route's capability check; answers.go: a blocking read
	// answered once for every caller of the same question.
	h = s.authorized(rt, s.shareAnswers(rt, h))
	// The route's latency series per status class, made on first use (a
	// route never called exports nothing) and kept, so that a request
	// costs no label lookup.
	var classes [6]atomic.Pointer[prometheus.Observer]
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		// A request without a body (a GET's, most of all a blocking read
		// that waits for minutes) keeps http.NoBody: nothing to bound.
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		start := time.Now()
		v, err := h(w, r, p)
		code := http.StatusOK
		if err != nil {
			code = codec.StatusOf(err)
		}
		slot := min(max(code/100, 1), 5)
		o := classes[slot].Load()
		if o == nil {
			obs := s.metrics.requests.WithLabelValues(rt.Path, rt.Method, statusClass(code))
			o = &obs
			classes[slot].Store(o)
		}
		(*o).Observe(time.Since(start).Seconds())
		if err != nil {
			if codec.ClientGone(r, err) {
				// Not a fault: the caller hung up (a CLI monitor or a
				// blocking query interrupted), nobody reads the answer.
				s.log.Debug("client went away", "method", r.Method, "path", r.URL.Path, "error", err)
				return
			}
			switch {
			case code == http.StatusServiceUnavailable:
				s.unavailable.log(s.log, r, err, time.Now())
			case code >= 500:
				s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
			}
			codec.WriteError(w, err)
			return
		}
		if _, done := v.(codec.AlreadyWritten); done {
			return // the handler streamed its own response
		}
		if list, ok := longList(v); ok {
			if err := streamList(w, list); err != nil && !codec.ClientGone(r, err) {
				s.log.Error("stream response", "path", r.URL.Path, "error", err)
			}
			return
		}
		buf := responseBuffers.Get().(*bytes.Buffer)
		defer putResponseBuffer(buf)
		if err := encodeResponse(buf, v); err != nil {
			s.log.Error("encode response", "path", r.URL.Path, "error", err)
			codec.WriteError(w, fmt.Errorf("encode response: %w", err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(buf.Bytes())
	}
}

// responseBuffers holds the buffers responses are encoded into. With
// json.Marshal every answer was encoded and then copied out into a slice
// of its own, garbage as large as the answer (a client's blocking read of
// its allocations carries their jobs).
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledResponse bounds the buffers kept for reuse, so one large answer
// does not stay allocated.
const maxPooledResponse = 1 << 20

func putResponseBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledResponse {
		return
	}
	buf.Reset()
	responseBuffers.Put(buf)
}

// streamListMin is the length from which a list answer is written to the
// connection element by element rather than encoded whole first.
const streamListMin = 1000

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// longList reports whether v is a list of streamListMin elements or more
// whose JSON is its elements' JSON in brackets (not bytes, which JSON
// writes as base64, nor a type with a JSON encoding of its own).
func longList(v any) (reflect.Value, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Len() < streamListMin || rv.Type().Elem().Kind() == reflect.Uint8 ||
		rv.Type().Implements(jsonMarshaler) {
		return reflect.Value{}, false
	}
	return rv, true
}

// streamList writes a long list's JSON, the bytes json.Marshal would
// give, one element at a time through a small buffer. Listing a million
// allocations (GET /v1/allocations without per_page, which the API
// answers whole) encoded ~700 MB into one buffer, grown by doubling,
// beside the stubs themselves: the agent's RSS went from 2.3 to 5.2 GB
// for one request. An element that cannot be encoded ends the answer
// there, after its status was sent: the client reads broken JSON, never
// a partial list that parses.
func streamList(w http.ResponseWriter, list reflect.Value) error {
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer putResponseBuffer(buf)
	bw.WriteByte('[')
	// Elements that are values are encoded through their address, as
	// json.Marshal does with a slice's (addressable) elements: a
	// MarshalJSON with a pointer receiver is called either way.
	byAddr := list.Type().Elem().Kind() != reflect.Pointer && list.Type().Elem().Kind() != reflect.Interface
	for i := range list.Len() {
		if i > 0 {
			bw.WriteByte(',')
		}
		e := list.Index(i)
		if byAddr {
			e = e.Addr()
		}
		if err := encodeResponse(buf, e.Interface()); err != nil {
			bw.Flush()
			return fmt.Errorf("element %d: %w", i, err)
		}
		if _, err := bw.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	bw.WriteByte(']')
	return bw.Flush()
}

// encodeResponse writes v's JSON into buf exactly as json.Marshal encodes
// it (HTML escaped, no trailing newline).
func encodeResponse(buf *bytes.Buffer, v any) error {
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// queryOptions are the read parameters common to every GET.
type queryOptions struct {
	Namespace string
	MinIndex  uint64
	Wait      time.Duration
	Stale     bool
}

// parseQuery reads namespace (as the core resolved it: namespaceOf),
// index, wait and stale. A malformed value is a 400 naming the parameter.
func parseQuery(r *http.Request) (queryOptions, error) {
	q := queryOf(r)
	o := queryOptions{Namespace: namespaceOf(r)}
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return o, codec.BadRequest("index: %q is not a non-negative integer", v)
		}
		o.MinIndex = n
	}
	if v := q.Get("wait"); v != "" {
		d, err := parseWait(v)
		if err != nil {
			return o, codec.BadRequest("wait: %v", err)
		}
		o.Wait = d
	}
	if _, ok := q["stale"]; ok {
		o.Stale = q.Get("stale") != "false"
	}
	return o, nil
}

// parseWait accepts a Go duration with units ("30s", "5m", "5000ms"), as
// Nomad's clients send it. A bare number is refused rather than guessed at.
func parseWait(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration with units, such as 30s or 5m", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", v)
	}
	return d, nil
}

// boolParam reads a boolean query parameter of r's query (queryOf);
// absent is false, present without a value is true.
func boolParam(r *http.Request, name string) (bool, error) { return codec.BoolParam(queryOf(r), name) }

// intParam reads an integer query parameter of r's query; absent is def.
func intParam(r *http.Request, name string, def int64) (int64, error) {
	return codec.IntParam(queryOf(r), name, def)
}

// read runs a (possibly blocking) read: it parses the query options,
// passes the consistency barrier unless stale, runs query through package
// blocking and sets the index and leader headers.
func (s *Server) read(w http.ResponseWriter, r *http.Request, query func(ws memdb.WatchSet, ns string) (uint64, error)) error {
	o, err := parseQuery(r)
	if err != nil {
		return err
	}
	if m := readModeOf(r); m != nil {
		// A shared answer's run (answers.go): once, now, watched for the
		// callers, who passed the barrier before they waited.
		index, err := m.run(func(ws memdb.WatchSet) (uint64, error) { return query(ws, o.Namespace) })
		if err != nil {
			return err
		}
		s.setMeta(w, index)
		return nil
	}
	if !o.Stale {
		if err := s.cfg.Cluster.ReadBarrier(r.Context()); err != nil {
			return err
		}
	}
	if o.MinIndex > 0 {
		s.metrics.blocking.Inc()
		defer s.metrics.blocking.Dec()
	}
	index, err := blocking.Run(r.Context(), s.store, blocking.Options{MinIndex: o.MinIndex, Wait: o.Wait, Limit: s.answers.limit},
		func(ws memdb.WatchSet) (uint64, error) { return query(ws, o.Namespace) })
	if err != nil {
		return err
	}
	s.setMeta(w, index)
	return nil
}

// setMeta sets X-Sched-Index and the leader headers.
func (s *Server) setMeta(w http.ResponseWriter, index uint64) {
	h := w.Header()
	h.Set(HeaderIndex, strconv.FormatUint(index, 10))
	h.Set(HeaderKnownLeader, strconv.FormatBool(s.cfg.Cluster.KnownLeader()))
	h.Set(HeaderLastContact, strconv.FormatInt(s.cfg.Cluster.LastContact().Milliseconds(), 10))
}

// maxIndex returns the largest of the named tables' indexes, the index of a
// result that reads those tables.
func (s *Server) maxIndex(tables ...string) uint64 {
	var m uint64
	for _, t := range tables {
		if i := s.store.Index(t); i > m {
			m = i
		}
	}
	return m
}

// apply sends a command to the writer and sets X-Sched-Index to its index.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, t store.MessageType, req any) (any, uint64, error) {
	resp, index, err := s.cfg.Writer.Apply(r.Context(), t, req)
	if err != nil {
		return nil, 0, err
	}
	s.setMeta(w, index)
	return resp, index, nil
}

// unavailableLog logs the 503 answers (no cluster leader, the leader's
// services stopped) at most once a second, with the number left unlogged
// since: they come in floods (a server restarting under ten thousand
// nodes answers every heartbeat so until it has elected itself), each
// says the same thing, and the caller retries.
type unavailableLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// log writes one warning for err unless one was written less than a
// second before now, in which case it only counts it.
func (u *unavailableLog) log(l *slog.Logger, r *http.Request, err error, now time.Time) {
	u.mu.Lock()
	if now.Sub(u.last) < time.Second {
		u.suppressed++
		u.mu.Unlock()
		return
	}
	n := u.suppressed
	u.last, u.suppressed = now, 0
	u.mu.Unlock()
	l.Warn("request failed: service unavailable", "method", r.Method, "path", r.URL.Path, "error", err, "unlogged_since_last", n)
}
