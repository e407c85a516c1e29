package mgmt

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/jsonapi"
)

func TestMgmtProjectCreate(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()

	doc := m.call(w.owner, "POST", "/organizations/acme/projects", docBody("projects", map[string]any{
		"name": "web", "description": "the web tier", "auto-destroy-activity-duration": "14d"}), 201)
	p := doc.one(t)
	if !strings.HasPrefix(p.ID, "prj-") || p.Type != "projects" || p.Attributes["name"] != "web" ||
		p.Attributes["description"] != "the web tier" || p.Attributes["auto-destroy-activity-duration"] != "14d" ||
		p.Attributes["workspace-count"] != 0.0 || p.Attributes["team-count"] != 0.0 || p.Links["self"] != "/api/v2/projects/"+p.ID {
		t.Errorf("created = %+v", p)
	}
	for _, perm := range []string{"can-update", "can-destroy", "can-create-workspace"} {
		if p.attr("permissions", perm) != true {
			t.Errorf("owner's %s = %v", perm, p.attr("permissions", perm))
		}
	}
	if p.relID(t, "organization") != "acme" || p.Relationships["organization"].Links["related"] != "/api/v2/organizations/acme" {
		t.Errorf("organization relationship = %+v", p.Relationships["organization"])
	}
	// Description left out is null.
	if d := m.project(w.owner, "acme", "plain", nil).Attributes["description"]; d != nil {
		t.Errorf("description = %v", d)
	}
	// Who may create (spec §5.2): owners and Manage projects; other
	// members 403; non-members and unknown organizations 404.
	m.project(w.manager, "acme", "by-manager", nil)
	m.fail(w.reader, "POST", "/organizations/acme/projects", docBody("projects", map[string]any{"name": "nope"}), 403, "")
	m.fail(w.outsider, "POST", "/organizations/acme/projects", docBody("projects", map[string]any{"name": "nope"}), 404, "")
	m.fail(w.owner, "POST", "/organizations/nowhere/projects", docBody("projects", map[string]any{"name": "nope"}), 404, "")
}

