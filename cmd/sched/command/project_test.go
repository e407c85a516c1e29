package command

import (
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func mgmtProject(id, name string, workspaces, teams int, description string) string {
	desc := "null"
	if description != "" {
		desc = `"` + description + `"`
	}
	return `{"id":"` + id + `","type":"projects","attributes":{"name":"` + name + `","description":` + desc +
		`,"workspace-count":` + strconv.Itoa(workspaces) + `,"team-count":` + strconv.Itoa(teams) +
		`,"permissions":{"can-update":true,"can-destroy":true,"can-create-workspace":true}},` +
		`"relationships":{"organization":{"data":{"id":"acme","type":"organizations"}}}}`
}

func TestProjectList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations/acme/projects", mgmtReply(200, `{"data":[`+
		mgmtProject("prj-1", "Default Project", 3, 1, "")+","+mgmtProject("prj-2", "web", 0, 2, "Web tier")+
		`],"meta":{"status-counts":{"total":2,"matching":2},"pagination":{"current-page":1,"prev-page":null,"next-page":null,"total-pages":1,"total-count":2}}}`))
	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "list", "-q", "we", "-names", "web, db", "-sort", "-name",
		"-can-create-workspace", "-can-update").check(t, 0, lines(
		"ID     Name             Workspaces  Teams  Description",
		"prj-1  Default Project  3           1",
		"prj-2  web              0           2      Web tier",
	), "")
	s := f.only("GET /api/v2/organizations/acme/projects")
	checkMgmtRequest(t, s)
	want := url.Values{
		"q": {"we"}, "filter[names]": {"web,db"}, "sort": {"-name"},
		"filter[permissions][create-workspace]": {"true"}, "filter[permissions][update]": {"true"},
		"page[number]": {"1"}, "page[size]": {"100"},
	}
	if !reflect.DeepEqual(s.Query, want) {
		t.Errorf("query = %v\nwant    %v", s.Query, want)
	}
}

func TestProjectListOrganization(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations/from-flag/projects", mgmtReply(200, `{"data":[]}`))
	// -org wins over SCHED_ORG.
	runCLI(t, f, runOpts{env: mgmtEnv("from-env")}, "project", "list", "-org", "from-flag").check(t, 0, "No projects found\n", "")
	f.only("GET /api/v2/organizations/from-flag/projects")

	r := runCLI(t, f, runOpts{env: mgmtEnv("")}, "project", "list")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error: no organization given: pass -org or set SCHED_ORG\n") || r.stdout != "" {
		t.Errorf("no org: %+v", r)
	}
	if n := len(f.requests("")); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestProjectListJSON(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations/acme/projects", mgmtReply(200, `{"data":[`+mgmtProject("prj-2", "web", 0, 2, "Web tier")+`]}`))
	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "list", "-json").check(t, 0, lines(
		"[",
		"    {",
		`        "id": "prj-2",`,
		`        "name": "web",`,
		`        "description": "Web tier",`,
		`        "workspace-count": 0,`,
		`        "team-count": 2,`,
		`        "permissions": {`,
		`            "can-update": true,`,
		`            "can-destroy": true,`,
		`            "can-create-workspace": true`,
		"        },",
		`        "organization": "acme"`,
		"    }",
		"]",
	), "")
}

func TestProjectListServerErrors(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations/gone/projects", mgmtFail(404, "not found", `organization "gone" not found`, ""))
	f.on("GET", "/api/v2/organizations/acme/projects", mgmtFail(400, "bad request", `sort must be "name" or "-name"`, ""))
	runCLI(t, f, runOpts{env: mgmtEnv("gone")}, "project", "list").check(t, 1, "",
		"Error retrieving projects: 404 not found: organization \"gone\" not found\n")
	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "list", "-sort", "size").check(t, 1, "",
		"Error retrieving projects: 400 bad request: sort must be \"name\" or \"-name\"\n")
}

func TestProjectCreate(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST", "/api/v2/organizations/acme/projects",
		mgmtReply(201, `{"data":`+mgmtProject("prj-9", "web", 0, 0, "Web tier")+`}`),
		mgmtFail(422, "invalid attribute", "auto-destroy-activity-duration must be 1 to 4 digits followed by d or h", "/data/attributes/auto-destroy-activity-duration"))
	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "create", "-description", "Web tier",
		"-auto-destroy-activity-duration", "14d", "web").check(t, 0, "Successfully created project \"web\" with ID \"prj-9\"!\n", "")
	s := f.requests("POST /api/v2/organizations/acme/projects")[0]
	checkMgmtRequest(t, s)
	var body map[string]any
	decodeBody(t, s, &body)
	if got := mgmtJSONString(t, body); got != `{"data":{"attributes":{"auto-destroy-activity-duration":"14d","description":"Web tier","name":"web"},"type":"projects"}}` {
		t.Errorf("body = %s", got)
	}

	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "create", "-auto-destroy-activity-duration", "0d", "web").check(t, 1, "",
		"Error creating project: 422 invalid attribute: auto-destroy-activity-duration must be 1 to 4 digits followed by d or h"+
			" (at /data/attributes/auto-destroy-activity-duration)\n")
	var second map[string]any
	decodeBody(t, f.requests("POST /api/v2/organizations/acme/projects")[1], &second)
	if got := mgmtJSONString(t, second); got != `{"data":{"attributes":{"auto-destroy-activity-duration":"0d","name":"web"},"type":"projects"}}` {
		t.Errorf("body without description = %s", got)
	}
}

