package agent

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// findingIDs are the IDs of fs, in order.
func findingIDs(fs []state.SecurityFinding) []string {
	ids := []string{}
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	return ids
}

func TestSecurityFindings(t *testing.T) {
	const key = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=" // 32 bytes
	server := func(c *Config) { c.Server.Enabled = true }
	hardened := func(c *Config) {
		c.Server.Enabled = true
		c.Server.Encrypt = key
		c.ACL.Enabled = true
		c.TLS = TLSConfig{RPC: true, HTTP: true, VerifyHTTPSClient: true, CAFile: "ca.pem", CertFile: "s.pem", KeyFile: "s-key.pem"}
	}
	clientOnly := func(c *Config) {
		c.Client.Enabled = true
		c.Client.Servers = []string{"10.0.0.1:4646"}
	}
	for _, tc := range []struct {
		name string
		mod  []func(*Config)
		dev  bool
		host hostFacts
		want []string
	}{
		{name: "production server, nothing set", mod: []func(*Config){server},
			want: []string{"raft-tls", "gossip-key", "acl-disabled", "http-tls"}},
		{name: "hardened server", mod: []func(*Config){hardened}, want: []string{}},
		{name: "gossip key from the saved keyring", mod: []func(*Config){hardened, func(c *Config) { c.Server.Encrypt = "" }},
			host: hostFacts{SavedKeyring: true}, want: []string{}},
		{name: "no gossip key, keyring or config", mod: []func(*Config){hardened, func(c *Config) { c.Server.Encrypt = "" }},
			want: []string{"gossip-key"}},
		{name: "raft TLS only", mod: []func(*Config){hardened, func(c *Config) { c.TLS.HTTP, c.TLS.VerifyHTTPSClient = false, false }},
			want: []string{"http-tls"}},
		{name: "ACLs off", mod: []func(*Config){hardened, func(c *Config) { c.ACL.Enabled = false }},
			want: []string{"acl-disabled"}},
		{name: "HTTPS without client certificates", mod: []func(*Config){hardened, func(c *Config) { c.TLS.VerifyHTTPSClient = false }},
			want: []string{"verify-https-client"}},
		{name: "verify_server_hostname off", mod: []func(*Config){hardened, func(c *Config) { no := false; c.TLS.VerifyServerHostname = &no }},
			want: []string{"verify-server-hostname"}},
		{name: "enable_debug with ACLs on", mod: []func(*Config){hardened, func(c *Config) { c.EnableDebug = true }},
			want: []string{}},
		{name: "enable_debug with ACLs off", mod: []func(*Config){hardened, func(c *Config) { c.EnableDebug, c.ACL.Enabled = true, false }},
			want: []string{"acl-disabled", "enable-debug"}},
		{name: "dev", dev: true,
			want: []string{"raft-tls", "acl-disabled", "http-tls", "raw-exec", "enable-debug"}},
		{name: "dev as root", dev: true, host: hostFacts{Root: true},
			want: []string{"raft-tls", "acl-disabled", "raw-exec-root", "http-tls", "raw-exec", "shared-workload-user", "enable-debug"}},
		{name: "raw_exec on a root client without workload users", mod: []func(*Config){clientOnly, func(c *Config) {
			c.Client.RawExec.Enabled = true
			c.Client.Users.Dynamic, c.Client.Users.dynamicSet = false, true
		}}, host: hostFacts{Root: true}, want: []string{"http-tls", "raw-exec", "shared-workload-user"}},
		{name: "client-only, raw_exec off", mod: []func(*Config){clientOnly}, host: hostFacts{Root: true},
			want: []string{"http-tls"}},
		{name: "client-only with TLS", mod: []func(*Config){clientOnly, func(c *Config) {
			c.TLS = TLSConfig{HTTP: true, CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "c-key.pem"}
		}}, want: []string{}},
		{name: "raw_exec on a root client, default policy", mod: []func(*Config){clientOnly, func(c *Config) { c.Client.RawExec.Enabled = true }},
			host: hostFacts{Root: true}, want: []string{"http-tls", "raw-exec"}},
		{name: "raw_exec on a root client that may run root", mod: []func(*Config){clientOnly, func(c *Config) {
			c.Client.RawExec = RawExecConfig{Enabled: true, DefaultUser: "nobody", DeniedUsers: []string{}, deniedSet: true}
		}}, host: hostFacts{Root: true}, want: []string{"raw-exec-root", "http-tls", "raw-exec"}},
		{name: "raw_exec on a client that is not root", mod: []func(*Config){clientOnly, func(c *Config) {
			c.Client.RawExec = RawExecConfig{Enabled: true, DeniedUsers: []string{}, deniedSet: true}
		}}, want: []string{"http-tls", "raw-exec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{DataDir: "/var/lib/sched"}
			if tc.dev {
				cfg = &Config{}
				cfg.applyDev()
			}
			for _, m := range tc.mod {
				m(cfg)
			}
			if err := cfg.Finish(); err != nil {
				t.Fatal(err)
			}
			got := securityFindings(cfg, tc.host)
			if ids := findingIDs(got); !slices.Equal(ids, tc.want) {
				t.Errorf("findings %v, want %v", ids, tc.want)
			}
			for _, f := range got {
				if f.Message == "" || f.Fix == "" || severityRank(f.Severity) > 2 || (f.Severity != state.SeverityLow && severityRank(f.Severity) == 2) {
					t.Errorf("finding %+v: empty text or unknown severity", f)
				}
			}
			if r := securityReport(cfg, tc.host); r.DevMode != tc.dev || r.Findings == nil {
				t.Errorf("report %+v", r)
			}
		})
	}
}