// Bad bodies are answered before anything is proposed, naming the
// attribute at fault; nothing is written.
func TestMgmtProjectBadBodies(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	path := "/organizations/acme/projects"
	attrs := func(kv ...any) map[string]any {
		a := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			a[kv[i].(string)] = kv[i+1]
		}
		return docBody("projects", a)
	}
	name := "/data/attributes/name"
	dur := "/data/attributes/auto-destroy-activity-duration"
	cases := []struct {
		name    string
		body    any
		status  int
		pointer string
		words   []string
	}{
		{"wrong type", docBody("workspaces", map[string]any{"name": "x1x"}), 422, "/data/type", []string{`"workspaces"`}},
		{"no type", map[string]any{"data": map[string]any{"attributes": map[string]any{"name": "xyz"}}}, 422, "/data/type", nil},
		{"no data", map[string]any{"meta": 1}, 422, "/data", nil},
		{"data not an object", map[string]any{"data": []any{}}, 422, "/data", nil},
		{"malformed JSON", `{"data": {"type": "projects",`, 400, "", []string{"malformed JSON"}},
		{"missing name", attrs("description", "x"), 422, name, []string{"Name is required"}},
		{"name not a string", attrs("name", 42), 422, name, []string{"must be a string"}},
		{"name null", attrs("name", nil), 422, name, []string{"must be a string"}},
		{"name too short", attrs("name", "ab"), 422, name, []string{"3 to 40 characters"}},
		{"name too long", attrs("name", strings.Repeat("n", 41)), 422, name, []string{"got 41"}},
		{"name bad characters", attrs("name", "web/tier"), 422, name, []string{"letters, numbers, spaces"}},
		{"name leading space", attrs("name", " web"), 422, name, []string{"start or end with a space"}},
		{"name trailing space", attrs("name", "web "), 422, name, []string{"start or end with a space"}},
		{"description too long", attrs("name", "web", "description", strings.Repeat("d", 257)), 422, "/data/attributes/description", []string{"at most 256"}},
		{"description not a string", attrs("name", "web", "description", true), 422, "/data/attributes/description", nil},
		{"duration 0d", attrs("name", "web", "auto-destroy-activity-duration", "0d"), 422, dur, []string{`"0d"`}},
		{"duration 12345h", attrs("name", "web", "auto-destroy-activity-duration", "12345h"), 422, dur, []string{`"12345h"`}},
		{"duration 5m", attrs("name", "web", "auto-destroy-activity-duration", "5m"), 422, dur, []string{`"5m"`}},
		{"duration without unit", attrs("name", "web", "auto-destroy-activity-duration", "14"), 422, dur, nil},
		{"duration leading zero", attrs("name", "web", "auto-destroy-activity-duration", "014d"), 422, dur, nil},
		{"duration a number", attrs("name", "web", "auto-destroy-activity-duration", 14), 422, dur, []string{"must be a string"}},
		{"execution mode", attrs("name", "web", "default-execution-mode", "cloud"), 422, "/data/attributes/default-execution-mode", nil},
		{"agent mode without pool", attrs("name", "web", "default-execution-mode", "agent"), 422, "/data/attributes/default-agent-pool-id", nil},
		{"overwrite without value", attrs("name", "web", "setting-overwrites", map[string]any{"default-execution-mode": true}), 422,
			"/data/attributes/setting-overwrites/execution-mode", nil},
		{"overwrites not an object", attrs("name", "web", "setting-overwrites", "yes"), 422, "/data/attributes/setting-overwrites", nil},
	}
	before := m.writer.Applied
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m.on(t).fail(w.owner, "POST", path, c.body, c.status, c.pointer, c.words...)
		})
	}
	if m.writer.Applied != before {
		t.Errorf("%d commands were proposed for bad bodies", m.writer.Applied-before)
	}
	// Several problems are answered together.
	doc := m.fail(w.owner, "POST", path, attrs("name", "x", "description", strings.Repeat("d", 300), "auto-destroy-activity-duration", "5m"), 422, "")
	if len(doc.Errors) != 3 {
		t.Errorf("errors = %+v", doc.Errors)
	}
	// A body that is not JSON:API or JSON is a 415.
	rec := m.send(w.owner, "POST", path, `{"data":{"type":"projects","attributes":{"name":"web"}}}`)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	req := httptest.NewRequest("POST", "/api/v2"+path, strings.NewReader(`name=web`))
	req.Header.Set("Authorization", "Bearer "+w.owner)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rr := httptest.NewRecorder()
	m.srv.Handler().ServeHTTP(rr, req)
	if rr.Code != 415 {
		t.Errorf("form body: %d", rr.Code)
	}
	// Names are unique per organization, ignoring case.
	m.fail(w.owner, "POST", path, attrs("name", "WEB"), 422, name, "has already been taken")
	m.project(w.owner, "acme", "web2", nil)
	other := m.org(w.owner, "other")
	m.project(w.owner, other.ID, "web", nil)
}

