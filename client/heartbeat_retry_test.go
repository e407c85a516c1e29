package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/state"
)

// memServers answers the node endpoints a heartbeat loop uses (register,
// heartbeat) in memory, as an http.RoundTripper: no sockets, so the loop
// runs under testing/synctest's fake clock. Every address reaches the
// same servers.
type memServers struct {
	mu sync.Mutex
	// ttl is the TTL every answer gives.
	ttl time.Duration
	// down, while true, makes every request a 503 (no cluster leader).
	down bool
	// registers and beats are the times of the registrations and the
	// heartbeats answered; tries the times of heartbeat requests that
	// failed, one entry per request.
	registers, beats, tries []time.Time
	// hosts counts the heartbeats answered through each address.
	hosts map[string]int
	// limit, when reached by the requests, calls stop (a client in a
	// tight loop would never let the fake clock move).
	limit, requests int
	stop            func()
}

func (m *memServers) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if m.requests++; m.limit > 0 && m.requests == m.limit {
		m.stop()
	}
	answer := func(code int, v any) (*http.Response, error) {
		b, _ := json.Marshal(v)
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(b)), Request: r}, nil
	}
	if m.down {
		if strings.HasSuffix(r.URL.Path, "/heartbeat") {
			m.tries = append(m.tries, now)
		}
		return answer(http.StatusServiceUnavailable, "No cluster leader")
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/node/register"):
		m.registers = append(m.registers, now)
	case strings.HasSuffix(r.URL.Path, "/heartbeat"):
		m.beats = append(m.beats, now)
		if m.hosts == nil {
			m.hosts = map[string]int{}
		}
		m.hosts[r.URL.Host]++
	default:
		return answer(http.StatusNotFound, "no such endpoint")
	}
	return answer(http.StatusOK, &state.NodeUpdateResponse{HeartbeatTTL: m.ttl})
}

func (m *memServers) set(fn func(m *memServers)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(m)
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runHeartbeats runs a client's heartbeat loop (only it) against m inside
// the current synctest bubble, with three server addresses and the
// default timings but for mod's; stop ends it and waits.
func runHeartbeats(t *testing.T, m *memServers, logs io.Writer, mod ...func(*Config)) (c *Client, stop func()) {
	t.Helper()
	cfg := Config{
		DataDir: t.TempDir(), Servers: []string{"http://s1:4646", "http://s2:4646", "http://s3:4646"},
		Services: &fakeServices{}, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Rand: rand.New(rand.NewPCG(7, 7)),
	}
	for _, fn := range mod {
		fn(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The same servers as New's, through m.
	c.servers, err = newServers(c.cfg.Servers, "", &http.Client{Transport: m}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	c.servers.rebalanceEvery(c.cfg.ServerRebalanceInterval, c.cfg.Now, rand.New(rand.NewPCG(2, 2)), c.log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m.set(func(m *memServers) { m.stop = cancel })
	go func() {
		defer close(done)
		c.heartbeatLoop(ctx)
	}()
	return c, func() {
		cancel()
		<-done
		c.Shutdown()
	}
}

// Servers that answer with no TTL (0) get the registration's fallback TTL
// for heartbeats too: the client heartbeats at the fallback's rate, not
// in a tight loop, and says so once.
func TestHeartbeatZeroTTLFallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memServers{ttl: 0, limit: 1000}
		var logs syncBuffer
		_, stop := runHeartbeats(t, m, &logs)
		time.Sleep(time.Minute)
		stop()
		m.mu.Lock()
		beats := len(m.beats)
		m.mu.Unlock()
		// Every 4.5 to 5 s (half the fallback TTL, less up to 10%
		// jitter): 12 or 13 in a minute.
		if beats < 11 || beats > 14 {
			t.Errorf("%d heartbeats in a minute of zero-TTL answers, want 12 or 13 (every half of the %v fallback)", beats, fallbackTTL)
		}
		if n := strings.Count(logs.String(), "no heartbeat TTL"); n != 1 {
			t.Errorf("the zero TTL logged %d times, want once:\n%s", n, logs.String())
		}
	})
}

// A run of heartbeat failures (every server answering 503) does not let
// the backoff carry the client past its TTL: it tries several times
// within the TTL and, past it, at least every heartbeat interval, so a
// server that answers again within the servers' grace keeps the node up,
// and after a long outage the node is back within one interval.
func TestHeartbeatRetriesWithinTTL(t *testing.T) {
	const (
		ttl      = 10 * time.Second
		grace    = 10 * time.Second // the servers' default
		interval = ttl / 2          // DefaultHeartbeatFraction
	)
	for _, outage := range []time.Duration{9 * time.Second, 13 * time.Second, 2 * time.Minute} {
		t.Run(outage.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &memServers{ttl: ttl}
				_, stop := runHeartbeats(t, m, io.Discard)
				synctest.Wait()
				start := time.Now()
				m.set(func(m *memServers) { m.down = true })
				time.Sleep(outage)
				m.set(func(m *memServers) { m.down = false })
				back := time.Now()
				time.Sleep(2 * interval)
				stop()

				m.mu.Lock()
				defer m.mu.Unlock()
				if len(m.registers) != 1 {
					t.Errorf("%d registrations, want 1", len(m.registers))
				}
				// The servers' view: the node's timer, ttl + grace from
				// each answered heartbeat (the registration's first). An
				// outage that ends one interval before the timer does
				// must not let it run out.
				last := m.registers[0]
				var longest time.Duration
				for _, b := range m.beats {
					longest = max(longest, b.Sub(last))
					if gap := b.Sub(last); gap > ttl+grace && outage+interval < ttl+grace {
						t.Errorf("heartbeats answered %v apart (%v and %v after the outage began), more than TTL+grace %v: the node was marked down",
							gap, last.Sub(start), b.Sub(start), ttl+grace)
					}
					last = b
				}
				// Attempts: each try of the loop goes once round the
				// three servers at one instant.
				var attempts []time.Time
				for _, tr := range m.tries {
					if len(attempts) == 0 || !tr.Equal(attempts[len(attempts)-1]) {
						attempts = append(attempts, tr)
					}
				}
				if len(attempts) == 0 {
					t.Fatal("no heartbeat failed")
				}
				expires := m.registers[0].Add(ttl)
				within := 0
				for i, a := range attempts {
					if a.Before(expires) {
						within++
						continue
					}
					if i > 0 {
						if gap := a.Sub(attempts[i-1]); gap > interval+DefaultMinBackoff {
							t.Errorf("past the TTL, tries %v apart (at %v of the outage), want at most the heartbeat interval %v", gap, a.Sub(start), interval)
						}
					}
				}
				t.Logf("outage %v: %d tries within the TTL, %d in all; answered heartbeats at most %v apart",
					outage, within, len(attempts), longest)
				if within < 3 {
					t.Errorf("%d tries within the TTL after the first failure, want at least 3: %v", within, attempts)
				}
				var first time.Time
				for _, b := range m.beats {
					if !b.Before(back) {
						first = b
						break
					}
				}
				if first.IsZero() || first.Sub(back) > interval+DefaultMinBackoff {
					t.Errorf("first heartbeat answered %v after the servers came back, want within %v", first.Sub(back), interval)
				}
			})
		})
	}
}
