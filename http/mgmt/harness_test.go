package mgmt

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/internal/testutil"
)

// apiHarness drives the management API over a real store, token resolver
// and writer (see harness_test.go), as a client would: every fixture is
// made through the API itself, with the tokens it hands out.
type apiHarness struct {
	*aclHarness
	// root is a management token's secret: a site administrator.
	root string
}

// newAPIHarness builds a server whose management API has no rate limit
// (tests send many requests at a fixed clock); rateLimit overrides that.
func newAPIHarness(t testing.TB, rateLimit ...float64) *apiHarness {
	t.Helper()
	limit := -1.0
	if len(rateLimit) > 0 {
		limit = rateLimit[0]
	}
	a := newACLHarness(t, limit)
	m := &apiHarness{aclHarness: a}
	m.root = a.managementToken()
	return m
}

// on returns m reporting to t.
func (m *apiHarness) on(t testing.TB) *apiHarness {
	c := *m
	a := *m.aclHarness
	a.harness = m.harness.on(t)
	c.aclHarness = &a
	return &c
}

// testDoc is a response document as a client decodes it.
type testDoc struct {
	Data     json.RawMessage            `json:"data"`
	Included []testRes                  `json:"included"`
	Links    map[string]*string         `json:"links"`
	Meta     map[string]json.RawMessage `json:"meta"`
	Errors   []jsonapi.Error            `json:"errors"`
}

type testRes struct {
	ID            string                     `json:"id"`
	Type          string                     `json:"type"`
	Attributes    map[string]any             `json:"attributes"`
	Relationships map[string]testRel         `json:"relationships"`
	Links         map[string]string          `json:"links"`
	Raw           map[string]json.RawMessage `json:"-"`
}

type testRel struct {
	Data  json.RawMessage   `json:"data"`
	Links map[string]string `json:"links"`
}

// one decodes a single-resource document's data.
func (d *testDoc) one(t testing.TB) testRes {
	t.Helper()
	var r testRes
	if err := json.Unmarshal(d.Data, &r); err != nil {
		t.Fatalf("data is not one resource: %s (%v)", d.Data, err)
	}
	return r
}

// many decodes a list document's data.
func (d *testDoc) many(t testing.TB) []testRes {
	t.Helper()
	var rs []testRes
	if err := json.Unmarshal(d.Data, &rs); err != nil {
		t.Fatalf("data is not a list: %s (%v)", d.Data, err)
	}
	return rs
}

// ids returns the ids of a list document's resources.
func (d *testDoc) ids(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, r := range d.many(t) {
		out = append(out, r.ID)
	}
	return out
}

// meta decodes meta[key] into v.
func (d *testDoc) meta(t testing.TB, key string, v any) {
	t.Helper()
	raw, ok := d.Meta[key]
	if !ok {
		t.Fatalf("meta has no %q: %v", key, d.Meta)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("meta %q: %v", key, err)
	}
}

// relID returns the id of a to-one relationship ("" for null).
func (r testRes) relID(t testing.TB, name string) string {
	t.Helper()
	rel, ok := r.Relationships[name]
	if !ok {
		t.Fatalf("%s %s has no relationship %q", r.Type, r.ID, name)
	}
	if string(rel.Data) == "null" || rel.Data == nil {
		return ""
	}
	var id jsonapi.Identifier
	if err := json.Unmarshal(rel.Data, &id); err != nil {
		t.Fatalf("relationship %q: %s", name, rel.Data)
	}
	return id.ID
}

