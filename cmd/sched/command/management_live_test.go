package command

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/agent"
	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/http/api/mgmt"
)

// startMgmtAgent runs a one-server agent on free loopback ports, waits
// until it leads, and returns its address and a management token's secret
// (a site administrator of the management API).
func startMgmtAgent(t *testing.T) (addr, secret string) {
	t.Helper()
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
		Name:     "mgmt-cli-test",
		DataDir:  t.TempDir(),
		BindAddr: "127.0.0.1",
		LogLevel: "warn",
		Ports:    agent.Ports{HTTP: ports[0], Raft: ports[1], Gossip: ports[2]},
		Server:   agent.ServerConfig{Enabled: true, BootstrapExpect: 1},
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
	addr = "http://" + a.HTTPAddr()
	client, err := api.NewClient(api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := client.ACLTokens().Bootstrap(ctx, "", nil)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return addr, tok.SecretID
}

// TestMgmtCLIAgainstAgent drives the management commands against a real
// server: the client's wire format and the server's must agree.
func TestMgmtCLIAgainstAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	addr, secret := startMgmtAgent(t)
	env := map[string]string{api.EnvAddress: addr, api.EnvToken: secret, envMgmtOrg: "acme"}
	sched := func(args ...string) result {
		t.Helper()
		return runCLI(t, nil, runOpts{env: env}, args...)
	}
	ok := func(r result, stdoutHas string) {
		t.Helper()
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, stdoutHas) {
			t.Fatalf("want success with %q, got %+v", stdoutHas, r)
		}
	}
	failed := func(r result, stderrHas string) {
		t.Helper()
		if r.code != 1 || !strings.Contains(r.stderr, stderrHas) {
			t.Fatalf("want failure with %q, got %+v", stderrHas, r)
		}
		t.Logf("as expected: %s", strings.TrimSpace(r.stderr))
	}

	ok(sched("org", "create", "-email", "ops@acme.test", "acme"), `Successfully created organization "acme"!`)
	ok(sched("org", "list"), "acme")
	ok(sched("project", "create", "-description", "Web tier", "-auto-destroy-activity-duration", "14d", "web"), `Successfully created project "web" with ID "prj-`)
	failed(sched("project", "create", "ab"), "(at /data/attributes/name)")
	failed(sched("project", "create", "-auto-destroy-activity-duration", "0d", "database"), "(at /data/attributes/auto-destroy-activity-duration)")

	r := sched("project", "list", "-json", "-sort", "-name")
	ok(r, `"name": "web"`)
	var projects []*mgmt.Project
	if err := json.Unmarshal([]byte(r.stdout), &projects); err != nil {
		t.Fatalf("project list -json: %v\n%s", err, r.stdout)
	}
	if len(projects) != 2 || projects[0].Name != "web" || projects[1].Name != "Default Project" || projects[0].Organization != "acme" {
		t.Fatalf("projects = %+v", projects)
	}
	ok(sched("project", "list", "-page-size", "1"), "Page 1 of 2 (2 total)")

	// A workspace, made with the client, moved into "web" by name.
	m, err := api.NewClient(api.Config{Address: addr, Token: secret})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := mgmt.New(m).Workspaces().Create(t.Context(), "acme", mgmt.WorkspaceCreateOptions{Name: "net"})
	if err != nil {
		t.Fatalf("workspace create: %v", err)
	}
	ok(sched("project", "move", "web", "net"), "Successfully moved 1 workspace(s)")
	moved, err := mgmt.New(m).Workspaces().ReadByID(t.Context(), ws.ID)
	if err != nil || moved.ProjectID != projects[0].ID {
		t.Fatalf("after the move the workspace is in %q (%v), want %q", moved.ProjectID, err, projects[0].ID)
	}
	failed(sched("project", "move", "web", "ws-doesnotexist"), "Error moving workspaces: 403")
	failed(sched("project", "delete", "web"), "Error deleting project: ")

	ok(sched("admin", "org", "update", "-workspace-limit", "5", "-apply-timeout", "12h", "acme"), `Successfully updated organization "acme"!`)
	r = sched("admin", "org", "show", "acme")
	ok(r, "Workspace Limit         = 5")
	ok(r, "Apply Timeout           = 12h")
	ok(sched("admin", "org", "list", "-q", "acme"), "ops@acme.test")
	ok(sched("admin", "workspace", "list"), ws.ID)
	ok(sched("admin", "workspace", "show", ws.ID), "Organization = acme")

	for _, fam := range []string{"tool-version", "policy-version"} {
		ok(sched("admin", fam, "create", "-url", "https://releases.test/1.9.0.zip", "-sha", strings.Repeat("a", 64), "1.9.0"), `"1.9.0" with ID "tool-`)
		failed(sched("admin", fam, "create", "-url", "u", "-sha", "s", "one"), "(at /data/attributes/version)")
		ok(sched("admin", fam, "update", "-deprecated", "-deprecated-reason", "old", "1.9.0"), "Successfully updated")
		ok(sched("admin", fam, "show", "1.9.0"), "Deprecated Reason = old")
		ok(sched("admin", fam, "list", "-version", "1.9.0"), "1.9.0")
		ok(sched("admin", fam, "delete", "1.9.0"), `Successfully deleted`)
		ok(sched("admin", fam, "list"), "No ")
	}

	ok(sched("admin", "workspace", "delete", ws.ID), "Successfully deleted workspace")
	ok(sched("project", "delete", "web"), "Successfully deleted project")
	ok(sched("admin", "org", "delete", "acme"), `Successfully deleted organization "acme"!`)
	failed(sched("admin", "org", "show", "acme"), "Error retrieving organization: 404")

	// Without a token every management request is a 401.
	delete(env, api.EnvToken)
	failed(sched("org", "list"), "Error retrieving organizations: 401")
}

// TestACLBootstrapAdminOwnsOrganizations: against a real server, `sched
// acl bootstrap -admin-name` makes a token whose organizations have that
// administrator as owner (`sched admin org show` lists them).
func TestACLBootstrapAdminOwnsOrganizations(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	cfg := &agent.Config{Name: "bootstrap-admin-test", DataDir: t.TempDir(), BindAddr: "127.0.0.1", LogLevel: "warn",
		Server: agent.ServerConfig{Enabled: true, BootstrapExpect: 1}}
	for _, p := range []*int{&cfg.Ports.HTTP, &cfg.Ports.Raft, &cfg.Ports.Gossip} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		*p = l.Addr().(*net.TCPAddr).Port
		l.Close()
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
	env := map[string]string{api.EnvAddress: "http://" + a.HTTPAddr()}
	r := runCLI(t, nil, runOpts{env: env}, "acl", "bootstrap", "-admin-name", "ops", "-admin-email", "ops@acme.test")
	if r.code != 0 {
		t.Fatalf("bootstrap: %+v", r)
	}
	var secret string
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "Secret ID    = "); ok {
			secret = v
		}
	}
	if secret == "" {
		t.Fatalf("no secret in %q", r.stdout)
	}
	env[api.EnvToken] = secret
	if r := runCLI(t, nil, runOpts{env: env}, "org", "create", "-email", "it@acme.test", "acme"); r.code != 0 {
		t.Fatalf("org create: %+v", r)
	}
	r = runCLI(t, nil, runOpts{env: env}, "admin", "org", "show", "acme")
	if r.code != 0 || !strings.Contains(r.stdout, "Owners                  = ops") {
		t.Fatalf("admin org show: %+v", r)
	}
}
