package agent

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

func TestTLSHTTPBlockErrors(t *testing.T) {
	for _, tc := range []struct {
		tls  TLSConfig
		want []string
	}{
		{TLSConfig{HTTP: true}, []string{"tls.ca_file: required with http = true", "tls.cert_file", "tls.key_file"}},
		{TLSConfig{VerifyHTTPSClient: true}, []string{"tls.verify_https_client: needs http = true"}},
	} {
		err := tc.tls.finish()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want it to name %q", tc.tls, err, w)
			}
		}
	}
	c := &Config{}
	if err := c.LoadFile(writeConfig(t, "tls {\n  http = true\n  verify_https_client = true\n}\n")); err != nil {
		t.Fatal(err)
	}
	if !c.TLS.HTTP || !c.TLS.VerifyHTTPSClient {
		t.Errorf("tls block keys not read: %+v", c.TLS)
	}
}

// tlsAPIClient is a Go client of the agent at addr over HTTPS, trusting
// caFile and presenting certFile/keyFile when they are set.
func tlsAPIClient(t *testing.T, addr, caFile, certFile, keyFile string) *api.Client {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: "https://" + addr, TLS: api.TLSConfig{
		CACert: caFile, ClientCert: certFile, ClientKey: keyFile, ServerName: raftServerName("global")}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// With tls { http = true, verify_https_client = true } the HTTP port
// speaks only HTTPS and serves only callers with a certificate of the CA;
// the agent's own client reaches its server over HTTPS with the agent's
// certificate and runs an allocation.
func TestAgentHTTPSVerifiesClients(t *testing.T) {
	caFile, certFile, keyFile := writeTestPKI(t, raftServerName("global"))
	a := startDevAgent(t, func(c *Config) {
		c.TLS = TLSConfig{HTTP: true, VerifyHTTPSClient: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	})
	if got := a.HTTPURL(); got != "https://"+a.HTTPAddr() {
		t.Errorf("HTTPURL %q", got)
	}
	ctx := ctxT(t, 30*time.Second)

	// Plain HTTP gets no API answer.
	if resp, err := http.Get("http://" + a.HTTPAddr() + "/v1/status/leader"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP answered 200 on an HTTPS port")
		}
	}
	// No client certificate: the handshake is refused.
	if _, err := tlsAPIClient(t, a.HTTPAddr(), caFile, "", "").Status().Leader(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("no client certificate: %v, want a certificate error", err)
	}
	// A certificate of another CA: refused too.
	_, otherCert, otherKey := writeTestPKI(t, raftServerName("global"))
	if _, err := tlsAPIClient(t, a.HTTPAddr(), caFile, otherCert, otherKey).Status().Leader(ctx); err == nil {
		t.Error("a certificate of another CA was accepted")
	}

	c := tlsAPIClient(t, a.HTTPAddr(), caFile, certFile, keyFile)
	if _, _, err := c.Jobs().Register(ctx, mockJob("web", 1), nil, nil); err != nil {
		t.Fatalf("register over HTTPS: %v", err)
	}
	waitRunning(t, c, "web", 1)
}

// Without verify_https_client the HTTPS port serves callers with no
// certificate (tokens still apply).
func TestAgentHTTPSWithoutClientVerification(t *testing.T) {
	caFile, certFile, keyFile := writeTestPKI(t, raftServerName("global"))
	a := startDevAgent(t, func(c *Config) {
		c.TLS = TLSConfig{HTTP: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	})
	if _, err := tlsAPIClient(t, a.HTTPAddr(), caFile, "", "").Status().Leader(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("no client certificate without verify_https_client: %v", err)
	}
}

// In a three-server cluster with HTTPS, raft TLS and verified clients, a
// write sent to a follower is forwarded to the leader over HTTPS (the
// follower presenting its certificate) and reads back on every server.
func TestClusterForwardsOverHTTPS(t *testing.T) {
	caFile, certFile, keyFile := writeTestPKI(t, raftServerName("global"))
	servers := newTestCluster(t, 3, func(c *Config) {
		c.TLS = TLSConfig{RPC: true, HTTP: true, VerifyHTTPSClient: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	})
	leader := leaderOf(t, servers, 10*time.Second)
	follower := followerOf(leader, servers)
	c := tlsAPIClient(t, follower.cfg.HTTPAddr(), caFile, certFile, keyFile)
	ctx := ctxT(t, 20*time.Second)
	ns := &state.Namespace{Name: "over-tls", Description: "via " + follower.cfg.Name}
	if follower.a.node.IsLeader() {
		t.Fatal("the follower became leader; the write would not be forwarded")
	}
	if _, err := c.Namespaces().Register(ctx, ns, nil); err != nil {
		t.Fatalf("write through follower %s: %v", follower.cfg.Name, err)
	}
	for _, s := range servers {
		got, _, err := tlsAPIClient(t, s.cfg.HTTPAddr(), caFile, certFile, keyFile).Namespaces().Info(ctx, "over-tls", nil)
		if err != nil || got.Description != ns.Description {
			t.Errorf("read on %s: %+v, %v", s.cfg.Name, got, err)
		}
	}
}

// A client-only agent given a bare host:port reaches a server with
// tls.http and verify_https_client over HTTPS, presenting its
// certificate, and runs an allocation there.
func TestClientOnlyAgentOverHTTPS(t *testing.T) {
	caFile, certFile, keyFile := writeTestPKI(t, raftServerName("global"))
	tc := TLSConfig{HTTP: true, VerifyHTTPSClient: true, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	srv := startSchedulerAgentWith(t, func(c *Config) { c.TLS = tc })
	ports := freePorts(t, 3)
	cfg := &Config{Name: "worker-tls", DataDir: t.TempDir(), LogLevel: "warn",
		Ports:  Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Client: ClientConfig{Enabled: true, Servers: []string{srv.HTTPAddr()}},
		TLS:    tc}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	if got := a.clientServers(); len(got) != 1 || got[0] != "https://"+srv.HTTPAddr() {
		t.Fatalf("client servers %v, want the bare address as https://", got)
	}
	c := tlsAPIClient(t, srv.HTTPAddr(), caFile, certFile, keyFile)
	if _, _, err := c.Jobs().Register(ctxT(t, 10*time.Second), mockJob("batch", 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := waitRunning(t, c, "batch", 1)
	if allocs[0].NodeID != a.Client().NodeID() {
		t.Fatalf("placed on %s, not the client-only agent's node %s", allocs[0].NodeID, a.Client().NodeID())
	}
	// The node's own port is HTTPS too, and the server reaches it so:
	// logs read through the server come from the node over HTTPS.
	if !strings.HasPrefix(a.HTTPURL(), "https://") {
		t.Errorf("client agent URL %s", a.HTTPURL())
	}
	if resp, err := http.Get("http://" + a.HTTPAddr() + "/v1/agent/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("the client agent answered plain HTTP: %d", resp.StatusCode)
		}
	}
	rc, err := c.AllocFS().Logs(ctxT(t, 10*time.Second), allocs[0].ID, &api.LogsOptions{Task: "t"}, nil)
	if err != nil {
		t.Fatalf("logs through the server over HTTPS: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(b), "hello from mock") {
		t.Errorf("logs through the server: %q", b)
	}
}
