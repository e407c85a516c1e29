package command

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

var aclTokenFixture = &state.ACLToken{
	AccessorID:  "a1b2c3d4-0000-4000-8000-000000000001",
	SecretID:    "s1b2c3d4-0000-4000-8000-000000000001",
	Name:        "Bootstrap Token",
	Type:        "management",
	Global:      true,
	CreateTime:  time.Date(2025, 2, 1, 10, 0, 0, 0, time.UTC),
	CreateIndex: 7, ModifyIndex: 7,
}

func TestACLBootstrap(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST", "/v1/acl/bootstrap", reply(7, aclTokenFixture), fail(http.StatusBadRequest, "ACL bootstrap already done (reset index: 7)"))
	runCLI(t, f, runOpts{}, "acl", "bootstrap").check(t, 0, lines(
		"Accessor ID  = a1b2c3d4-0000-4000-8000-000000000001",
		"Secret ID    = s1b2c3d4-0000-4000-8000-000000000001",
		"Name         = Bootstrap Token",
		"Type         = management",
		"Global       = true",
		"Create Time  = 2025-02-01T10:00:00Z",
		"Expiry Time  = <none>",
		"Create Index = 7",
		"Modify Index = 7",
		"Policies     = n/a",
	), "")
	if body := f.only("POST /v1/acl/bootstrap").Body; len(body) != 0 {
		t.Errorf("bootstrap without a secret sent %s", body)
	}
	runCLI(t, f, runOpts{stdin: "  0b6c9a44-2c1c-4e55-9d2a-6a1f3ad0c7e1\n"}, "acl", "bootstrap", "-").check(t, 1, "",
		"Error bootstrapping: Unexpected response code: 400 (ACL bootstrap already done (reset index: 7))\n")
	var sent map[string]string
	json.Unmarshal(f.requests("POST /v1/acl/bootstrap")[1].Body, &sent)
	if sent["BootstrapSecret"] != "0b6c9a44-2c1c-4e55-9d2a-6a1f3ad0c7e1" {
		t.Errorf("bootstrap secret sent = %v", sent)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	runCLI(t, f, runOpts{}, "acl", "bootstrap", missing).check(t, 1, "",
		"Error reading the bootstrap secret: open "+missing+": no such file or directory\n")
}

// TestACLBootstrapAdminFlags: -admin-name and -admin-email are sent as
// the bootstrap's AdminName and AdminEmail.
func TestACLBootstrapAdminFlags(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST", "/v1/acl/bootstrap", reply(7, aclTokenFixture))
	r := runCLI(t, f, runOpts{}, "acl", "bootstrap", "-admin-name", "ops", "-admin-email", "ops@example.com")
	if r.code != 0 || !strings.Contains(r.stdout, "Accessor ID  = a1b2c3d4") {
		t.Fatalf("bootstrap: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var sent map[string]string
	json.Unmarshal(f.only("POST /v1/acl/bootstrap").Body, &sent)
	if sent["AdminName"] != "ops" || sent["AdminEmail"] != "ops@example.com" || sent["BootstrapSecret"] != "" {
		t.Errorf("bootstrap body = %v", sent)
	}
}

func TestACLTokenCreateCommand(t *testing.T) {
	f := newFakeAPI(t)
	exp := time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC)
	created := &state.ACLToken{AccessorID: "acc-1", SecretID: "sec-1", Name: "ci", Type: "client", Policies: []string{"readers", "writers"},
		CreateTime: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), ExpirationTime: &exp, ExpirationTTL: time.Hour, CreateIndex: 9, ModifyIndex: 9}
	f.on("POST", "/v1/acl/token", reply(9, created))
	runCLI(t, f, runOpts{env: map[string]string{api.EnvToken: "mgmt"}}, "acl", "token", "create", "-name", "ci", "-policy", "readers", "-policy", "writers", "-ttl", "1h").check(t, 0, lines(
		"Accessor ID  = acc-1",
		"Secret ID    = sec-1",
		"Name         = ci",
		"Type         = client",
		"Global       = false",
		"Create Time  = 2025-03-01T12:00:00Z",
		"Expiry Time  = 2025-03-01T13:00:00Z",
		"Create Index = 9",
		"Modify Index = 9",
		"Policies     = [readers, writers]",
	), "")
	req := f.only("POST /v1/acl/token")
	if req.Header.Get(api.HeaderToken) != "mgmt" {
		t.Errorf("token header = %q", req.Header.Get(api.HeaderToken))
	}
	var body map[string]any
	json.Unmarshal(req.Body, &body)
	if body["Name"] != "ci" || body["Type"] != "client" || body["ExpirationTTL"] != float64(time.Hour) || len(body["Policies"].([]any)) != 2 {
		t.Errorf("create body = %s", req.Body)
	}
}

func TestACLTokenListInfoSelfDelete(t *testing.T) {
	f := newFakeAPI(t)
	past := testNow.Add(-time.Minute)
	stored := []*state.ACLToken{
		{AccessorID: "acc-1", Name: "ci", Type: "client", Policies: []string{"readers"}, ExpirationTime: &past, CreateTime: testNow.Add(-time.Hour), CreateIndex: 3, ModifyIndex: 4,
			Subject: &state.TokenSubject{Kind: "team", ID: "team-9"}},
		{AccessorID: "acc-2", Type: "management", Global: true},
	}
	f.on("GET", "/v1/acl/tokens", reply(4, stored), reply(4, []*state.ACLToken{}))
	f.on("GET", "/v1/acl/token/acc-1", reply(4, stored[0]))
	f.on("GET", "/v1/acl/token/self", reply(4, stored[0]))
	f.on("DELETE", "/v1/acl/token/acc-1", reply(5, nil))
	f.on("DELETE", "/v1/acl/token/gone", fail(http.StatusNotFound, `ACL token "gone": not found`))

	runCLI(t, f, runOpts{}, "acl", "token", "list").check(t, 0, lines(
		"Name    Type        Global  Accessor ID  Expired",
		"ci      client      false   acc-1        true",
		"<none>  management  true    acc-2        false",
	), "")
	runCLI(t, f, runOpts{}, "acl", "token", "list").check(t, 0, "No tokens found\n", "")
	info := lines(
		"Accessor ID  = acc-1",
		"Secret ID    = <hidden>",
		"Name         = ci",
		"Type         = client",
		"Global       = false",
		"Create Time  = 2025-03-01T11:00:00Z",
		"Expiry Time  = 2025-03-01T11:59:00Z (expired)",
		"Create Index = 3",
		"Modify Index = 4",
		"Policies     = [readers]",
		"Subject      = team team-9",
	)
	runCLI(t, f, runOpts{}, "acl", "token", "info", "acc-1").check(t, 0, info, "")
	runCLI(t, f, runOpts{env: map[string]string{api.EnvToken: "sec"}}, "acl", "token", "self").check(t, 0, info, "")
	if got := f.only("GET /v1/acl/token/self").Header.Get(api.HeaderToken); got != "sec" {
		t.Errorf("self sent token %q", got)
	}
	runCLI(t, f, runOpts{}, "acl", "token", "delete", "acc-1").check(t, 0, "Token acc-1 successfully deleted\n", "")
	runCLI(t, f, runOpts{}, "acl", "token", "delete", "gone").check(t, 1, "",
		"Error deleting token: Unexpected response code: 404 (ACL token \"gone\": not found)\n")
	if r := runCLI(t, f, runOpts{}, "acl", "token", "info"); r.code != 1 || !strings.Contains(r.stderr, "This command takes 1 argument(s), got 0") {
		t.Errorf("info without an accessor: %d %q", r.code, r.stderr)
	}
}

func TestACLPolicyCommands(t *testing.T) {
	f := newFakeAPI(t)
	rules := "namespace \"default\" {\n  policy = \"read\"\n}\n"
	path := filepath.Join(t.TempDir(), "readers.hcl")
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	pol := &state.ACLPolicy{Name: "readers", Description: "read default", Rules: rules, CreateIndex: 3, ModifyIndex: 5}
	f.on("PUT", "/v1/acl/policy/readers", reply(5, pol), fail(http.StatusBadRequest, `Rules: line 2, column 3: policy "admin" is not one of deny, read, write, scale`))
	f.on("GET", "/v1/acl/policies", reply(5, []*state.ACLPolicy{pol, {Name: "ops"}}))
	f.on("GET", "/v1/acl/policy/readers", reply(5, pol))
	f.on("DELETE", "/v1/acl/policy/readers", reply(6, nil))

	runCLI(t, f, runOpts{}, "acl", "policy", "apply", "-description", "read default", "readers", path).check(t, 0,
		"Successfully wrote \"readers\" ACL policy!\n", "")
	var body map[string]string
	json.Unmarshal(f.only("PUT /v1/acl/policy/readers").Body, &body)
	if body["Name"] != "readers" || body["Description"] != "read default" || body["Rules"] != rules {
		t.Errorf("apply body = %v", body)
	}
	runCLI(t, f, runOpts{stdin: "namespace \"x\" {\n  policy = \"admin\"\n}\n"}, "acl", "policy", "apply", "readers", "-").check(t, 1, "",
		"Error writing policy: Unexpected response code: 400 (Rules: line 2, column 3: policy \"admin\" is not one of deny, read, write, scale)\n")
	none := filepath.Join(t.TempDir(), "none.hcl")
	runCLI(t, f, runOpts{}, "acl", "policy", "apply", "readers", none).check(t, 1, "",
		"Error reading the policy rules: open "+none+": no such file or directory\n")
	runCLI(t, f, runOpts{}, "acl", "policy", "list").check(t, 0, lines(
		"Name     Description",
		"readers  read default",
		"ops",
	), "")
	runCLI(t, f, runOpts{}, "acl", "policy", "info", "readers").check(t, 0, lines(
		"Name        = readers",
		"Description = read default",
		"CreateIndex = 3",
		"ModifyIndex = 5",
		"",
		"Rules",
		"",
		`namespace "default" {`,
		`  policy = "read"`,
		"}",
	), "")
	runCLI(t, f, runOpts{}, "acl", "policy", "delete", "readers").check(t, 0, "Successfully deleted \"readers\" ACL policy!\n", "")
	if r := runCLI(t, f, runOpts{}, "acl", "policy", "apply", "readers"); r.code != 1 || !strings.Contains(r.stderr, "Usage: sched acl policy apply [options] NAME PATH") {
		t.Errorf("apply without a path: %d %q", r.code, r.stderr)
	}
}

func TestACLTokenUpdateCommand(t *testing.T) {
	f := newFakeAPI(t)
	exp := testNow.Add(time.Hour)
	stored := &state.ACLToken{AccessorID: "acc-1", Name: "ci", Type: "client", Policies: []string{"readers"}, Global: true,
		Subject: &state.TokenSubject{Kind: "team", ID: "team-9"}, ExpirationTime: &exp, ExpirationTTL: 2 * time.Hour,
		CreateTime: testNow.Add(-time.Hour), CreateIndex: 3, ModifyIndex: 4}
	f.on("GET", "/v1/acl/token/acc-1", reply(4, stored))
	f.on("GET", "/v1/acl/token/gone", fail(http.StatusNotFound, `ACL token "gone": not found`))
	// The fake answers every update with what was sent, at index 5.
	f.on("POST", "/v1/acl/token/acc-1", func(w http.ResponseWriter, r *http.Request) {
		var sent state.ACLToken
		if err := json.NewDecoder(r.Body).Decode(&sent); err != nil {
			t.Errorf("update body: %v", err)
		}
		out := stored.Copy()
		out.Name, out.Type, out.Policies, out.Global, out.Subject = sent.Name, sent.Type, sent.Policies, sent.Global, sent.Subject
		out.ModifyIndex = 5
		reply(5, out)(w, r)
	})
	// sent returns the body of the last update.
	sent := func() map[string]any {
		t.Helper()
		rs := f.requests("POST /v1/acl/token/acc-1")
		if len(rs) == 0 {
			t.Fatal("no update sent")
		}
		var body map[string]any
		if err := json.Unmarshal(rs[len(rs)-1].Body, &body); err != nil {
			t.Fatal(err)
		}
		return body
	}

	runCLI(t, f, runOpts{}, "acl", "token", "update", "-name", "deploy", "acc-1").check(t, 0, lines(
		"Accessor ID  = acc-1",
		"Secret ID    = <hidden>",
		"Name         = deploy",
		"Type         = client",
		"Global       = true",
		"Create Time  = 2025-03-01T11:00:00Z",
		"Expiry Time  = 2025-03-01T13:00:00Z",
		"Create Index = 3",
		"Modify Index = 5",
		"Policies     = [readers]",
		"Subject      = team team-9",
	), "")
	body := sent()
	if body["Name"] != "deploy" || body["Type"] != "client" || body["Global"] != true || len(body["Policies"].([]any)) != 1 ||
		body["Subject"].(map[string]any)["ID"] != "team-9" {
		t.Errorf("-name changed more than the name: %v", body)
	}
	if _, ok := body["ExpirationTime"]; ok {
		t.Errorf("update sent an expiry, which the server refuses: %v", body)
	}
	if _, ok := body["ExpirationTTL"]; ok {
		t.Errorf("update sent a TTL, which the server refuses: %v", body)
	}

	// -policy replaces the policies; the name read from the server stays.
	if r := runCLI(t, f, runOpts{}, "acl", "token", "update", "-policy", "writers", "-policy", "ops", "acc-1"); r.code != 0 ||
		!strings.Contains(r.stdout, "Policies     = [writers, ops]\n") {
		t.Errorf("update -policy: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if body := sent(); body["Name"] != "ci" || fmt.Sprint(body["Policies"]) != "[writers ops]" {
		t.Errorf("update -policy sent %v", body)
	}

	// -type management drops the policies a management token cannot take.
	if r := runCLI(t, f, runOpts{}, "acl", "token", "update", "-type", "management", "acc-1"); r.code != 0 ||
		!strings.Contains(r.stdout, "Type         = management\n") || !strings.Contains(r.stdout, "Policies     = n/a\n") {
		t.Errorf("update -type management: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if body := sent(); body["Type"] != "management" || body["Policies"] != nil {
		t.Errorf("update -type management sent %v", body)
	}

	// Refused as the server refuses it, and nothing is sent.
	updates := len(f.requests("POST /v1/acl/token/acc-1"))
	runCLI(t, f, runOpts{}, "acl", "token", "update", "-type", "management", "-policy", "readers", "acc-1").check(t, 1, "",
		"Error updating token: Policies: a management token takes no policies: it may do everything\n")
	runCLI(t, f, runOpts{}, "acl", "token", "update", "-type", "admin", "acc-1").check(t, 1, "",
		"Error updating token: Type: \"admin\" is not one of management, client\n")
	runCLI(t, f, runOpts{}, "acl", "token", "update", "-name", "x", "gone").check(t, 1, "",
		"Error retrieving token: no ACL token has accessor ID \"gone\"\n")
	if n := len(f.requests("POST /v1/acl/token/acc-1")); n != updates {
		t.Errorf("refused updates sent %d requests", n-updates)
	}
	if r := runCLI(t, f, runOpts{}, "acl", "token", "update", "-name", "x"); r.code != 1 ||
		!strings.Contains(r.stderr, "Usage: sched acl token update [options] ACCESSOR_ID") {
		t.Errorf("update without an accessor: %d %q", r.code, r.stderr)
	}
}

func TestACLTokenUpdateServerRefusal(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/acl/token/acc-1", reply(4, &state.ACLToken{AccessorID: "acc-1", Type: "client", Policies: []string{"readers"}}))
	f.on("POST", "/v1/acl/token/acc-1", fail(http.StatusBadRequest, `Policies[0]: policy "nope" does not exist`))
	runCLI(t, f, runOpts{}, "acl", "token", "update", "-policy", "nope", "acc-1").check(t, 1, "",
		"Error updating token: Unexpected response code: 400 (Policies[0]: policy \"nope\" does not exist)\n")
}
