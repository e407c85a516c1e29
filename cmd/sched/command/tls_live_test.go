package command

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/agent"
	"github.com/schedhq/sched/http/api"
)

// The quick start, end to end: `sched tls` makes a CA, a server and a CLI
// certificate; an agent serves HTTPS with the server certificate and
// verify_https_client; the CLI reaches it with the CLI certificate from
// flags or the environment, and without one it is refused.
func TestTLSQuickStartAgainstAgent(t *testing.T) {
	dir := t.TempDir()
	now := runOpts{now: time.Now}
	for _, args := range [][]string{
		{"tls", "ca", "create", "-dir", dir},
		{"tls", "cert", "create", "-server", "-dir", dir},
		{"tls", "cert", "create", "-cli", "-dir", dir},
	} {
		if r := runCLI(t, nil, now, args...); r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	ca := filepath.Join(dir, "sched-agent-ca.pem")
	var ports []int
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	cfg := &agent.Config{
		Name: "tls-cli-test", DataDir: t.TempDir(), BindAddr: "127.0.0.1", LogLevel: "warn",
		Ports:  agent.Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Server: agent.ServerConfig{Enabled: true, BootstrapExpect: 1},
		TLS: agent.TLSConfig{RPC: true, HTTP: true, VerifyHTTPSClient: true, CAFile: ca,
			CertFile: filepath.Join(dir, "global-server-sched.pem"), KeyFile: filepath.Join(dir, "global-server-sched-key.pem")},
	}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := a.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	addr := a.HTTPURL()
	if !strings.HasPrefix(addr, "https://") {
		t.Fatalf("agent URL %q", addr)
	}
	certFlags := []string{"-address", addr, "-ca-cert", ca,
		"-client-cert", filepath.Join(dir, "global-cli-sched.pem"), "-client-key", filepath.Join(dir, "global-cli-sched-key.pem")}

	// Flags: 127.0.0.1 is in the server certificate.
	r := runCLI(t, nil, now, append([]string{"namespace", "apply", "-description", "over TLS"}, append(certFlags, "team-a")...)...)
	if r.code != 0 {
		t.Fatalf("namespace apply over HTTPS: %+v", r)
	}
	// The environment, with the server name in place of the address's host.
	env := runOpts{now: time.Now, env: map[string]string{
		api.EnvAddress: addr, api.EnvCACert: ca, api.EnvTLSServerName: "server.global.sched",
		api.EnvClientCert: filepath.Join(dir, "global-cli-sched.pem"), api.EnvClientKey: filepath.Join(dir, "global-cli-sched-key.pem"),
	}}
	if r := runCLI(t, nil, env, "namespace", "list"); r.code != 0 || !strings.Contains(r.stdout, "team-a") || !strings.Contains(r.stdout, "over TLS") {
		t.Fatalf("namespace list with the environment: %+v", r)
	}
	// The management commands take the same flags.
	if r := runCLI(t, nil, now, append([]string{"org", "list"}, certFlags...)...); strings.Contains(r.stderr, "certificate") {
		t.Errorf("org list over HTTPS: a TLS error: %+v", r)
	}
	// Without the CLI certificate: refused in the handshake.
	if r := runCLI(t, nil, now, "namespace", "list", "-address", addr, "-ca-cert", ca); r.code != 1 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("no client certificate: %+v", r)
	}
	// Without the CA: the server is not trusted.
	if r := runCLI(t, nil, now, "namespace", "list", "-address", addr); r.code != 1 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("no CA: %+v", r)
	}
	// A wrong server name is refused.
	if r := runCLI(t, nil, now, append([]string{"namespace", "list", "-tls-server-name", "server.eu.sched"}, certFlags...)...); r.code != 1 || !strings.Contains(r.stderr, "server.eu.sched") {
		t.Errorf("wrong server name: %+v", r)
	}
}
