//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// watchedClient is a client-only agent whose first server (from its log)
// and counters (from its /v1/metrics) the test reads.
type watchedClient struct {
	t    *testing.T
	name string
	http int
	out  *testutil.SyncBuffer
}

// startWatchedClient runs a client-only agent named name against the
// cluster's servers, logging at info, and stops it with the test.
func startWatchedClient(t *testing.T, c *loopCluster, name string) *watchedClient {
	t.Helper()
	return startClientProcess(t, c, name, "info", "")
}

var registeredWith = regexp.MustCompile(`msg="node registered".* server=(\S+)`)

// firstServer is the server the client first registered with, "" before.
func (w *watchedClient) firstServer() string {
	m := registeredWith.FindStringSubmatch(w.out.String())
	if m == nil {
		return ""
	}
	return m[1]
}

// counter reads one of the client's counters from its /v1/metrics; a
// label selector (`{result="ok"}` style, without the node_id) narrows it.
func (w *watchedClient) counter(name, label string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/v1/metrics?format=prometheus", w.http), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		return strconv.ParseFloat(f[len(f)-1], 64)
	}
	return 0, fmt.Errorf("%s: no %s%s in its metrics", w.name, name, label)
}

// TestClusterClientsSpreadAndKeepTheirRegistrationOverALeaderKill: three
// servers and six client agents with the same server list. Each client
// shuffles its list, so they start spread over the servers (logged: a
// statistical figure, pinned in client's unit tests). The leader is
// SIGKILLed as soon as every client has registered: its clients move to
// another server, the others get 503s during the election, and the new
// leader and its followers may not have applied the last registrations
// yet (stale reads answer 404 for a moment). None of that makes a client
// register its node again, as the servers do know every node, and every
// node stays ready.
func TestClusterClientsSpreadAndKeepTheirRegistrationOverALeaderKill(t *testing.T) {
	const clients = 6
	c := newLoopCluster(t, 3, "")
	c.startAll()
	leader := c.leader(20 * time.Second)
	var agents []*watchedClient
	for i := range clients {
		agents = append(agents, startWatchedClient(t, c, fmt.Sprintf("c%d", i+1)))
	}
	spread := map[string]int{}
	testutil.WaitForErr(t, 60*time.Second, "every client registered", func() error {
		clear(spread)
		for _, a := range agents {
			s := a.firstServer()
			if s == "" {
				return fmt.Errorf("%s not registered yet", a.name)
			}
			spread[s]++
		}
		return nil
	})
	byName := map[string]int{}
	for _, s := range c.servers {
		byName[s.name] = spread["http://127.0.0.1:"+strconv.Itoa(s.http)]
	}
	t.Logf("clients per server at the start: %v (leader %s)", byName, leader.name)

	okAt := make([]float64, clients)
	for i, a := range agents {
		var err error
		if okAt[i], err = a.counter("sched_client_heartbeats_total", `result="ok"`); err != nil {
			t.Fatal(err)
		}
	}
	leader.kill()
	newLeader := c.leader(30 * time.Second)
	// Two answered heartbeats each (at half a TTL of 10 to 20 s) after
	// the kill: every client has found a live server with a leader.
	testutil.WaitForErr(t, 90*time.Second, "two answered heartbeats per client after the kill", func() error {
		for i, a := range agents {
			ok, err := a.counter("sched_client_heartbeats_total", `result="ok"`)
			if err != nil {
				return err
			}
			if ok < okAt[i]+2 {
				return fmt.Errorf("%s: %v answered heartbeats since the kill", a.name, ok-okAt[i])
			}
		}
		return nil
	})
	again := 0
	for _, a := range agents {
		n, err := a.counter("sched_client_registrations_total", "")
		if err != nil {
			t.Fatal(err)
		}
		if n > 1 {
			again++
		}
	}
	t.Logf("leader %s killed, %s leads: %d of %d clients registered their node again", leader.name, newLeader.name, again, clients)
	nodes, _, err := newLeader.client().Nodes().List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, n := range nodes {
		if n.Status == state.NodeStatusReady {
			ready++
		}
	}
	if again != 0 || ready != clients {
		t.Fatalf("%d of %d clients registered again after the leader kill (want none); %d of %d nodes ready", again, clients, ready, len(nodes))
	}
}
