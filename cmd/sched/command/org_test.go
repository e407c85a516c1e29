package command

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/http/api/mgmt"
)

// mgmtReply answers with a JSON:API document and a status.
func mgmtReply(status int, doc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", mgmt.MediaTypeJSONAPI)
		w.WriteHeader(status)
		io.WriteString(w, doc)
	}
}

// mgmtFail answers with a JSON:API error document of one error.
func mgmtFail(status int, title, detail, pointer string) http.HandlerFunc {
	e := map[string]any{"status": strconv.Itoa(status), "title": title, "detail": detail}
	if pointer != "" {
		e["source"] = map[string]string{"pointer": pointer}
	}
	b, _ := json.Marshal(map[string]any{"errors": []any{e}})
	return mgmtReply(status, string(b))
}

// mgmtEnv is the environment of a management command: the token, and
// the organization when org is not empty.
func mgmtEnv(org string) map[string]string {
	env := map[string]string{api.EnvToken: "s3cret"}
	if org != "" {
		env[envMgmtOrg] = org
	}
	return env
}

// checkMgmtRequest checks what every management request carries.
func checkMgmtRequest(t *testing.T, s seen) {
	t.Helper()
	if h := s.Header.Get("Authorization"); h != "Bearer s3cret" {
		t.Errorf("%s %s: Authorization = %q", s.Method, s.Path, h)
	}
	if len(s.Body) > 0 && s.Header.Get("Content-Type") != mgmt.MediaTypeJSONAPI {
		t.Errorf("%s %s: Content-Type = %q", s.Method, s.Path, s.Header.Get("Content-Type"))
	}
	if s.Query.Has("namespace") {
		t.Errorf("%s %s: the jobs API's namespace was sent", s.Method, s.Path)
	}
}

func TestOrgCreate(t *testing.T) {
	const doc = `{"data":{"id":"acme","type":"organizations","attributes":{"name":"acme","external-id":"org-1","email":"ops@acme.test","created-at":"2025-03-01T10:00:00.000Z"}}}`
	f := newFakeAPI(t)
	f.on("POST", "/api/v2/organizations", mgmtReply(201, doc), mgmtReply(201, doc),
		mgmtFail(422, "invalid attribute", "name has already been taken", "/data/attributes/name"))

	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "create", "-email", "ops@acme.test", "acme").check(t, 0,
		"Successfully created organization \"acme\"!\n", "")
	s := f.requests("POST /api/v2/organizations")[0]
	checkMgmtRequest(t, s)
	var body map[string]any
	decodeBody(t, s, &body)
	if got := mgmtJSONString(t, body); got != `{"data":{"attributes":{"email":"ops@acme.test","name":"acme"},"type":"organizations"}}` {
		t.Errorf("body = %s", got)
	}

	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "create", "-json", "acme").check(t, 0, lines(
		"{",
		`    "name": "acme",`,
		`    "external-id": "org-1",`,
		`    "email": "ops@acme.test",`,
		`    "created-at": "2025-03-01T10:00:00Z"`,
		"}",
	), "")

	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "create", "acme").check(t, 1, "",
		"Error creating organization: 422 invalid attribute: name has already been taken (at /data/attributes/name)\n")
}

func TestOrgCreateBadArgs(t *testing.T) {
	f := newFakeAPI(t)
	r := runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "create")
	if r.code != 1 || !strings.Contains(r.stderr, "This command takes 1 argument(s), got 0") || !strings.Contains(r.stderr, "Usage: sched org create") {
		t.Errorf("no name: %+v", r)
	}
	r = runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "create", "-namespace", "x", "acme")
	if r.code != 1 || !strings.Contains(r.stderr, "flag provided but not defined: -namespace") {
		t.Errorf("-namespace: %+v", r)
	}
	if n := len(f.requests("")); n != 0 {
		t.Errorf("%d requests after usage errors", n)
	}
}

func mgmtOrgPage(names []string, current int, next string, totalPages, totalCount int) string {
	var data []string
	for _, n := range names {
		data = append(data, `{"id":"`+n+`","type":"organizations","attributes":{"name":"`+n+`","external-id":"org-`+n+`","email":"`+n+`@x.test"}}`)
	}
	return `{"data":[` + strings.Join(data, ",") + `],"meta":{"pagination":{"current-page":` + strconv.Itoa(current) +
		`,"prev-page":null,"next-page":` + next + `,"total-pages":` + strconv.Itoa(totalPages) + `,"total-count":` + strconv.Itoa(totalCount) + `}}}`
}

func TestOrgList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations",
		mgmtReply(200, mgmtOrgPage([]string{"acme"}, 1, "2", 2, 2)),
		mgmtReply(200, mgmtOrgPage([]string{"beta"}, 2, "null", 2, 2)))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "list").check(t, 0, lines(
		"Name  External ID  Email        Created",
		"acme  org-acme     acme@x.test  <none>",
		"beta  org-beta     beta@x.test  <none>",
	), "")
	reqs := f.requests("GET /api/v2/organizations")
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want one per page", len(reqs))
	}
	for i, want := range []string{"1", "2"} {
		checkMgmtRequest(t, reqs[i])
		if got := reqs[i].Query.Get("page[number]"); got != want || reqs[i].Query.Get("page[size]") != "100" {
			t.Errorf("request %d asks for page %q size %q", i, got, reqs[i].Query.Get("page[size]"))
		}
	}
}

func TestOrgListOnePage(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations", mgmtReply(200, mgmtOrgPage([]string{"beta"}, 2, "null", 2, 3)))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "list", "-page", "2", "-page-size", "2").check(t, 0, lines(
		"Name  External ID  Email        Created",
		"beta  org-beta     beta@x.test  <none>",
		"",
		"Page 2 of 2 (3 total)",
	), "")
	if q := f.only("GET /api/v2/organizations").Query; q.Get("page[number]") != "2" || q.Get("page[size]") != "2" {
		t.Errorf("query = %v", q)
	}
}

func TestOrgListEmptyAndJSON(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations", mgmtReply(200, `{"data":[]}`))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "list").check(t, 0, "No organizations found\n", "")
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "list", "-json").check(t, 0, "[]\n", "")
}

func TestOrgListErrors(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v2/organizations", mgmtFail(401, "unauthorized", "the token is unknown or has expired", ""))
	runCLI(t, f, runOpts{env: mgmtEnv("")}, "org", "list").check(t, 1, "",
		"Error retrieving organizations: 401 unauthorized: the token is unknown or has expired\n")

	for _, args := range [][]string{{"-page", "-1"}, {"-page-size", "101"}, {"-page", "x"}, {"extra"}} {
		r := runCLI(t, f, runOpts{env: mgmtEnv("")}, append([]string{"org", "list"}, args...)...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "Usage: sched org list") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if n := len(f.requests("")); n != 1 {
		t.Errorf("%d requests, want only the first command's", n)
	}
}

func mgmtJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
