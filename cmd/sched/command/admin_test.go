package command

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

const adminOrgDoc = `{"id":"acme","type":"organizations","attributes":{"name":"acme","external-id":"org-1","access-beta-tools":false,
	"is-disabled":true,"apply-timeout":"24h","plan-timeout":"2h","tool-worker-sudo-enabled":false,"notification-email":"ops@acme.test",
	"global-module-sharing":true,"global-provider-sharing":false,"sso-enabled":false,"workspace-limit":null},
	"relationships":{"owners":{"data":[{"id":"user-1","type":"users"}]}}}`

func TestAdminOrgList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/admin/organizations", mgmtReply(200, `{"data":[`+adminOrgDoc+`,
		{"id":"beta","type":"organizations","attributes":{"name":"beta","external-id":"org-2","notification-email":"b@x.test","workspace-limit":3}}],
		"meta":{"status-counts":{"total":2,"active":1,"disabled":1}}}`))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "list", "-q", "a", "-email", "ops", "-name", "ac",
		"-module-producer=false").check(t, 0, lines(
		"Name  External ID  Email          Disabled  Workspace Limit",
		"acme  org-1        ops@acme.test  true      <none>",
		"beta  org-2        b@x.test       false     3",
	), "")
	s := f.only("GET /api/v2/admin/organizations")
	checkMgmtRequest(t, s)
	// -provider-producer was not given, so its filter is not sent.
	want := url.Values{"q": {"a"}, "q[email]": {"ops"}, "q[name]": {"ac"}, "filter[module_producer]": {"false"},
		"page[number]": {"1"}, "page[size]": {"100"}}
	if !reflect.DeepEqual(s.Query, want) {
		t.Errorf("query = %v\nwant    %v", s.Query, want)
	}
}

func TestAdminOrgShow(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/admin/organizations/acme", mgmtReply(200, `{"data":`+adminOrgDoc+`,
		"included":[{"id":"user-1","type":"users","attributes":{"username":"alice"}}]}`))
	f.on("GET", "/api/v2/admin/organizations/nope", mgmtFail(404, "not found", "", ""))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "show", "acme").check(t, 0, lines(
		"Name                    = acme",
		"External ID             = org-1",
		"Notification Email      = ops@acme.test",
		"Disabled                = true",
		"Access Beta Tools       = false",
		"Apply Timeout           = 24h",
		"Plan Timeout            = 2h",
		"Tool Worker Sudo        = false",
		"Global Module Sharing   = true",
		"Global Provider Sharing = false",
		"SSO Enabled             = false",
		"Workspace Limit         = <none>",
		"Owners                  = alice",
	), "")
	if q := f.only("GET /api/v2/admin/organizations/acme").Query; q.Get("include") != "owners" {
		t.Errorf("query = %v", q)
	}
	// Non-administrators get 404 on every admin path, like a missing one.
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "show", "nope").check(t, 1, "",
		"Error retrieving organization: 404 not found\n")
}

func TestAdminOrgUpdate(t *testing.T) {
	f := newFakeAPI(t)
	f.on("PATCH", "/api/v2/admin/organizations/acme", mgmtReply(200, `{"data":`+adminOrgDoc+`}`),
		mgmtFail(422, "invalid attribute", "apply-timeout must be a duration such as 24h", "/data/attributes/apply-timeout"))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "update", "-is-disabled", "-global-provider-sharing=false",
		"-plan-timeout", "", "-workspace-limit", "0", "acme").check(t, 0, "Successfully updated organization \"acme\"!\n", "")
	s := f.requests("PATCH /api/v2/admin/organizations/acme")[0]
	checkMgmtRequest(t, s)
	var body map[string]any
	decodeBody(t, s, &body)
	want := `{"data":{"attributes":{"global-provider-sharing":false,"is-disabled":true,"plan-timeout":null,"workspace-limit":0},"id":"acme","type":"organizations"}}`
	if got := mgmtJSONString(t, body); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}

	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "update", "-apply-timeout", "soon", "acme").check(t, 1, "",
		"Error updating organization: 422 invalid attribute: apply-timeout must be a duration such as 24h (at /data/attributes/apply-timeout)\n")

	for _, args := range [][]string{{"acme"}, {"-workspace-limit", "many", "acme"}, {"-is-disabled"}} {
		r := runCLI(t, f, runOpts{env: mgmtEnv("")}, append([]string{"admin", "org", "update"}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "Usage: sched admin org update") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "update", "acme"); !strings.Contains(r.stderr, "nothing to update") {
		t.Errorf("no settings: %+v", r)
	}
	if n := len(f.requests("")); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestAdminOrgDelete(t *testing.T) {
	f := newFakeAPI(t)
	f.on("DELETE", "/api/v2/admin/organizations/acme", mgmtReply(204, ""))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "delete", "acme").check(t, 0, "Successfully deleted organization \"acme\"!\n", "")
	checkMgmtRequest(t, f.only("DELETE /api/v2/admin/organizations/acme"))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "org", "delete", "other").check(t, 1, "",
		"Error deleting organization: 404 Not Found: no such endpoint: DELETE /api/v2/admin/organizations/other\n")
}

const adminWorkspacesDoc = `{"data":[
	{"id":"ws-1","type":"workspaces","attributes":{"name":"net","locked":true,"vcs-repo":{"identifier":"acme/net"}},
		"relationships":{"organization":{"data":{"id":"acme","type":"organizations"}},"current-run":{"data":{"id":"run-1","type":"runs"}}}},
	{"id":"ws-2","type":"workspaces","attributes":{"name":"db","locked":false},
		"relationships":{"organization":{"data":{"id":"beta","type":"organizations"}},"current-run":{"data":null}}}],
	"included":[{"id":"run-1","type":"runs","attributes":{"status":"planned"}}],
	"meta":{"status-counts":{"planned":1,"none":1,"total":2}}}`

func TestAdminWorkspaceList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/admin/workspaces", mgmtReply(200, adminWorkspacesDoc))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "workspace", "list", "-q", "n", "-status", "planned,errored",
		"-sort", "-latest-change-at").check(t, 0, lines(
		"ID    Name  Organization  Locked  Run Status",
		"ws-1  net   acme          true    planned",
		"ws-2  db    beta          false   <none>",
	), "")
	s := f.only("GET /api/v2/admin/workspaces")
	checkMgmtRequest(t, s)
	want := url.Values{"q": {"n"}, "filter[current_run][status]": {"planned,errored"}, "sort": {"-latest-change-at"},
		"include": {"current_run"}, "page[number]": {"1"}, "page[size]": {"100"}}
	if !reflect.DeepEqual(s.Query, want) {
		t.Errorf("query = %v\nwant    %v", s.Query, want)
	}
}

func TestAdminWorkspaceShowAndDelete(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/admin/workspaces/ws-1", mgmtReply(200, `{"data":{"id":"ws-1","type":"workspaces",
		"attributes":{"name":"net","locked":true,"vcs-repo":{"identifier":"acme/net"}},
		"relationships":{"organization":{"data":{"id":"acme","type":"organizations"}},"current-run":{"data":{"id":"run-1","type":"runs"}}}},
		"included":[{"id":"run-1","type":"runs","attributes":{"status":"applied"}}]}`))
	f.on("DELETE", "/api/v2/admin/workspaces/ws-1", mgmtReply(204, ""))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "workspace", "show", "ws-1").check(t, 0, lines(
		"ID           = ws-1",
		"Name         = net",
		"Organization = acme",
		"Locked       = true",
		"VCS Repo     = acme/net",
		"Current Run  = run-1",
		"Run Status   = applied",
	), "")
	if q := f.only("GET /api/v2/admin/workspaces/ws-1").Query; q.Get("include") != "current_run" {
		t.Errorf("query = %v", q)
	}
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "admin", "workspace", "delete", "ws-1").check(t, 0, "Successfully deleted workspace \"ws-1\"!\n", "")
	checkMgmtRequest(t, f.only("DELETE /api/v2/admin/workspaces/ws-1"))
}

func TestAdminUsage(t *testing.T) {
	r := runCLI(t, nil, runOpts{}, "admin")
	if r.code != 1 || !strings.Contains(r.stderr, "Usage: sched admin <command>") || !strings.Contains(r.stderr, "policy-version") {
		t.Errorf("admin: %+v", r)
	}
	r = runCLI(t, nil, runOpts{}, "admin", "tool-version", "frobnicate")
	if r.code != 1 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown subcommand: %+v", r)
	}
	r = runCLI(t, nil, runOpts{}, "help")
	for _, name := range []string{"    admin ", "    org ", "    project "} {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("help lacks %q:\n%s", name, r.stdout)
		}
	}
}
