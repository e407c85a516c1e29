package client

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// Each client shuffles its server list: a cluster's clients start spread
// over its servers, and the clients of a server that fails spread over
// the others rather than all moving to the next address in the list.
func TestServerOrderSpreadsClients(t *testing.T) {
	addrs := []string{"http://10.0.0.1:4646", "http://10.0.0.2:4646", "http://10.0.0.3:4646"}
	rnd := rand.New(rand.NewPCG(1, 2))
	const clients = 3000
	first := map[string]int{}
	next := map[[2]string]int{}
	for range clients {
		s, err := newServers(addrs, "", http.DefaultClient, rnd)
		if err != nil {
			t.Fatal(err)
		}
		a := s.current()
		s.failover(a)
		b := s.current()
		first[a.Address()]++
		next[[2]string{a.Address(), b.Address()}]++
		// Failing over goes once around the client's own order.
		seen := map[string]bool{a.Address(): true, b.Address(): true}
		s.failover(b)
		seen[s.current().Address()] = true
		if s.failover(s.current()); len(seen) != len(addrs) || s.current() != a {
			t.Fatalf("failover order visits %v and comes back to %s, want each of %v once, back to %s", seen, s.current().Address(), addrs, a.Address())
		}
	}
	t.Logf("%d clients start at %v; the next server of each: %v", clients, first, next)
	// 1,000 each expected; the standard deviation is about 26.
	for _, a := range addrs {
		if n := first[a]; n < 900 || n > 1100 {
			t.Errorf("%d of %d clients start at %s, want about a third: %v", n, clients, a, first)
		}
		for _, b := range addrs {
			if a == b {
				continue
			}
			// Half of a's clients move to each other server.
			if n, of := next[[2]string{a, b}], first[a]; n < of*2/5 || n > of*3/5 {
				t.Errorf("%d of the %d clients of %s move to %s, want about half: %v", n, of, a, b, next)
			}
		}
	}
}

// New shuffles Servers with Config.Rand: clients given the same list
// start at different servers.
func TestClientsStartAtDifferentServers(t *testing.T) {
	addrs := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
	count := map[string]int{}
	for seed := range uint64(12) {
		c, err := New(Config{
			DataDir: t.TempDir(), Servers: addrs, Services: &fakeServices{},
			Rand: rand.New(rand.NewPCG(seed, seed)),
		})
		if err != nil {
			t.Fatal(err)
		}
		count[c.CurrentServer()]++
		c.Shutdown()
	}
	if len(count) != len(addrs) {
		t.Fatalf("12 clients start at %v, want every one of %v", count, addrs)
	}
}