func TestMgmtProjectList(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	for _, n := range []string{"alpha", "Beta", "gamma", "delta", "epsilon"} {
		m.project(w.owner, "acme", n, nil)
	}
	list := func(secret, query string) *testDoc {
		t.Helper()
		return m.call(secret, "GET", "/organizations/acme/projects?"+query, nil, 200)
	}
	names := func(d *testDoc) []string {
		var out []string
		for _, r := range d.many(t) {
			out = append(out, r.Attributes["name"].(string))
		}
		return out
	}
	counts := func(d *testDoc) (total, matching int) {
		var c struct{ Total, Matching int }
		d.meta(t, "status-counts", &c)
		return c.Total, c.Matching
	}
	// Default order: creation order, stable, the Default Project first.
	d := list(w.owner, "")
	if got := names(d); !slices.Equal(got, []string{"Default Project", "app", "alpha", "Beta", "gamma", "delta", "epsilon"}) {
		t.Errorf("default order = %v", got)
	}
	if tot, match := counts(d); tot != 7 || match != 7 {
		t.Errorf("status-counts = %d/%d", tot, match)
	}
	// q: name contains, ignoring case.
	if d := list(w.owner, "q=ALP"); !slices.Equal(names(d), []string{"alpha"}) {
		t.Errorf("q=ALP = %v", names(d))
	} else if tot, match := counts(d); tot != 7 || match != 1 {
		t.Errorf("q counts = %d/%d", tot, match)
	}
	// filter[names] wins over q; comma-separated, ignoring case.
	if d := list(w.owner, "q=zzz&filter%5Bnames%5D=BETA,gamma,missing"); !slices.Equal(names(d), []string{"Beta", "gamma"}) {
		t.Errorf("filter[names] = %v", names(d))
	}
	// sort.
	if d := list(w.owner, "sort=name"); !slices.Equal(names(d), []string{"alpha", "app", "Beta", "Default Project", "delta", "epsilon", "gamma"}) {
		t.Errorf("sort=name = %v", names(d))
	}
	if d := list(w.owner, "sort=-name&page[size]=2"); !slices.Equal(names(d), []string{"gamma", "epsilon"}) {
		t.Errorf("sort=-name = %v", names(d))
	}
	m.fail(w.owner, "GET", "/organizations/acme/projects?sort=created", nil, 400, "sort", "name, -name")
	m.fail(w.owner, "GET", "/organizations/acme/projects?include=organization", nil, 400, "include", "include parameter")
	// Permission filters are relative to the caller: the reader has read
	// on app, which allows neither update nor creating workspaces.
	if d := list(w.reader, ""); !slices.Equal(names(d), []string{"app"}) {
		t.Errorf("reader sees %v", names(d))
	}
	if d := list(w.reader, "filter%5Bpermissions%5D%5Bupdate%5D=true"); len(names(d)) != 0 {
		t.Errorf("reader's updatable = %v", names(d))
	} else if tot, match := counts(d); tot != 1 || match != 0 {
		t.Errorf("reader's counts = %d/%d", tot, match)
	}
	creators := m.team(w.owner, "acme", "creators", "organization", nil, w.readerID)
	alpha := m.call(w.owner, "GET", "/organizations/acme/projects?filter[names]=alpha", nil, 200).ids(t)[0]
	m.grant(w.owner, creators, alpha, "custom", map[string]any{"workspace-access": map[string]any{"create": true}})
	if d := list(w.reader, "filter[permissions][create-workspace]"); !slices.Equal(names(d), []string{"alpha"}) {
		t.Errorf("reader's create-workspace = %v", names(d))
	}
	if d := list(w.reader, "filter[permissions][update]=false"); len(names(d)) != 2 {
		t.Errorf("filter=false is off: %v", names(d))
	}
	if d := list(w.manager, "filter[permissions][update]"); len(names(d)) != 7 {
		t.Errorf("manager's updatable = %v", names(d))
	}
	// Non-members: 404.
	m.fail(w.outsider, "GET", "/organizations/acme/projects", nil, 404, "")
}