// The gossip finding says a stranger becomes a voter only where raft TLS
// does not vet it.
func TestSecurityFindingsGossipMessage(t *testing.T) {
	cfg := &Config{DataDir: "/d", Server: ServerConfig{Enabled: true}}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	msg := func() string {
		for _, f := range securityFindings(cfg, hostFacts{}) {
			if f.ID == "gossip-key" {
				return f.Message
			}
		}
		t.Fatal("no gossip-key finding")
		return ""
	}
	if !strings.Contains(msg(), "voter") {
		t.Errorf("without raft TLS: %q", msg())
	}
	cfg.TLS = TLSConfig{RPC: true}
	if strings.Contains(msg(), "voter") {
		t.Errorf("with raft TLS: %q", msg())
	}
}

func TestCurrentHostFactsReadsTheSavedKeyring(t *testing.T) {
	dir := t.TempDir()
	cfg := &Config{DataDir: dir}
	if currentHostFacts(cfg).SavedKeyring {
		t.Error("a saved keyring in an empty data dir")
	}
	a := &Agent{cfg: cfg}
	if err := os.MkdirAll(filepath.Dir(a.keyringPath()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.keyringPath(), []byte(`{"primary":"k","keys":["k"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if !currentHostFacts(cfg).SavedKeyring {
		t.Error("the saved keyring is not seen")
	}
}

// A production server starts with its open doors, logs one warning per
// door with its fix, and reports them in /v1/agent/self.
func TestInsecureServerWarnsAndReports(t *testing.T) {
	ports := freePorts(t, 3)
	cfg := &Config{Name: "s1", DataDir: t.TempDir(), BindAddr: "127.0.0.1", LogLevel: "warn",
		Ports:  Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Server: ServerConfig{Enabled: true, BootstrapExpect: 1}}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	s := &testServer{t: t, cfg: cfg}
	s.start()
	if err := s.a.WaitForLeader(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	want := []string{"raft-tls", "gossip-key", "acl-disabled", "http-tls"}
	logs := s.log.String()
	for _, id := range want {
		var line string
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "finding="+id+" ") {
				line = l
			}
		}
		if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "open door") || !strings.Contains(line, "fix=") {
			t.Errorf("no warning line for %s in:\n%s", id, logs)
		}
	}
	if n := strings.Count(logs, "open door"); n != len(want) {
		t.Errorf("%d open-door lines, want %d:\n%s", n, len(want), logs)
	}

	var self state.AgentSelf
	s.mustJSON(http.MethodGet, "/v1/agent/self", nil, &self)
	if self.Security == nil || self.Security.DevMode {
		t.Fatalf("security %+v", self.Security)
	}
	if ids := findingIDs(self.Security.Findings); !slices.Equal(ids, want) {
		t.Errorf("findings %v, want %v", ids, want)
	}
	if self.Member == nil || self.Config["Name"] != "s1" {
		t.Errorf("the existing fields changed: %+v", self)
	}
}

// -dev logs no warning but still reports its findings.
func TestDevAgentReportsWithoutWarning(t *testing.T) {
	var logs lockedBuffer
	ports := freePorts(t, 3)
	cfg := &Config{Name: "dev", LogLevel: "warn", Ports: Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]}}
	cfg.applyDev()
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	if err := a.WaitForLeader(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	self, err := apiClient(t, a.HTTPAddr()).Agent().Self(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if self.Security == nil || !self.Security.DevMode || !slices.Contains(findingIDs(self.Security.Findings), "raft-tls") {
		t.Errorf("security %+v", self.Security)
	}
	if strings.Contains(logs.String(), "open door") {
		t.Errorf("-dev logged open doors:\n%s", logs.String())
	}
}

// A client-only agent reports its own findings on its own port, to a
// caller its server grants agent:read (the agent asks the server, with
// the caller's token), and to no one else.
func TestClientOnlyAgentReportsFindings(t *testing.T) {
	// The server: its /v1/agent/self answers the token "reader" only.
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/agent/self" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		if r.Header.Get("X-Sched-Token") != "reader" {
			http.Error(w, "Permission denied", http.StatusForbidden)
			return
		}
		w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	ports := freePorts(t, 1)
	cfg := &Config{Name: "c1", DataDir: t.TempDir(), BindAddr: "127.0.0.1", LogLevel: "warn",
		Ports:  Ports{HTTP: ports[0]},
		Client: ClientConfig{Enabled: true, Servers: []string{srv.Listener.Addr().String()}}}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	a, err := New(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() { a.Shutdown() })
	get := func(token string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, a.HTTPURL()+"/v1/agent/self", nil)
		if token != "" {
			req.Header.Set("X-Sched-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	for _, token := range []string{"", "someone-else"} {
		if code, body := get(token); code != http.StatusForbidden || strings.Contains(string(body), "http-tls") {
			t.Errorf("token %q: %d %s, want the server's 403 and no findings", token, code, body)
		}
	}
	code, body := get("reader")
	if code != http.StatusOK {
		t.Fatalf("reader: %d %s", code, body)
	}
	if asked.Load() != 3 {
		t.Errorf("the server was asked %d times, want 3 (once per request)", asked.Load())
	}
	var self state.AgentSelf
	if err := json.Unmarshal(body, &self); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if self.Security == nil || !slices.Contains(findingIDs(self.Security.Findings), "http-tls") ||
		slices.Contains(findingIDs(self.Security.Findings), "raft-tls") {
		t.Errorf("client-only self: %s", body)
	}
	if !strings.Contains(logs.String(), "finding=http-tls") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
}