func TestProjectCreateBadArgs(t *testing.T) {
	f := newFakeAPI(t)
	for _, args := range [][]string{{}, {"a", "b"}, {"-descr", "x", "web"}} {
		r := runCLI(t, f, runOpts{env: mgmtEnv("acme")}, append([]string{"project", "create"}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "Usage: sched project create") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	r := runCLI(t, f, runOpts{env: mgmtEnv("")}, "project", "create", "web")
	if r.code != 1 || !strings.Contains(r.stderr, "no organization given") {
		t.Errorf("no org: %+v", r)
	}
	if n := len(f.requests("")); n != 0 {
		t.Errorf("%d requests after usage errors", n)
	}
}

func TestProjectDelete(t *testing.T) {
	f := newFakeAPI(t)
	f.on("DELETE", "/api/v2/projects/prj-1", mgmtReply(204, ""))
	f.on("DELETE", "/api/v2/projects/prj-2", mgmtFail(409, "conflict", "project still contains 2 workspaces", ""))
	f.on("DELETE", "/api/v2/projects/prj-3", mgmtFail(404, "not found", `project "prj-3" not found`, ""))
	f.on("GET", "/api/v2/organizations/acme/projects",
		mgmtReply(200, `{"data":[`+mgmtProject("prj-1", "Web", 0, 0, "")+`]}`),
		mgmtReply(200, `{"data":[]}`))

	runCLI(t, f, runOpts{env: mgmtEnv("")}, "project", "delete", "prj-1").check(t, 0, "Successfully deleted project \"prj-1\"!\n", "")
	checkMgmtRequest(t, f.only("DELETE /api/v2/projects/prj-1"))

	// By name: looked up case-insensitively in the organization.
	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "delete", "web").check(t, 0, "Successfully deleted project \"prj-1\"!\n", "")
	if q := f.requests("GET /api/v2/organizations/acme/projects")[0].Query; q.Get("filter[names]") != "web" {
		t.Errorf("lookup query = %v", q)
	}
	if n := len(f.requests("DELETE /api/v2/projects/prj-1")); n != 2 {
		t.Errorf("%d deletes", n)
	}

	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "delete", "db").check(t, 1, "",
		"Error looking up project: no project named \"db\" in organization \"acme\"\n")
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "project", "delete", "db").check(t, 1, "",
		"Error looking up project: \"db\" is not a project ID (prj-...); to find it by name, no organization given: pass -org or set SCHED_ORG\n")
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "project", "delete", "prj-2").check(t, 1, "",
		"Error deleting project: 409 conflict: project still contains 2 workspaces\n")
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "project", "delete", "prj-3").check(t, 1, "",
		"Error deleting project: 404 not found: project \"prj-3\" not found\n")
}

func TestProjectMove(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST", "/api/v2/projects/prj-2/relationships/workspaces", mgmtReply(204, ""),
		mgmtFail(403, "forbidden", "not allowed to move workspace ws-9 out of its project", ""))
	f.on("GET", "/api/v2/organizations/acme/workspaces/net", mgmtReply(200,
		`{"data":{"id":"ws-7","type":"workspaces","attributes":{"name":"net"}}}`))
	f.on("GET", "/api/v2/organizations/acme/workspaces/nope", mgmtFail(404, "not found", "workspace not found", ""))

	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "move", "prj-2", "ws-1", "net").check(t, 0,
		"Successfully moved 2 workspace(s) into project \"prj-2\"!\n", "")
	s := f.requests("POST /api/v2/projects/prj-2/relationships/workspaces")[0]
	checkMgmtRequest(t, s)
	var body map[string]any
	decodeBody(t, s, &body)
	if got := mgmtJSONString(t, body); got != `{"data":[{"id":"ws-1","type":"workspaces"},{"id":"ws-7","type":"workspaces"}]}` {
		t.Errorf("body = %s", got)
	}

	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "move", "prj-2", "ws-9").check(t, 1, "",
		"Error moving workspaces: 403 forbidden: not allowed to move workspace ws-9 out of its project\n")

	// A workspace that cannot be found stops the command before the move.
	runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "move", "prj-2", "ws-1", "nope").check(t, 1, "",
		"Error looking up workspace: no workspace named \"nope\" in organization \"acme\"\n")
	if n := len(f.requests("POST /api/v2/projects/prj-2/relationships/workspaces")); n != 2 {
		t.Errorf("%d moves, want 2", n)
	}

	r := runCLI(t, f, runOpts{env: mgmtEnv("acme")}, "project", "move", "prj-2")
	if r.code != 1 || !strings.Contains(r.stderr, "this command takes a project and at least one workspace, got 1 argument(s)") {
		t.Errorf("one argument: %+v", r)
	}
}