func TestMgmtProjectListPagination(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	for i := range 23 {
		m.project(w.owner, "acme", fmt.Sprintf("proj-%02d", i), nil)
	} // 25 projects with Default Project and app
	get := func(query string) (*testDoc, jsonapi.Pagination) {
		t.Helper()
		rec := m.send(w.owner, "GET", "/organizations/acme/projects"+query, nil)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", query, rec.Code, rec.Body.String())
		}
		var d testDoc
		if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		var pg jsonapi.Pagination
		d.meta(t, "pagination", &pg)
		return &d, pg
	}
	d, pg := get("")
	if len(d.many(t)) != 20 || pg.CurrentPage != 1 || pg.PageSize != 20 || pg.TotalPages != 2 || pg.TotalCount != 25 ||
		pg.PrevPage != nil || *pg.NextPage != 2 || d.Links["prev"] != nil ||
		*d.Links["self"] != "http://example.com/api/v2/organizations/acme/projects?page%5Bnumber%5D=1&page%5Bsize%5D=20" {
		t.Errorf("default page: %d items, %+v, links %v", len(d.many(t)), pg, *d.Links["self"])
	}
	// Percent-encoded brackets, as clients that do not encode them send.
	d, pg = get("?page%5Bnumber%5D=2&page%5Bsize%5D=10&q=proj-")
	if len(d.many(t)) != 10 || pg.CurrentPage != 2 || pg.TotalCount != 23 || *pg.PrevPage != 1 || *pg.NextPage != 3 ||
		!strings.Contains(*d.Links["next"], "q=proj-") || !strings.HasPrefix(*d.Links["last"], "http://example.com/") {
		t.Errorf("page 2 of 10: %d items, %+v %v", len(d.many(t)), pg, d.Links)
	}
	// The last page: next is null.
	d, pg = get("?page[number]=3&page[size]=10")
	if len(d.many(t)) != 5 || pg.NextPage != nil || d.Links["next"] != nil || *pg.PrevPage != 2 {
		t.Errorf("last page: %d, %+v", len(d.many(t)), pg)
	}
	// Past the end: empty, and the meta echoes the page asked for.
	d, pg = get("?page[number]=7&page[size]=10")
	if len(d.many(t)) != 0 || pg.CurrentPage != 7 || pg.TotalPages != 3 || pg.NextPage != nil || *pg.PrevPage != 6 {
		t.Errorf("past the end: %d, %+v", len(d.many(t)), pg)
	}
	// The size is capped at 100; bad values are 400s; unknown parameters
	// are ignored.
	if _, pg = get("?page[size]=1000&whatever=1"); pg.PageSize != 100 || pg.TotalPages != 1 {
		t.Errorf("page[size]=1000: %+v", pg)
	}
	m.fail(w.owner, "GET", "/organizations/acme/projects?page[size]=0", nil, 400, "page[size]")
	m.fail(w.owner, "GET", "/organizations/acme/projects?page[number]=abc", nil, 400, "page[number]")
	// The same pages with sort=name cover every project exactly once.
	var seen []string
	for n := 1; n <= 3; n++ {
		d, _ := get(fmt.Sprintf("?sort=name&page[size]=10&page[number]=%d", n))
		seen = append(seen, d.ids(t)...)
	}
	slices.Sort(seen)
	if len(slices.Compact(seen)) != 25 {
		t.Errorf("pages hold %d distinct projects", len(slices.Compact(seen)))
	}
}

