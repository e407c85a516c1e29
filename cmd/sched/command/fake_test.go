package command

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
)

// testNow is the clock of every CLI test, so dates and ages are fixed.
var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// seen is one request the fake API received.
type seen struct {
	Method string
	Path   string // escaped
	Query  url.Values
	Header http.Header
	Body   []byte
}

// fakeAPI is a sched server stand-in: handlers per "METHOD /path", every
// request recorded, and a 404 for anything unrouted so a test notices a
// call it did not expect.
type fakeAPI struct {
	*httptest.Server
	t      *testing.T
	mu     sync.Mutex
	routes map[string][]http.HandlerFunc
	reqs   []seen
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, routes: map[string][]http.HandlerFunc{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	key := r.Method + " " + r.URL.EscapedPath()
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
	hs := f.routes[key]
	var h http.HandlerFunc
	if len(hs) > 0 {
		h = hs[0]
		if len(hs) > 1 {
			// Each handler answers once, the last one for ever after.
			f.routes[key] = hs[1:]
		}
	}
	f.mu.Unlock()
	if h == nil {
		http.Error(w, "no such endpoint: "+key, http.StatusNotFound)
		return
	}
	h(w, r)
}

// on adds handlers for method and path, used in turn.
func (f *fakeAPI) on(method, path string, hs ...http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := method + " " + path
	f.routes[key] = append(f.routes[key], hs...)
}

// reply answers with v as JSON and an index header.
func reply(index uint64, v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(index, 10))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
}

// fail answers with a status and a plain-text message, as the server does.
func fail(code int, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Error(w, msg, code) }
}

// requests returns the recorded requests, optionally only those to
// "METHOD /path".
func (f *fakeAPI) requests(key string) []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seen
	for _, r := range f.reqs {
		if key == "" || r.Method+" "+r.Path == key {
			out = append(out, r)
		}
	}
	return out
}

// only returns the single request to key, failing the test otherwise.
func (f *fakeAPI) only(key string) seen {
	f.t.Helper()
	rs := f.requests(key)
	if len(rs) != 1 {
		f.t.Fatalf("%d requests to %s, want 1 (all: %v)", len(rs), key, f.keys())
	}
	return rs[0]
}

func (f *fakeAPI) keys() []string {
	var out []string
	for _, r := range f.requests("") {
		out = append(out, r.Method+" "+r.Path+"?"+r.Query.Encode())
	}
	return out
}

// decodeBody decodes a recorded JSON body into v.
func decodeBody(t *testing.T, s seen, v any) {
	t.Helper()
	if err := json.Unmarshal(s.Body, v); err != nil {
		t.Fatalf("body of %s %s is not JSON: %v: %s", s.Method, s.Path, err, s.Body)
	}
}

// result is what one CLI invocation produced.
type result struct {
	code   int
	stdout string
	stderr string
}

// runOpts tunes an in-process CLI run.
type runOpts struct {
	// ctx is the command's context; nil means the test's.
	ctx   context.Context
	stdin string
	env   map[string]string
	agent func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// now is the command's clock; nil means testNow.
	now func() time.Time
}

// runCLI runs the sched command line args against f (nil: no server) and
// returns its exit code and output.
func runCLI(t *testing.T, f *fakeAPI, o runOpts, args ...string) result {
	t.Helper()
	env := map[string]string{}
	if f != nil {
		env[api.EnvAddress] = f.URL
	}
	for k, v := range o.env {
		env[k] = v
	}
	var stdout, stderr bytes.Buffer
	ctx := o.ctx
	if ctx == nil {
		ctx = t.Context()
	}
	now := o.now
	if now == nil {
		now = func() time.Time { return testNow }
	}
	c := &cli{
		ctx:    ctx,
		stdin:  strings.NewReader(o.stdin),
		stdout: &stdout,
		stderr: &stderr,
		getenv: func(k string) string { return env[k] },
		now:    now,
		loc:    time.UTC,
		agent:  o.agent,
	}
	code := c.run(args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// check compares a result with the wanted code and exact outputs.
func (r result) check(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	if r.stdout != stdout {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, stdout)
	}
	if r.stderr != stderr {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, stderr)
	}
}

// lines joins lines with newlines, ending with one: expected outputs read
// as the terminal shows them.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
