package agent

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
)

// startClientOnly runs a client-only agent against srvURL.
func startClientOnly(t *testing.T, name, srvURL string, edit func(*Config)) *Agent {
	t.Helper()
	ports := freePorts(t, 3)
	cfg := &Config{Name: name, DataDir: t.TempDir(), LogLevel: "warn",
		Ports:  Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Client: ClientConfig{Enabled: true, Servers: []string{srvURL}}}
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	return a
}

// getAs is a GET with a token (none when empty) and extra headers.
func getAs(t *testing.T, hc *http.Client, url, token string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Sched-Token", token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A client agent's own port enforces the cluster's ACLs: an allocation's
// logs read straight from the node need a token that may read them (the
// node sends the request through its server, which checks the token and
// sends it back signed), and a forged server signature is refused.
func TestClientAgentPortEnforcesACLs(t *testing.T) {
	srv := startSchedulerAgentWith(t, func(c *Config) { c.ACL.Enabled = true })
	ctx := ctxT(t, 30*time.Second)
	anon := apiClient(t, srv.HTTPAddr())
	boot, _, err := anon.ACLTokens().Bootstrap(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	worker := startClientOnly(t, "worker-acl", "http://"+srv.HTTPAddr(), func(c *Config) { c.Client.IntroToken = boot.SecretID })
	c, err := api.NewClient(api.Config{Address: "http://" + srv.HTTPAddr(), Token: boot.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(ctx, mockJob("batch", 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := waitRunning(t, c, "batch", 1)
	if allocs[0].NodeID != worker.Client().NodeID() {
		t.Fatalf("placed on %s, not the client-only agent's node", allocs[0].NodeID)
	}
	logs := "http://" + worker.HTTPAddr() + "/v1/client/fs/logs/" + allocs[0].ID + "?task=t&plain=true"
	hc := &http.Client{Timeout: 10 * time.Second}
	if code, body := getAs(t, hc, logs, "", nil); code != http.StatusForbidden {
		t.Errorf("anonymous logs from the node: %d %q", code, body)
	}
	if code, body := getAs(t, hc, logs, boot.SecretID, nil); code != 200 || !strings.Contains(body, "hello from mock") {
		t.Errorf("logs from the node with a management token: %d %q", code, body)
	}
	for _, forged := range []string{"1", "v1:1:00", "v1:" + "9999999999" + ":abcd"} {
		if code, body := getAs(t, hc, logs, "", map[string]string{"X-Sched-Client-Proxied": forged}); code != http.StatusForbidden {
			t.Errorf("forged signature %q: %d %q", forged, code, body)
		}
	}
	// The node's own secret, shown as a token, reads nothing either.
	if code, body := getAs(t, hc, logs, worker.Client().SecretID(), nil); code != http.StatusForbidden {
		t.Errorf("logs with the node's secret: %d %q", code, body)
	}
	if code, _ := getAs(t, hc, "http://"+worker.HTTPAddr()+"/v1/agent/health", "", nil); code != 200 {
		t.Errorf("health: %d", code)
	}
	// The gossip keyring needs agent:write: anonymous callers see no
	// keys; this server's gossip is not encrypted, which is a 400.
	keyring := "http://" + srv.HTTPAddr() + "/v1/agent/keyring/list"
	if code, body := getAs(t, hc, keyring, "", nil); code != http.StatusForbidden {
		t.Errorf("anonymous keyring list: %d %q", code, body)
	}
	if code, body := getAs(t, hc, keyring, boot.SecretID, nil); code != http.StatusBadRequest || !strings.Contains(body, "encryption is off") {
		t.Errorf("keyring list without gossip encryption: %d %q", code, body)
	}
}