func TestMgmtProjectShowUpdateDelete(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	path := "/projects/" + w.appProject

	p := m.call(w.reader, "GET", path, nil, 200).one(t)
	if p.Attributes["name"] != "app" || p.attr("permissions", "can-update") != false || p.attr("permissions", "can-destroy") != false ||
		p.Attributes["team-count"] != 1.0 {
		t.Errorf("reader's view = %v", p.Attributes)
	}
	if _, has := p.Attributes["auto-destroy-activity-duration"]; !has {
		t.Error("show has no auto-destroy-activity-duration")
	}
	m.fail(w.outsider, "GET", path, nil, 404, "")
	m.fail(w.owner, "GET", "/projects/prj-doesnotexist", nil, 404, "")

	// Update: 403 for a member who may not; attributes left out stay.
	m.fail(w.reader, "PATCH", path, docBody("projects", map[string]any{"name": "renamed"}), 403, "")
	m.fail(w.outsider, "PATCH", path, docBody("projects", map[string]any{"name": "renamed"}), 404, "")
	m.call(w.owner, "PATCH", path, docBody("projects", map[string]any{"description": "d", "auto-destroy-activity-duration": "3d"}), 200)
	u := m.call(w.manager, "PATCH", path, docBody("projects", map[string]any{"name": "renamed"}), 200).one(t)
	if u.Attributes["name"] != "renamed" || u.Attributes["description"] != "d" || u.Attributes["auto-destroy-activity-duration"] != "3d" {
		t.Errorf("updated = %v", u.Attributes)
	}
	u = m.call(w.owner, "PATCH", path, docBody("projects", map[string]any{"description": nil, "auto-destroy-activity-duration": nil}), 200).one(t)
	if u.Attributes["description"] != nil || u.Attributes["auto-destroy-activity-duration"] != nil {
		t.Errorf("null clears: %v", u.Attributes)
	}
	m.fail(w.owner, "PATCH", path, docBody("projects", map[string]any{"name": "x"}), 422, "/data/attributes/name")
	m.fail(w.owner, "PATCH", path, docBody("projects", map[string]any{"name": "Default project"}), 422, "/data/attributes/name", "already been taken")
	m.fail(w.owner, "PATCH", path, docBody("teams", map[string]any{"name": "xyz"}), 422, "/data/type")
	m.fail(w.owner, "PATCH", path, map[string]any{"data": map[string]any{"type": "projects", "id": "prj-other"}}, 422, "/data/id")
	for _, attr := range []string{"workspace-count", "team-count", "permissions", "is-default", "created-at"} {
		m.fail(w.owner, "PATCH", path, docBody("projects", map[string]any{attr: 1, "description": "changed"}), 422, "/data/attributes/"+attr, "read-only")
	}

	// Delete: 403 visible but not allowed, 404 invisible; refused while
	// workspaces remain, and for the Default Project (409).
	m.fail(w.reader, "DELETE", path, nil, 403, "")
	m.fail(w.outsider, "DELETE", path, nil, 404, "")
	ws := m.workspace(w.owner, "acme", "site", w.appProject, nil)
	m.fail(w.owner, "DELETE", path, nil, 409, "", "still contains 1 workspaces")
	m.fail(w.owner, "DELETE", "/projects/"+w.defaultProject, nil, 409, "", "default project")
	m.call(w.owner, "DELETE", "/workspaces/"+ws.ID, nil, 204)
	m.call(w.manager, "DELETE", path, nil, 204)
	m.fail(w.owner, "GET", path, nil, 404, "")
	// Its team access went with it.
	m.fail(w.owner, "GET", "/team-projects?filter[project][id]="+w.appProject, nil, 404, "")
}

// Spec §2: workspaces created later inherit the project's
// auto-destroy-activity-duration; an update reaches every workspace
// without its own override.
func TestMgmtAutoDestroyInheritance(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	p := m.project(w.owner, "acme", "ephemeral", map[string]any{"auto-destroy-activity-duration": "14d"})
	inherits := m.workspace(w.owner, "acme", "inherits", p.ID, nil)
	own := m.workspace(w.owner, "acme", "own", p.ID, map[string]any{"auto-destroy-activity-duration": "3d"})
	if inherits.Attributes["auto-destroy-activity-duration"] != "14d" || inherits.Attributes["inherits-project-auto-destroy"] != true {
		t.Errorf("new workspace = %v", inherits.Attributes)
	}
	if own.Attributes["auto-destroy-activity-duration"] != "3d" || own.Attributes["inherits-project-auto-destroy"] != false {
		t.Errorf("override = %v", own.Attributes)
	}
	m.call(w.owner, "PATCH", "/projects/"+p.ID, docBody("projects", map[string]any{"auto-destroy-activity-duration": "48h"}), 200)
	if got := m.call(w.owner, "GET", "/workspaces/"+inherits.ID, nil, 200).one(t).Attributes["auto-destroy-activity-duration"]; got != "48h" {
		t.Errorf("inheriting workspace after update = %v", got)
	}
	if got := m.call(w.owner, "GET", "/workspaces/"+own.ID, nil, 200).one(t).Attributes["auto-destroy-activity-duration"]; got != "3d" {
		t.Errorf("overriding workspace after update = %v", got)
	}
	// Returning to inheritance takes the project's current value; moving
	// takes the destination's.
	back := m.call(w.owner, "PATCH", "/workspaces/"+own.ID, docBody("workspaces", map[string]any{"inherits-project-auto-destroy": true}), 200).one(t)
	if back.Attributes["auto-destroy-activity-duration"] != "48h" {
		t.Errorf("back to inheriting = %v", back.Attributes)
	}
	m.call(w.owner, "POST", "/projects/"+w.appProject+"/relationships/workspaces",
		map[string]any{"data": []any{map[string]any{"type": "workspaces", "id": own.ID}}}, 204)
	if got := m.call(w.owner, "GET", "/workspaces/"+own.ID, nil, 200).one(t).Attributes["auto-destroy-activity-duration"]; got != nil {
		t.Errorf("moved to a project without a duration = %v", got)
	}
	m.fail(w.owner, "PATCH", "/workspaces/"+own.ID, docBody("workspaces", map[string]any{"auto-destroy-activity-duration": "0d"}), 422,
		"/data/attributes/auto-destroy-activity-duration")
}

