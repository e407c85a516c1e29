package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// recorded is one request as the fake server saw it.
type recorded struct {
	Method  string
	RawPath string // escaped path
	Query   url.Values
	Header  http.Header
	Body    []byte
}

// reply is what the fake server answers.
type reply struct {
	Status  int
	Header  map[string]string
	Body    string
	Handler func(w http.ResponseWriter, r *http.Request) // overrides the rest
}

// fakeServer answers every request with its next reply and records it.
type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	replies []reply
	reqs    []recorded
}

func newFake(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{Method: r.Method, RawPath: r.URL.EscapedPath(), Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
	var rep reply
	if len(f.replies) > 0 {
		rep = f.replies[0]
		if len(f.replies) > 1 {
			f.replies = f.replies[1:]
		}
	}
	f.mu.Unlock()
	if rep.Handler != nil {
		rep.Handler(w, r)
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status == 0 {
		rep.Status = http.StatusOK
	}
	w.WriteHeader(rep.Status)
	io.WriteString(w, rep.Body)
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeServer) client(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.Address = f.URL
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// jsonEqual reports whether two JSON documents encode the same value.
