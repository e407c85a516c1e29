package http

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/blocking"
	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// A blocking read is answered once for every caller asking the same
// question: the callers of GET /v1/jobs?index=N from ten thousand
// dashboards wait on one watch, and when a write wakes them the handler
// runs once and its encoded answer is written to each of them
// (blocking.Shared). shareAnswers sits between the route's ACL check and
// its handler, so every caller is checked on its own before it joins.

// DefaultMaxBlockingQueries bounds the blocking reads waiting at once on
// a server when Config.MaxBlockingQueries is zero.
const DefaultMaxBlockingQueries = 10000

// maxSharedAnswer bounds the encoded answer kept for a group's callers. A
// larger answer (a list of a million allocations) is written by each
// caller itself, streamed as usual: the callers still share the wait.
const maxSharedAnswer = 16 << 20

// answers are a server's blocking reads: the groups of callers waiting for
// the same answer, and the bound on callers waiting at once.
type answers struct {
	groups *blocking.Shared[answerKey, *encodedAnswer]
	limit  *blocking.Limit
	// maxBytes bounds a shared answer; zero means maxSharedAnswer.
	maxBytes int
}

func newAnswers(st blocking.Store, maxWaiting int) answers {
	return answers{groups: blocking.NewShared[answerKey, *encodedAnswer](st), limit: blocking.NewLimit(maxWaiting)}
}

// answerKey is a blocking read's question: callers with equal keys get the
// same answer from the handler.
type answerKey struct {
	// path is the request's path, which names the route and its
	// parameters (only GET routes share).
	path string
	// query is every query parameter but index, wait and stale (which
	// change when and how long, not what), encoded in key order.
	query string
	// namespace is the namespace the request resolved to.
	namespace string
	// acl and token are what the handler can see of the caller: nil for
	// both when ACLs are off or the route's handler does not look. The
	// resolver compiles one ACL per token, so a client token's callers
	// share among themselves; every management token has the one
	// management ACL, and its token is left out so that they all share.
	acl   *state.ACL
	token *state.ACLToken
}

// encodedAnswer is a handler's whole answer, kept for every caller of a
// question.
type encodedAnswer struct {
	header http.Header
	code   int
	body   []byte
	// err is the handler's error after its read (a 404 for a job not
	// there yet): the answer at this index, and callers keep waiting for
	// a newer one as they would for a value.
	err error
	// tooLarge is set when the body passed maxSharedAnswer: each caller
	// runs the handler itself once the wait ends.
	tooLarge bool
}

// errNotShareable is a Compute's answer for a handler that does not read
// through Server.read exactly once: what it read cannot be watched on the
// callers' behalf, so they run it as before.
var errNotShareable = errors.New("http: the handler's answer cannot be shared")

// errAnswerTooLarge ends the recording of an answer past maxSharedAnswer.
var errAnswerTooLarge = errors.New("http: answer too large to share")

// readMode, in a request's context, makes Server.read run its query once,
// at once, without the consistency barrier (the callers passed it before
// they waited), registering what it reads in ws (which may be nil).
type readMode struct {
	ws    memdb.WatchSet
	runs  int
	index uint64
	err   error
}

type readModeKey struct{}

func readModeOf(r *http.Request) *readMode {
	m, _ := r.Context().Value(readModeKey{}).(*readMode)
	return m
}

// run runs a read's query as m says.
func (m *readMode) run(query blocking.Query) (uint64, error) {
	m.runs++
	index, err := query(m.ws)
	m.index, m.err = max(index, 1), err
	return m.index, err
}

// shareAnswers wraps a GET route's handler: a blocking request (index > 0)
// waits in its question's group, and is answered with the group's encoded
// answer. Other requests, and every request of a route found not to read
// through Server.read, go to h as they are.
func (s *Server) shareAnswers(rt route, h codec.Handler) codec.Handler {
	if rt.Method != http.MethodGet {
		return h
	}
	var notShareable atomic.Bool
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
		if notShareable.Load() || readModeOf(r) != nil {
			return h(w, r, p)
		}
		o, err := parseQuery(r)
		if err != nil || o.MinIndex == 0 {
			return h(w, r, p)
		}
		if !o.Stale {
			if err := s.cfg.Cluster.ReadBarrier(r.Context()); err != nil {
				return nil, err
			}
		}
		// The group may run this compute after r's handler returned, when
		// the router has taken p back for another request: it keeps a copy.
		params := slices.Clone(p)
		compute := func(ctx context.Context, ws memdb.WatchSet) (uint64, *encodedAnswer, error) {
			return s.encodeAnswer(ctx, r, params, h, ws)
		}
		s.metrics.blocking.Inc()
		a, err := s.answers.groups.Wait(r.Context(), s.answerKeyOf(r, o), blocking.Options{MinIndex: o.MinIndex, Wait: o.Wait, Limit: s.answers.limit}, compute)
		s.metrics.blocking.Dec()
		if errors.Is(err, errNotShareable) {
			notShareable.Store(true)
			return h(w, r, p)
		}
		if err != nil {
			return nil, err
		}
		e := a.Value
		if e.tooLarge {
			// The wait was shared; the answer is this caller's own.
			return h(w, r.WithContext(context.WithValue(r.Context(), readModeKey{}, &readMode{})), p)
		}
		header := w.Header()
		for k, v := range e.header {
			header[k] = slices.Clip(v) // an Add by the writer copies, never appends into the shared answer
		}
		s.setMeta(w, a.Index) // this server's leader view now, not at the answer's time
		if e.err != nil {
			return nil, e.err
		}
		header.Set("Content-Length", strconv.Itoa(len(e.body)))
		if e.code != 0 && e.code != http.StatusOK {
			w.WriteHeader(e.code)
		}
		w.Write(e.body)
		return codec.AlreadyWritten{}, nil
	}
}

