//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

// startRebalancingClient runs a client-only agent like startWatchedClient,
// logging at debug (its moves between servers) and rebalancing every
// interval.
func startRebalancingClient(t *testing.T, c *loopCluster, name string, interval time.Duration) *watchedClient {
	t.Helper()
	return startClientProcess(t, c, name, "debug", fmt.Sprintf("server_rebalance_interval = %q", interval))
}

var rebalancedTo = regexp.MustCompile(`msg="servers rebalanced; moving to another server".* server=(\S+)`)

// TestClusterClientsSpreadAgainAfterARollingRestart: three servers, six
// client agents rebalancing every 10 s. The servers restart one after
// the other (SIGTERM, start on the same data dir): each one's clients fail
// over to the others, so without rebalancing the server restarted last
// would keep none. With it, the clients spread over all three again
// within a few intervals, and none registers its node again.
func TestClusterClientsSpreadAgainAfterARollingRestart(t *testing.T) {
	const clients, interval = 6, 10 * time.Second
	c := newLoopCluster(t, 3, "")
	c.startAll()
	c.leader(20 * time.Second)
	var agents []*watchedClient
	for i := range clients {
		agents = append(agents, startRebalancingClient(t, c, fmt.Sprintf("c%d", i+1), interval))
	}
	testutil.WaitForErr(t, 60*time.Second, "every client registered", func() error {
		for _, a := range agents {
			if a.firstServer() == "" {
				return fmt.Errorf("%s not registered yet", a.name)
			}
		}
		return nil
	})
	for _, s := range c.servers {
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		s.launch()
		s.waitReady(60 * time.Second)
		c.leader(30 * time.Second)
	}
	restarted := time.Now()
	// Only moves logged after the last restart count.
	from := make([]int, clients)
	for i, a := range agents {
		from[i] = len(a.out.String())
	}
	byAddr := map[string]string{}
	for _, s := range c.servers {
		byAddr[s.addr()] = s.name
	}
	spread := map[string]int{}
	testutil.WaitForErr(t, 4*time.Minute, "clients on every server", func() error {
		clear(spread)
		for i, a := range agents {
			m := rebalancedTo.FindAllStringSubmatch(a.out.String()[from[i]:], -1)
			if len(m) == 0 {
				return fmt.Errorf("%s has not moved since the restart", a.name)
			}
			spread[byAddr[m[len(m)-1][1]]]++
		}
		if len(spread) != len(c.servers) {
			return fmt.Errorf("clients per server %v", spread)
		}
		return nil
	})
	t.Logf("%v after the rolling restart: clients per server %v", time.Since(restarted).Round(time.Second), spread)
	for _, a := range agents {
		n, err := a.counter("sched_client_registrations_total", "")
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s registered %v times, want once", a.name, n)
		}
	}
}