// Spec §3, §5.5, §7: all listed workspaces move or none; 404 for the
// destination, 403 for a workspace or a source.
func TestMgmtMoveWorkspaces(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	src := m.project(w.owner, "acme", "src", nil).ID
	ws1 := m.workspace(w.owner, "acme", "one", src, nil).ID
	ws2 := m.workspace(w.owner, "acme", "two", w.defaultProject, nil).ID
	body := func(ids ...string) map[string]any {
		var data []any
		for _, id := range ids {
			data = append(data, map[string]any{"type": "workspaces", "id": id})
		}
		return map[string]any{"data": data}
	}
	projectOf := func(id string) string {
		return m.call(w.owner, "GET", "/workspaces/"+id, nil, 200).one(t).relID(t, "project")
	}
	movePath := "/projects/" + w.appProject + "/relationships/workspaces"

	// A mover team with move on the destination only.
	movers := m.team(w.owner, "acme", "movers", "organization", nil, w.readerID)
	m.grant(w.owner, movers, w.appProject, "custom", map[string]any{"workspace-access": map[string]any{"move": true}})
	m.fail(w.reader, "POST", movePath, body(ws1), 403, "", "nothing was moved")
	m.grant(w.owner, movers, src, "admin", nil)
	// ws2 is in the Default Project, where the reader may not move.
	m.fail(w.reader, "POST", movePath, body(ws1, ws2), 403, "")
	m.fail(w.reader, "POST", movePath, body(ws1, "ws-doesnotexist"), 403, "", "not found")
	if projectOf(ws1) != src || projectOf(ws2) != w.defaultProject {
		t.Fatal("a refused move moved something")
	}
	// The destination: unknown, or not movable into, is a 404.
	m.fail(w.reader, "POST", "/projects/prj-nowhere/relationships/workspaces", body(ws1), 404, "")
	m.fail(w.reader, "POST", "/projects/"+w.defaultProject+"/relationships/workspaces", body(ws1), 404, "")
	m.fail(w.outsider, "POST", movePath, body(ws1), 404, "")
	// Malformed bodies.
	m.fail(w.owner, "POST", movePath, map[string]any{"data": []any{map[string]any{"type": "projects", "id": ws1}}}, 422, "/data/0/type")
	m.fail(w.owner, "POST", movePath, docBody("workspaces", nil), 422, "/data")
	// The allowed moves.
	m.call(w.reader, "POST", movePath, body(ws1), 204)
	m.call(w.owner, "POST", movePath, body(ws1, ws2), 204)
	if projectOf(ws1) != w.appProject || projectOf(ws2) != w.appProject {
		t.Error("workspaces did not move")
	}
	if p := m.call(w.owner, "GET", "/projects/"+w.appProject, nil, 200).one(t); p.Attributes["workspace-count"] != 2.0 {
		t.Errorf("workspace-count = %v", p.Attributes["workspace-count"])
	}
	// relationships.project of a workspace update moves it too, with the
	// same rules.
	upd := m.call(w.owner, "PATCH", "/workspaces/"+ws2, docBody("workspaces", nil, "project", relTo("projects", src)), 200).one(t)
	if upd.relID(t, "project") != src {
		t.Errorf("update moved to %s", upd.relID(t, "project"))
	}
	m.fail(w.reader, "PATCH", "/workspaces/"+ws1, docBody("workspaces", nil, "project", relTo("projects", w.defaultProject)), 404, "")
}

