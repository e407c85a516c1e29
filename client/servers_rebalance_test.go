package client

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/http/api"
)

// After a rolling restart the clients of the server restarted last have
// all failed over to the others; rebalancing spreads the clients over the
// three again within one period (5 to 7.5 minutes), but does not send a
// client back to a server that failed its request within the last
// period. Without it, the restarted server keeps none.
func TestRebalanceSpreadsClientsAgain(t *testing.T) {
	addrs := []string{"http://10.0.0.1:4646", "http://10.0.0.2:4646", "http://10.0.0.3:4646"}
	const clients, every = 3000, 5 * time.Minute
	for _, rebalance := range []bool{true, false} {
		t.Run(fmt.Sprintf("rebalance=%v", rebalance), func(t *testing.T) {
			start := time.Unix(1_000_000, 0)
			now := start
			clock := func() time.Time { return now }
			restarting := ""
			ok := func(c *api.Client) error {
				if c.Address() == restarting {
					return errors.New("connection refused")
				}
				return nil
			}
			rnd := rand.New(rand.NewPCG(3, 4))
			all := make([]*servers, clients)
			for i := range all {
				s, err := newServers(addrs, "", http.DefaultClient, rnd)
				if err != nil {
					t.Fatal(err)
				}
				if rebalance {
					s.rebalanceEvery(every, clock, rnd, slog.New(slog.DiscardHandler))
				}
				all[i] = s
			}
			spread := func() map[string]int {
				out := map[string]int{}
				for _, s := range all {
					if err := s.call(t.Context(), ok); err != nil {
						t.Fatal(err)
					}
					out[s.current().Address()]++
				}
				return out
			}
			first := spread()
			var itsClients []*servers
			for _, s := range all {
				if s.current().Address() == addrs[0] {
					itsClients = append(itsClients, s)
				}
			}
			// The first server restarts 4 minutes in: each of its clients'
			// next request fails over.
			now = start.Add(4 * time.Minute)
			restarting = addrs[0]
			moved := spread()
			restarting = ""
			if moved[addrs[0]] != 0 {
				t.Fatalf("%d clients still on the restarted server", moved[addrs[0]])
			}
			// Every client's first reshuffle is due (5 to 7.5 minutes
			// from the start), the restart 3.6 minutes ago: the clients
			// that saw it fail put it last; the others may move to it.
			now = start.Add(7*time.Minute + 36*time.Second)
			early := spread()
			back := 0
			for _, s := range itsClients {
				if s.current().Address() == addrs[0] {
					back++
				}
			}
			// A period later, it is one of the three again.
			now = now.Add(every*3/2 + time.Second)
			later := spread()
			t.Logf("%d clients: at the start %v; the first server restarted: %v; 3.6 minutes after: %v; a period later: %v",
				clients, first, moved, early, later)
			if back != 0 {
				t.Errorf("%d of its %d clients went back to a server that failed their request 3.6 minutes ago", back, len(itsClients))
			}
			if !rebalance {
				if later[addrs[0]] != 0 {
					t.Errorf("without rebalancing %d clients went back to the restarted server", later[addrs[0]])
				}
				return
			}
			// 1,000 each expected; the standard deviation is about 26.
			for _, a := range addrs {
				if n := later[a]; n < 900 || n > 1100 {
					t.Errorf("%d of %d clients on %s a period after the restart, want about a third: %v", n, clients, a, later)
				}
			}
		})
	}
}

// A client moved by rebalancing keeps heartbeating through its new server
// and never registers again: half an hour with a one-minute period sends
// its heartbeats through all three servers, after one registration.
func TestRebalanceDoesNotReregister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &memServers{ttl: 10 * time.Second}
		c, stop := runHeartbeats(t, m, io.Discard, func(cfg *Config) { cfg.ServerRebalanceInterval = time.Minute })
		time.Sleep(30 * time.Minute)
		stop()
		m.mu.Lock()
		defer m.mu.Unlock()
		t.Logf("%d heartbeats by server: %v", len(m.beats), m.hosts)
		if len(m.registers) != 1 || c.Registrations() != 1 {
			t.Errorf("%d registrations (the client counted %d), want 1", len(m.registers), c.Registrations())
		}
		for _, h := range []string{"s1:4646", "s2:4646", "s3:4646"} {
			if n := m.hosts[h]; n == 0 {
				t.Errorf("%d of %d heartbeats through %s, want its share: %v", n, len(m.beats), h, m.hosts)
			}
		}
	})
}
