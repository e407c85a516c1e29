package mgmt

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
)

// limitedServer answers 429 to the first `limited` requests (all of them
// when limited < 0) with the given headers, then 201 with a project.
type limitedServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newLimitedServer(t *testing.T, limited int, header map[string]string) *limitedServer {
	t.Helper()
	s := &limitedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		n := len(s.bodies)
		s.mu.Unlock()
		if limited < 0 || n <= limited {
			for k, v := range header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"errors":[{"status":"429","title":"too many requests","detail":"rate limit of 30 requests per second exceeded"}]}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"data":{"id":"prj-1","type":"projects","attributes":{"name":"web"}}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *limitedServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func (s *limitedServer) mgmt(t *testing.T) *Client {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: s.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	return New(c)
}

func TestMgmtRateLimitRetried(t *testing.T) {
	s := newLimitedServer(t, 2, map[string]string{"X-RateLimit-Reset": "0.001", "Retry-After": "1"})
	p, err := s.mgmt(t).Projects().Create(t.Context(), "acme", ProjectCreateOptions{Name: "web"})
	if err != nil || p.ID != "prj-1" {
		t.Fatalf("Create = %+v, %v", p, err)
	}
	bodies := s.requests()
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 2 limited and 1 answered", len(bodies))
	}
	for i, b := range bodies {
		// Every retry sends the whole body again.
		if b != bodies[0] || b == "" {
			t.Errorf("request %d body %q, first %q", i, b, bodies[0])
		}
	}
}

func TestMgmtRateLimitGivesUp(t *testing.T) {
	s := newLimitedServer(t, -1, map[string]string{"X-RateLimit-Reset": "0.001"})
	_, err := s.mgmt(t).WithRateLimitRetries(2).Projects().Create(t.Context(), "acme", ProjectCreateOptions{Name: "web"})
	var je *JSONAPIError
	if !errors.As(err, &je) || je.Status != http.StatusTooManyRequests || je.Title != "too many requests" {
		t.Fatalf("err = %v, want the 429", err)
	}
	if n := len(s.requests()); n != 3 {
		t.Errorf("%d requests, want 1 + 2 retries", n)
	}
}

func TestMgmtRateLimitWaitStopsWithContext(t *testing.T) {
	// The server asks for a 10 s wait; the caller's deadline is sooner.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	s := newLimitedServer(t, -1, map[string]string{"Retry-After": "10"})
	start := time.Now()
	_, err := s.mgmt(t).Projects().Read(ctx, "prj-1")
	var je *JSONAPIError
	if !errors.As(err, &je) || je.Status != http.StatusTooManyRequests {
		t.Fatalf("err = %v, want the 429", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests after the deadline, want 1", n)
	}
	if d := time.Since(start); d >= 10*time.Second {
		t.Errorf("waited %v despite the deadline", d)
	}
}

func TestMgmtRateLimitWait(t *testing.T) {
	cases := []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"X-RateLimit-Reset": "0.250", "Retry-After": "1"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"X-RateLimit-Reset": "soon", "Retry-After": "3"}, 3 * time.Second},
		{map[string]string{}, time.Second},
		{map[string]string{"X-RateLimit-Reset": "-1"}, time.Second},
		{map[string]string{"X-RateLimit-Reset": "3600"}, maxRateLimitWait},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := rateLimitWait(h); got != tc.want {
			t.Errorf("rateLimitWait(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