// attr returns a nested attribute: attr("project-access", "settings").
func (r testRes) attr(path ...string) any {
	var v any = r.Attributes
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// send sends a request with secret as a bearer token ("" sends none). A
// body that is a string or []byte is sent as is; anything else is JSON.
func (m *apiHarness) send(secret, method, path string, body any) *httptest.ResponseRecorder {
	m.T.Helper()
	r := testutil.Body(m.T, body)
	if !strings.HasPrefix(path, "/api/v2") {
		path = "/api/v2" + path
	}
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", jsonapi.MediaType)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	rec := httptest.NewRecorder()
	m.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// call sends a request, fails unless the answer is want, and decodes it.
func (m *apiHarness) call(secret, method, path string, body any, want int) *testDoc {
	m.T.Helper()
	rec := m.send(secret, method, path, body)
	if rec.Code != want {
		m.T.Fatalf("%s %s: status %d, want %d; body %s", method, path, rec.Code, want, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != jsonapi.MediaType {
		m.T.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	doc := &testDoc{}
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), doc); err != nil {
			m.T.Fatalf("%s %s: body %q is not JSON: %v", method, path, rec.Body.String(), err)
		}
	}
	return doc
}

// fail sends a request and asserts an error answer of status whose errors
// name pointer (a JSON pointer or a parameter; "" skips that check) and
// whose details hold every one of words.
func (m *apiHarness) fail(secret, method, path string, body any, status int, pointer string, words ...string) *testDoc {
	m.T.Helper()
	doc := m.call(secret, method, path, body, status)
	if len(doc.Errors) == 0 {
		m.T.Fatalf("%s %s: %d without errors", method, path, status)
	}
	all := ""
	found := pointer == ""
	for _, e := range doc.Errors {
		if e.Status != fmt.Sprint(status) {
			m.T.Errorf("%s %s: error status %q, want %d", method, path, e.Status, status)
		}
		all += e.Title + ": " + e.Detail + "\n"
		if e.Source != nil && (e.Source.Pointer == pointer || e.Source.Parameter == pointer) {
			found = true
		}
	}
	if !found {
		m.T.Errorf("%s %s: no error names %q: %+v", method, path, pointer, doc.Errors)
	}
	for _, w := range words {
		if !strings.Contains(all, w) {
			m.T.Errorf("%s %s: errors %q do not mention %q", method, path, all, w)
		}
	}
	return doc
}

// res builds a request document: {data: {type, attributes, relationships}}.
func docBody(typ string, attrs map[string]any, rels ...any) map[string]any {
	data := map[string]any{"type": typ}
	if attrs != nil {
		data["attributes"] = attrs
	}
	if len(rels) > 0 {
		rm := map[string]any{}
		for i := 0; i+1 < len(rels); i += 2 {
			rm[rels[i].(string)] = rels[i+1]
		}
		data["relationships"] = rm
	}
	return map[string]any{"data": data}
}

// rel is a to-one relationship object.
func relTo(typ, id string) map[string]any {
	return map[string]any{"data": map[string]any{"type": typ, "id": id}}
}

// user creates a user (through the admin API) and a token for them, and
// returns both.
func (m *apiHarness) user(name string) (id, secret string) {
	m.T.Helper()
	u := m.call(m.root, "POST", "/admin/users", docBody("users", map[string]any{"username": name, "email": name + "@example.com"}), 201).one(m.T)
	tok := m.call(m.root, "POST", "/users/"+u.ID+"/authentication-tokens", nil, 201).one(m.T)
	return u.ID, tok.Attributes["token"].(string)
}

// org creates an organization owned by the user of secret.
func (m *apiHarness) org(secret, name string) testRes {
	m.T.Helper()
	return m.call(secret, "POST", "/organizations", docBody("organizations", map[string]any{"name": name, "email": "ops@" + name + ".example"}), 201).one(m.T)
}

// team creates a team with organization-access access (may be nil) and
// the given members.
func (m *apiHarness) team(secret, org, name, visibility string, access map[string]any, members ...string) string {
	m.T.Helper()
	attrs := map[string]any{"name": name, "visibility": visibility}
	if access != nil {
		attrs["organization-access"] = access
	}
	id := m.call(secret, "POST", "/organizations/"+org+"/teams", docBody("teams", attrs), 201).one(m.T).ID
	if len(members) > 0 {
		var data []map[string]any
		for _, u := range members {
			data = append(data, map[string]any{"type": "users", "id": u})
		}
		m.call(secret, "POST", "/teams/"+id+"/relationships/users", map[string]any{"data": data}, 204)
	}
	return id
}

// teamToken returns a new token of team id.
func (m *apiHarness) teamToken(secret, id string) string {
	m.T.Helper()
	return m.call(secret, "POST", "/teams/"+id+"/authentication-token", nil, 201).one(m.T).Attributes["token"].(string)
}

// project creates a project with extra attributes.
func (m *apiHarness) project(secret, org, name string, attrs map[string]any) testRes {
	m.T.Helper()
	a := map[string]any{"name": name}
	for k, v := range attrs {
		a[k] = v
	}
	return m.call(secret, "POST", "/organizations/"+org+"/projects", docBody("projects", a), 201).one(m.T)
}

// workspace creates a workspace, in project (or the Default Project when
// "").
func (m *apiHarness) workspace(secret, org, name, project string, attrs map[string]any) testRes {
	m.T.Helper()
	a := map[string]any{"name": name}
	for k, v := range attrs {
		a[k] = v
	}
	var rels []any
	if project != "" {
		rels = []any{"project", relTo("projects", project)}
	}
	return m.call(secret, "POST", "/organizations/"+org+"/workspaces", docBody("workspaces", a, rels...), 201).one(m.T)
}

// grant gives team access to project and returns the record's id.
func (m *apiHarness) grant(secret, team, project, access string, attrs map[string]any) string {
	m.T.Helper()
	a := map[string]any{"access": access}
	for k, v := range attrs {
		a[k] = v
	}
	return m.call(secret, "POST", "/team-projects", docBody("team-projects", a, "project", relTo("projects", project), "team", relTo("teams", team)), 200).one(m.T).ID
}

// world is a small organization used by many tests: an owner, a member
// with Manage projects, a member with read access to one project through
// a secret team, and an outsider.
type world struct {
	org                              string
	owner, manager, reader, outsider string // secrets
	ownerID, managerID, readerID     string
	managersTeam, readersTeam        string
	defaultProject, appProject       string
}

func (m *apiHarness) world() *world {
	m.T.Helper()
	w := &world{org: "acme"}
	w.ownerID, w.owner = m.user("olivia")
	w.managerID, w.manager = m.user("manny")
	w.readerID, w.reader = m.user("rita")
	_, w.outsider = m.user("oscar")
	o := m.org(w.owner, w.org)
	w.defaultProject = o.relID(m.T, "default-project")
	w.managersTeam = m.team(w.owner, w.org, "managers", "organization", map[string]any{"manage-projects": true}, w.managerID)
	w.readersTeam = m.team(w.owner, w.org, "readers", "secret", nil, w.readerID)
	w.appProject = m.project(w.owner, w.org, "app", nil).ID
	m.grant(w.owner, w.readersTeam, w.appProject, "read", nil)
	return w
}

// jsonUnmarshal decodes raw into v.
func jsonUnmarshal(raw json.RawMessage, v any) error { return json.Unmarshal(raw, v) }
