package client

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// TestHeartbeatDoesNotWaitOnASlowServer: a server that holds a heartbeat
// without answering costs the client one failed heartbeat after
// heartbeatCallLimit, not the TTL: the request is cancelled, and the
// next heartbeats go through once the server answers again.
func TestHeartbeatDoesNotWaitOnASlowServer(t *testing.T) {
	fs := newFakeServer(t)
	fs.mu.Lock()
	fs.ttl = time.Second
	fs.mu.Unlock()
	target, _ := url.Parse(fs.srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	var hold atomic.Bool
	var cancelled atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() && strings.HasSuffix(r.URL.Path, "/heartbeat") {
			select {
			case <-r.Context().Done():
				cancelled.Add(1)
			case <-time.After(time.Minute):
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	c := testClient(t, fs, "", func(cfg *Config) { cfg.Servers = []string{slow.URL} })
	testutil.WaitFor(t, 10*time.Second, "a first heartbeat", func() bool { ok, _ := c.HeartbeatStats(); return ok > 0 })
	hold.Store(true)
	start := time.Now()
	testutil.WaitFor(t, 10*time.Second, "the held heartbeat to fail", func() bool { _, failed := c.HeartbeatStats(); return failed > 0 })
	if took, limit := time.Since(start), heartbeatCallLimit(time.Second); took > limit+3*time.Second {
		t.Errorf("the held heartbeat failed after %v, want about %v", took, limit)
	}
	testutil.WaitFor(t, 5*time.Second, "the server to see the request cancelled", func() bool { return cancelled.Load() > 0 })
	hold.Store(false)
	ok0, _ := c.HeartbeatStats()
	testutil.WaitFor(t, 10*time.Second, "heartbeats to go through again", func() bool { ok, _ := c.HeartbeatStats(); return ok > ok0 })
}
