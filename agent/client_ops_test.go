package agent

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// monitorLines opens GET url with token and collects its lines until the
// test ends; the status is returned at once.
type monitorLines struct {
	mu    sync.Mutex
	lines []string
}

func (m *monitorLines) text() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.lines, "\n")
}

func openMonitor(t *testing.T, url, token string) (int, *monitorLines) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("X-Sched-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	m := &monitorLines{}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return resp.StatusCode, m
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, sc.Text())
			m.mu.Unlock()
		}
	}()
	return resp.StatusCode, m
}

// A client-only agent serves its own metrics (open, as Nomad's: its
// runtime, its allocations, its registrations and heartbeats; none of a
// server's) and its own log lines (agent:read, checked by its server: an
// unsigned monitor goes there with node_id and comes back signed). A
// server follows the client's lines with node_id too.
func TestClientAgentOwnMetricsAndMonitor(t *testing.T) {
	srv := startSchedulerAgentWith(t, func(c *Config) { c.ACL.Enabled = true })
	ctx := ctxT(t, 30*time.Second)
	anon := apiClient(t, srv.HTTPAddr())
	boot, _, err := anon.ACLTokens().Bootstrap(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	worker := startClientOnly(t, "worker-ops", "http://"+srv.HTTPAddr(), func(c *Config) { c.Client.IntroToken = boot.SecretID })
	if err := worker.Client().WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	mgmt, err := api.NewClient(api.Config{Address: "http://" + srv.HTTPAddr(), Token: boot.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := mgmt.ACLPolicies().Upsert(ctx, &state.ACLPolicy{Name: "nodes", Rules: `node { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	nodeReader, _, err := mgmt.ACLTokens().Create(ctx, &state.ACLToken{Name: "nodes", Type: "client", Policies: []string{"nodes"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := mgmt.Jobs().Register(ctx, mockJob("web", 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, mgmt, "web", 1)
	node := worker.Client().NodeID()
	hc := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + worker.HTTPAddr()

	t.Run("metrics", func(t *testing.T) {
		// The client's view of its allocation may lag the servers' by
		// one status batch.
		var body string
		testutil.WaitFor(t, 10*time.Second, "the client's own metrics show its running allocation", func() bool {
			var code int
			code, body = getAs(t, hc, base+"/v1/metrics?format=prometheus", "", nil)
			return code == 200 && strings.Contains(body, `sched_client_allocs_running{node_id="`+node+`"} 1`)
		})
		for _, want := range []string{
			`sched_client_registrations_total{node_id="` + node + `"} 1`,
			`sched_client_heartbeats_total{node_id="` + node + `",result="failed"} 0`,
			`sched_client_allocs{client_status="running",node_id="` + node + `"} 1`,
			"go_goroutines", "process_cpu_seconds_total",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("client metrics lack %q:\n%s", want, body)
			}
		}
		for _, server := range []string{"sched_raft_", "sched_broker_", "sched_state_table_objects", "sched_http_"} {
			if strings.Contains(body, server) {
				t.Errorf("client metrics carry the server's %s series: proxied?", server)
			}
		}
		code, js := getAs(t, hc, base+"/v1/metrics", "", nil)
		if code != 200 || !strings.Contains(js, `"Name":"sched_client_allocs_running"`) {
			t.Errorf("JSON metrics: %d %.300s", code, js)
		}
		if code, body := getAs(t, hc, base+"/v1/metrics?format=xml", "", nil); code != http.StatusBadRequest || !strings.Contains(body, "format") {
			t.Errorf("bad format: %d %q", code, body)
		}
	})

	t.Run("monitor access", func(t *testing.T) {
		for name, token := range map[string]string{"anonymous": "", "without agent:read": nodeReader.SecretID, "node secret": worker.Client().SecretID()} {
			if code, _ := openMonitor(t, base+"/v1/agent/monitor", token); code != http.StatusForbidden {
				t.Errorf("%s monitor on the client agent: %d, want 403", name, code)
			}
		}
		if code, _ := openMonitor(t, base+"/v1/agent/monitor", boot.SecretID+"x"); code != http.StatusForbidden {
			t.Errorf("unknown token: %d", code)
		}
		if code, body := getAs(t, hc, base+"/v1/agent/monitor?log_level=loud", boot.SecretID, nil); code != http.StatusBadRequest || !strings.Contains(body, "log_level") {
			t.Errorf("bad level: %d %q", code, body)
		}
		for _, forged := range []string{"v1:1:00", "v1:9999999999:abcd"} {
			if code, body := getAs(t, hc, base+"/v1/agent/monitor?node_id="+node, "", map[string]string{"X-Sched-Client-Proxied": forged}); code != http.StatusForbidden {
				t.Errorf("forged signature %q: %d %q", forged, code, body)
			}
		}
		if code, _ := openMonitor(t, "http://"+srv.HTTPAddr()+"/v1/agent/monitor?node_id="+node, nodeReader.SecretID); code != http.StatusForbidden {
			t.Errorf("server monitor of the node without agent:read: %d", code)
		}
		if code, body := getAs(t, hc, "http://"+srv.HTTPAddr()+"/v1/agent/monitor?node_id=nope", boot.SecretID, nil); code != http.StatusNotFound {
			t.Errorf("unknown node: %d %q", code, body)
		}
	})

	t.Run("monitor lines", func(t *testing.T) {
		code, direct := openMonitor(t, base+"/v1/agent/monitor?log_level=debug", boot.SecretID)
		if code != 200 {
			t.Fatalf("monitor on the client agent with a management token: %d", code)
		}
		code, viaServer := openMonitor(t, "http://"+srv.HTTPAddr()+"/v1/agent/monitor?node_id="+node, boot.SecretID)
		if code != 200 {
			t.Fatalf("monitor of the node through the server: %d", code)
		}
		srv.log.Info("server-only-marker")
		testutil.WaitFor(t, 10*time.Second, "the client agent's lines reach both monitors", func() bool {
			worker.log.Info("client-marker")
			return strings.Contains(direct.text(), "client-marker") && strings.Contains(viaServer.text(), "client-marker")
		})
		if strings.Contains(direct.text(), "server-only-marker") || strings.Contains(viaServer.text(), "server-only-marker") {
			t.Error("the server's lines reached a monitor of the client agent")
		}
	})
}

// A server follows another server's lines with server_id (its name or
// Raft ID), its own when server_id names it; an unknown server is a 404,
// server_id with node_id a 400.
func TestMonitorOtherServer(t *testing.T) {
	servers := newTestCluster(t, 3)
	leaderOf(t, servers, 10*time.Second)
	s1, s2 := servers[0], servers[1]
	code, other := openMonitor(t, s1.url("/v1/agent/monitor?server_id=s2"), "")
	if code != 200 {
		t.Fatalf("monitor of s2 through s1: %d", code)
	}
	code, self := openMonitor(t, s1.url("/v1/agent/monitor?server_id=s1.global"), "")
	if code != 200 {
		t.Fatalf("monitor of s1 by its own name: %d", code)
	}
	testutil.WaitFor(t, 10*time.Second, "each server's lines reach the monitor that names it", func() bool {
		s2.a.log.Info("s2-marker")
		s1.a.log.Info("s1-marker")
		return strings.Contains(other.text(), "s2-marker") && strings.Contains(self.text(), "s1-marker")
	})
	if strings.Contains(other.text(), "s1-marker") || strings.Contains(self.text(), "s2-marker") {
		t.Errorf("lines of the wrong server:\nvia s2: %s\ns1: %s", other.text(), self.text())
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	if code, body := getAs(t, hc, s1.url("/v1/agent/monitor?server_id=s9"), "", nil); code != http.StatusNotFound || !strings.Contains(body, "s9") {
		t.Errorf("unknown server: %d %q", code, body)
	}
	if code, body := getAs(t, hc, s1.url("/v1/agent/monitor?server_id=s2&node_id=n"), "", nil); code != http.StatusBadRequest || !strings.Contains(body, "node_id and server_id") {
		t.Errorf("both: %d %q", code, body)
	}
}