// The servers of a cluster answer for the same nodes: a client that moves
// from one to another (a 503 during an election, a server down, a 500)
// keeps heartbeating and does not register again. It registers again only
// when the servers answer that they do not know the node (404).
func TestFailoverDoesNotReregister(t *testing.T) {
	fs := newFakeServer(t)
	fs.ttl = 50 * time.Millisecond
	fronts := map[string]*fakeFront{}
	var addrs []string
	for range 3 {
		f := fs.newFront(t)
		fronts[f.srv.URL] = f
		addrs = append(addrs, f.srv.URL)
	}
	c := testClient(t, fs, "", func(cfg *Config) {
		cfg.Servers = addrs
		cfg.MaxBackoff = 20 * time.Millisecond
	})
	// heartbeatsVia waits for n more heartbeats answered through another
	// server than from, and returns that server.
	heartbeatsVia := func(what string, from *fakeFront, n int64) *fakeFront {
		t.Helper()
		base := map[*fakeFront]int64{}
		for _, f := range fronts {
			base[f] = f.heartbeats.Load()
		}
		var to *fakeFront
		testutil.WaitForErr(t, 5*time.Second, what, func() error {
			to = fronts[c.CurrentServer()]
			if to == from {
				return fmt.Errorf("still on %s", from.srv.URL)
			}
			if hb := to.heartbeats.Load() - base[to]; hb < n {
				return fmt.Errorf("%d heartbeats through %s", hb, to.srv.URL)
			}
			return nil
		})
		return to
	}
	registered := func(what string, want int) {
		t.Helper()
		fs.mu.Lock()
		reg := fs.registers
		fs.mu.Unlock()
		if reg != want || c.Registrations() != uint64(want) {
			t.Fatalf("%s: the servers saw %d registrations, the client counted %d; want %d", what, reg, c.Registrations(), want)
		}
	}
	registered("start", 1)

	// A 503 ("no cluster leader") from the current server: the client
	// moves to the next one and keeps heartbeating there.
	a := fronts[c.CurrentServer()]
	a.failWith.Store(http.StatusServiceUnavailable)
	heartbeatsVia("heartbeats after a 503", a, 3)
	registered("after a 503 failover", 1)

	// An election: every server answers 503 for a while.
	for _, f := range fronts {
		f.failWith.Store(http.StatusServiceUnavailable)
	}
	testutil.WaitForErr(t, 5*time.Second, "failed heartbeats", func() error {
		if _, failed := c.HeartbeatStats(); failed < 3 {
			return fmt.Errorf("%d failed", failed)
		}
		return nil
	})
	for _, f := range fronts {
		f.failWith.Store(0)
	}
	okBefore, _ := c.HeartbeatStats()
	testutil.WaitForErr(t, 5*time.Second, "heartbeats after the election", func() error {
		if ok, _ := c.HeartbeatStats(); ok < okBefore+3 {
			return fmt.Errorf("%d heartbeats answered since", ok-okBefore)
		}
		return nil
	})
	registered("after an election", 1)

	// The current server goes away (connection refused).
	b := fronts[c.CurrentServer()]
	b.srv.Listener.Close()         // no new connections,
	b.srv.CloseClientConnections() // and its blocking queries end
	b.srv.Close()
	heartbeatsVia("heartbeats after a server stopped", b, 3)
	registered("after a server stopped", 1)

	// The servers lost the node: 404, and it registers again.
	fs.mu.Lock()
	fs.forget404 = true
	fs.mu.Unlock()
	testutil.WaitForErr(t, 5*time.Second, "a registration after a 404", func() error {
		if n := c.Registrations(); n != 2 {
			return fmt.Errorf("%d registrations", n)
		}
		return nil
	})
}

// A stale read's 404 (a follower that has not applied the node's
// registration yet, right after it went through another server) is no
// proof the servers lost the node: the client heartbeats at once, and
// registers again only if that heartbeat answers 404 too.
func TestStaleNotFoundReadDoesNotReregister(t *testing.T) {
	fs := newFakeServer(t)
	f := fs.newFront(t)
	c := testClient(t, fs, "", func(cfg *Config) { cfg.Servers = []string{f.srv.URL} })
	hb := f.heartbeats.Load()
	f.staleReads.Store(3)
	// The watcher's next read (after the one blocking now) gets the 404s;
	// make it return.
	fs.mu.Lock()
	fs.bumpLocked()
	fs.mu.Unlock()
	testutil.WaitForErr(t, 5*time.Second, "the stale 404s read and a heartbeat brought forward", func() error {
		if n := f.staleReads.Load(); n > 0 {
			return fmt.Errorf("%d stale reads left", n)
		}
		// The TTL is 10 s: a heartbeat this soon was brought forward.
		if f.heartbeats.Load() <= hb {
			return fmt.Errorf("no heartbeat since")
		}
		return nil
	})
	j := job(state.JobTypeService, mock("x", nil))
	al := allocFor(c, j)
	fs.addAlloc(al)
	waitAllocStatus(t, fs, al.ID, state.AllocClientStatusRunning)
	if n := c.Registrations(); n != 1 {
		t.Fatalf("%d registrations after stale 404s, want 1", n)
	}
}

// A backoff's waits double up to max, each drawn between half its step
// and the whole step, so that clients failing together spread their
// retries.
func TestBackoffJitters(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 800 * time.Millisecond
	seen := map[time.Duration]bool{}
	for range 200 {
		b := backoff{min: lo, max: hi}
		step := lo
		for i := range 6 {
			d := b.next()
			if d < step/2 || d > step {
				t.Fatalf("wait %d: %v, want within [%v, %v]", i, d, step/2, step)
			}
			if i == 0 {
				seen[d] = true
			}
			step = min(step*2, hi)
		}
		b.reset()
		if d := b.next(); d < lo/2 || d > lo {
			t.Fatalf("after reset: %v, want within [%v, %v]", d, lo/2, lo)
		}
	}
	if len(seen) < 50 {
		t.Fatalf("200 first waits took %d distinct values: not spread", len(seen))
	}
}