// answerKeyOf is r's question.
func (s *Server) answerKeyOf(r *http.Request, o queryOptions) answerKey {
	// The query the core decoded for the scope, without a second
	// decoding; the key leaves out what changes when and how long.
	var q url.Values
	if sc := scopeOf(r); sc != nil {
		q = sc.query
	} else {
		q = r.URL.Query()
	}
	k := answerKey{path: r.URL.Path, query: encodeQueryWithout(q, "index", "wait", "stale"), namespace: o.Namespace}
	if a := authOf(r); a != nil {
		k.acl, k.token = a.acl, a.token
		if a.acl != nil && a.acl.IsManagement() {
			k.token = nil
		}
	}
	return k
}

// encodeQueryWithout is q.Encode() without the keys skip, leaving q as
// it is (it is the request's scope's).
func encodeQueryWithout(q url.Values, skip ...string) string {
	if len(q) == 0 {
		return ""
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		if !slices.Contains(skip, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		ke := url.QueryEscape(k)
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(ke)
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(v))
		}
	}
	return b.String()
}

// encodeAnswer runs h for r once, reading with ws, and records its answer
// as wrap would write it. ctx ends the run (it is the group's, when the
// answer is computed for a group); the request's own values (its auth)
// are kept.
func (s *Server) encodeAnswer(ctx context.Context, r *http.Request, p httprouter.Params, h codec.Handler, ws memdb.WatchSet) (index uint64, e *encodedAnswer, err error) {
	// A group's run is on the group's goroutine, where net/http's recover
	// of a handler's panic does not reach: a panic would end the process.
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("blocking read panicked", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			index, e, err = 0, nil, fmt.Errorf("http: %s panicked: %v", r.URL.Path, v)
		}
	}()
	return s.encodeAnswerOnce(ctx, r, p, h, ws)
}

func (s *Server) encodeAnswerOnce(ctx context.Context, r *http.Request, p httprouter.Params, h codec.Handler, ws memdb.WatchSet) (uint64, *encodedAnswer, error) {
	m := &readMode{ws: ws}
	rr := r.WithContext(context.WithValue(contextValues{ctx, r.Context()}, readModeKey{}, m))
	rec := &answerRecorder{header: http.Header{}, max: cmp.Or(s.answers.maxBytes, maxSharedAnswer)}
	v, err := h(rec, rr, p)
	switch {
	case m.runs == 0 && err != nil:
		return 0, nil, err // refused before reading: a bad parameter
	case m.runs != 1:
		return 0, nil, errNotShareable
	case m.err != nil:
		return m.index, nil, m.err
	}
	e := &encodedAnswer{header: rec.header, code: rec.code}
	if err != nil {
		e.err = err
		return m.index, e, nil
	}
	if _, done := v.(codec.AlreadyWritten); !done {
		if list, ok := longList(v); ok {
			err = streamList(rec, list)
		} else {
			buf := responseBuffers.Get().(*bytes.Buffer)
			if err = encodeResponse(buf, v); err == nil {
				rec.header.Set("Content-Type", "application/json")
				_, err = rec.Write(buf.Bytes())
			}
			putResponseBuffer(buf)
		}
	}
	switch {
	case errors.Is(err, errAnswerTooLarge):
		return m.index, &encodedAnswer{tooLarge: true}, nil
	case err != nil:
		e.err = err
		return m.index, e, nil
	}
	if rec.tooLarge {
		return m.index, &encodedAnswer{tooLarge: true}, nil
	}
	e.body = rec.body.Bytes()
	return m.index, e, nil
}

// contextValues is a context that ends with its Context and looks values
// up in values: a group's run ends with the group and reads the auth of
// the request that started it.
type contextValues struct {
	context.Context
	values context.Context
}

func (c contextValues) Value(key any) any { return c.values.Value(key) }

// answerRecorder is the ResponseWriter an answer is encoded into.
type answerRecorder struct {
	header   http.Header
	code     int
	body     bytes.Buffer
	max      int
	tooLarge bool
}

func (a *answerRecorder) Header() http.Header { return a.header }

func (a *answerRecorder) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	if a.tooLarge || a.body.Len()+len(b) > a.max {
		a.tooLarge = true
		a.body = bytes.Buffer{}
		return 0, errAnswerTooLarge
	}
	return a.body.Write(b)
}
