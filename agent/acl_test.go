package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"
	"github.com/schedhq/sched/state"
)

// newACLCluster is newTestCluster with `acl { enabled = true }`.
func newACLCluster(t *testing.T, n int) []*testServer {
	t.Helper()
	ports := freePorts(t, 3*n)
	var gossip []string
	for i := range n {
		gossip = append(gossip, "127.0.0.1:"+strconv.Itoa(ports[3*i+2]))
	}
	var servers []*testServer
	for i := range n {
		cfg := &Config{
			Name:     fmt.Sprintf("s%d", i+1),
			DataDir:  t.TempDir(),
			BindAddr: "127.0.0.1",
			LogLevel: "warn",
			Ports:    Ports{HTTP: ports[3*i], Raft: ports[3*i+1], Gossip: ports[3*i+2]},
			Server:   ServerConfig{Enabled: true, BootstrapExpect: n, RetryJoin: gossip, RetryInterval: 200 * time.Millisecond},
			ACL:      ACLConfig{Enabled: true},
		}
		if err := cfg.Finish(); err != nil {
			t.Fatal(err)
		}
		s := &testServer{t: t, cfg: cfg}
		s.start()
		servers = append(servers, s)
	}
	for _, s := range servers {
		if err := s.a.WaitForLeader(ctxT(t, 20*time.Second)); err != nil {
			t.Fatalf("%s: %v", s.cfg.Name, err)
		}
	}
	return servers
}

// as sends a request with a token and returns status and body.
func (s *testServer) as(secret, method, path string, body any) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url(path), r)
	if secret != "" {
		req.Header.Set(schedhttp.HeaderToken, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s on %s: %v", method, path, s.cfg.Name, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// expect sends a request and fails unless it answers code; it decodes a
// 200 answer into out.
func (s *testServer) expect(code int, secret, method, path string, body, out any) string {
	s.t.Helper()
	got, b := s.as(secret, method, path, body)
	if got != code {
		s.t.Fatalf("%s %s on %s: %d %s, want %d", method, path, s.cfg.Name, got, b, code)
	}
	if out != nil && got == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return string(b)
}

// The identity checks hold through a follower: writes are forwarded with
// their token and the leader decides; reads are checked where they land.
// Bootstrap goes through a follower too, and the reset file is read on the
// leader.
func TestACLThroughFollowerForwarding(t *testing.T) {
	servers := newACLCluster(t, 3)
	leader := leaderOf(t, servers, 20*time.Second)
	follower := followerOf(leader, servers)

	var boot state.ACLToken
	follower.expect(http.StatusOK, "", http.MethodPost, "/v1/acl/bootstrap", nil, &boot)
	if boot.SecretID == "" || boot.Type != state.ACLTokenTypeManagement {
		t.Fatalf("bootstrap through a follower = %+v", boot)
	}
	mgmt := boot.SecretID
	follower.expect(http.StatusOK, mgmt, http.MethodPut, "/v1/acl/policy/readers", map[string]string{"Rules": `namespace "*" { policy = "read" }`}, nil)
	follower.expect(http.StatusOK, mgmt, http.MethodPut, "/v1/acl/policy/writers", map[string]string{"Rules": `namespace "default" { policy = "write" }`}, nil)
	var reader, writer state.ACLToken
	follower.expect(http.StatusOK, mgmt, http.MethodPost, "/v1/acl/token", map[string]any{"Type": "client", "Policies": []string{"readers"}}, &reader)
	follower.expect(http.StatusOK, mgmt, http.MethodPost, "/v1/acl/token", map[string]any{"Type": "client", "Policies": []string{"writers"}}, &writer)

	job := map[string]any{"Job": map[string]any{"ID": "web", "Type": "batch", "TaskGroups": []any{map[string]any{
		"Name": "g", "Count": 1, "Tasks": []any{map[string]any{"Name": "t", "Driver": "raw_exec", "Config": map[string]any{"command": "true"}}}}}}}
	// Forwarded writes: the leader denies the reader, lets the writer in.
	follower.expect(http.StatusForbidden, reader.SecretID, http.MethodPost, "/v1/jobs", job, nil)
	follower.expect(http.StatusForbidden, "", http.MethodPost, "/v1/jobs", job, nil)
	follower.expect(http.StatusForbidden, "0b6c9a44-2c1c-4e55-9d2a-6a1f3ad0c7e1", http.MethodPost, "/v1/jobs", job, nil)
	follower.expect(http.StatusOK, writer.SecretID, http.MethodPost, "/v1/jobs", job, nil)
	// Reads, consistent by default, on every server.
	for _, s := range servers {
		s.expect(http.StatusOK, reader.SecretID, http.MethodGet, "/v1/job/web", nil, nil)
		s.expect(http.StatusForbidden, "", http.MethodGet, "/v1/job/web", nil, nil)
		s.expect(http.StatusForbidden, reader.SecretID, http.MethodDelete, "/v1/job/web", nil, nil)
	}

	// Bootstrap once; the reset file on the leader re-arms it.
	msg := follower.expect(http.StatusBadRequest, "", http.MethodPost, "/v1/acl/bootstrap", nil, nil)
	_, after, ok := strings.Cut(msg, "reset index: ")
	if !ok {
		t.Fatalf("second bootstrap: %q names no reset index", msg)
	}
	index := strings.TrimSuffix(strings.TrimSpace(after), ")")
	reset := filepath.Join(leader.cfg.DataDir, "server", schedhttp.BootstrapResetFile)
	if err := os.WriteFile(reset, []byte(index+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var again state.ACLToken
	follower.expect(http.StatusOK, "", http.MethodPost, "/v1/acl/bootstrap", nil, &again)
	if again.SecretID == "" || again.SecretID == mgmt {
		t.Errorf("re-bootstrap = %+v", again)
	}
	if _, err := os.Stat(reset); !os.IsNotExist(err) {
		t.Errorf("reset file left on the leader: %v", err)
	}
	follower.expect(http.StatusBadRequest, "", http.MethodPost, "/v1/acl/bootstrap", nil, nil)
}

// A server without `acl { enabled = true }` serves /v1 to anyone, but
// still guards the token endpoints.
func TestACLDisabledAgent(t *testing.T) {
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
	s.expect(http.StatusOK, "", http.MethodGet, "/v1/jobs", nil, nil)
	s.expect(http.StatusForbidden, "", http.MethodGet, "/v1/acl/tokens", nil, nil)
	var boot state.ACLToken
	s.expect(http.StatusOK, "", http.MethodPost, "/v1/acl/bootstrap", nil, &boot)
	s.expect(http.StatusOK, boot.SecretID, http.MethodGet, "/v1/acl/tokens", nil, nil)
}

func TestACLBannerSaysHowToGetAToken(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	for _, enabled := range []bool{false, true} {
		var buf bytes.Buffer
		cfg := &Config{DevMode: true, ACL: ACLConfig{Enabled: enabled}}
		printBanner(&buf, cfg, &Agent{lis: lis})
		want := "not enforced on /v1"
		if enabled {
			want = "ACLs: enforced on /v1"
		}
		if out := buf.String(); !strings.Contains(out, "sched acl bootstrap") || !strings.Contains(out, want) {
			t.Errorf("banner (acl %v) = %q", enabled, out)
		}
	}
}