// Issue item 7: attributes go-tfe sends next to the spec's round-trip.
func TestMgmtProjectClientAttributes(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	body := docBody("projects", map[string]any{"name": "tagged", "default-execution-mode": "agent", "default-agent-pool-id": "apool-1",
		"setting-overwrites": map[string]any{"default-execution-mode": true, "default-agent-pool": true}},
		"tag-bindings", map[string]any{"data": []any{
			map[string]any{"type": "tag-bindings", "attributes": map[string]any{"key": "env", "value": "prod"}},
			map[string]any{"type": "tag-bindings", "attributes": map[string]any{"key": "tier"}}}})
	p := m.call(w.owner, "POST", "/organizations/acme/projects", body, 201).one(t)
	if p.Attributes["default-execution-mode"] != "agent" || p.attr("setting-overwrites", "default-execution-mode") != true ||
		p.attr("setting-overwrites", "default-agent-pool") != true || p.relID(t, "default-agent-pool") != "apool-1" {
		t.Errorf("created = %v %v", p.Attributes, p.Relationships)
	}
	tags := m.call(w.owner, "GET", "/projects/"+p.ID+"?include=effective_tag_bindings", nil, 200)
	if len(tags.Included) != 2 || tags.Included[0].Type != "effective-tag-bindings" || tags.Included[0].Attributes["key"] != "env" ||
		tags.Included[1].Attributes["value"] != "" {
		t.Errorf("included = %+v", tags.Included)
	}
	var linkage []jsonapi.Identifier
	_ = json.Unmarshal(tags.one(t).Relationships["effective-tag-bindings"].Data, &linkage)
	if len(linkage) != 2 || linkage[0].ID != tags.Included[0].ID {
		t.Errorf("linkage = %v", linkage)
	}
	list := m.call(w.owner, "GET", "/projects/"+p.ID+"/tag-bindings", nil, 200).many(t)
	if len(list) != 2 || list[0].Type != "tag-bindings" {
		t.Errorf("tag-bindings = %+v", list)
	}
	// Merging bindings: a key sent changes, others stay; bad entries are
	// 422s naming them.
	merged := m.call(w.owner, "PATCH", "/projects/"+p.ID+"/tag-bindings", map[string]any{"data": []any{
		map[string]any{"type": "tag-bindings", "attributes": map[string]any{"key": "env", "value": "dev"}}}}, 200).many(t)
	if len(merged) != 2 || merged[0].Attributes["value"] != "dev" {
		t.Errorf("merged = %+v", merged)
	}
	m.fail(w.owner, "PATCH", "/projects/"+p.ID+"/tag-bindings", map[string]any{"data": []any{
		map[string]any{"type": "tag-bindings", "attributes": map[string]any{"key": 5}}}}, 422, "/data/0/attributes/key")
	m.fail(w.reader, "PATCH", "/projects/"+w.appProject+"/tag-bindings", map[string]any{"data": []any{}}, 403, "")
	// Clearing an overwrite returns to the organization's default.
	u := m.call(w.owner, "PATCH", "/projects/"+p.ID, docBody("projects", map[string]any{
		"setting-overwrites": map[string]any{"default-execution-mode": false, "default-agent-pool": false}}), 200).one(t)
	if u.Attributes["default-execution-mode"] != "remote" || u.attr("setting-overwrites", "default-execution-mode") != false {
		t.Errorf("cleared = %v", u.Attributes)
	}
	// The empty stacks list go-tfe reads.
	st := m.call(w.reader, "GET", "/organizations/acme/stacks", nil, 200)
	if len(st.many(t)) != 0 {
		t.Errorf("stacks = %s", st.Data)
	}
	m.fail(w.outsider, "GET", "/organizations/acme/stacks", nil, 404, "")
}
