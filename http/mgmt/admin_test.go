package mgmt

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// adminWorld: two organizations and four workspaces whose current runs are
// in different statuses, created at different times.
type adminWorld struct {
	*world
	alpha, beta, gamma, delta string // workspace IDs
	gammaRun, deltaRun        string
}

func (m *apiHarness) adminWorld() *adminWorld {
	m.T.Helper()
	w := &adminWorld{world: m.world()}
	m.org(w.owner, "globex")
	w.alpha = m.workspace(w.owner, "acme", "alpha", "", map[string]any{"vcs-repo": map[string]any{"identifier": "acme/alpha"}}).ID
	m.clock.Advance(time.Minute)
	w.beta = m.workspace(w.owner, "acme", "beta", w.appProject, nil).ID
	m.clock.Advance(time.Minute)
	w.gamma = m.workspace(w.owner, "globex", "gamma", "", nil).ID
	m.clock.Advance(time.Minute)
	w.delta = m.workspace(w.owner, "globex", "delta-net", "", nil).ID
	m.clock.Advance(time.Minute)
	run := func(ws string) string {
		return m.call(w.owner, "POST", "/runs", docBody("runs", map[string]any{"message": "go"}, "workspace", relTo("workspaces", ws)), 201).one(m.T).ID
	}
	w.deltaRun = run(w.delta)
	m.clock.Advance(time.Minute)
	w.gammaRun = run(w.gamma)
	// delta's run plans: pending → planning → planned.
	for _, st := range []string{mgmt.RunPlanning, mgmt.RunPlanned} {
		m.Apply(store.RunAdvanceRequestType, &store.RunAdvanceRequest{ID: w.deltaRun, Status: st, Now: m.clock.Now()})
	}
	// beta gets a state version, its latest change.
	m.clock.Advance(time.Minute)
	m.call(w.owner, "POST", "/workspaces/"+w.beta+"/actions/lock", nil, 200)
	m.call(w.owner, "POST", "/workspaces/"+w.beta+"/state-versions", stateBody(stateFile(1, "l-beta", ""), nil), 201)
	return w
}

func TestMgmtAdminWorkspaces(t *testing.T) {
	m := newAPIHarness(t)
	w := m.adminWorld()
	list := func(query string) *testDoc {
		t.Helper()
		return m.call(m.root, "GET", "/admin/workspaces?"+query, nil, 200)
	}

	d := list("")
	if got := d.ids(t); !slices.Equal(got, []string{w.alpha, w.beta, w.gamma, w.delta}) {
		t.Errorf("default order = %v", got)
	}
	var counts map[string]int
	d.meta(t, "status-counts", &counts)
	for _, s := range []string{"pending", "planning", "planned", "confirmed", "applying", "applied", "discarded", "errored", "canceled",
		"policy-checking", "policy-override", "policy-checked", "none", "total"} {
		if _, ok := counts[s]; !ok {
			t.Errorf("status-counts lacks %q: %v", s, counts)
		}
	}
	if counts["pending"] != 1 || counts["planned"] != 1 || counts["none"] != 2 || counts["total"] != 4 {
		t.Errorf("status-counts = %v", counts)
	}
	a := d.many(t)[0]
	if a.Attributes["name"] != "alpha" || a.Attributes["locked"] != false || a.attr("vcs-repo", "identifier") != "acme/alpha" ||
		a.relID(t, "organization") != "acme" || a.relID(t, "current-run") != "" || a.Links["self"] != "/api/v2/organizations/acme/workspaces/alpha" {
		t.Errorf("admin view = %+v", a)
	}
	if len(a.Attributes) != 3 {
		t.Errorf("admin view shows more than the spec's fields: %v", a.Attributes)
	}
	// q searches workspace and organization names.
	if got := list("q=GLOBEX").ids(t); !slices.Equal(got, []string{w.gamma, w.delta}) {
		t.Errorf("q=GLOBEX = %v", got)
	}
	if got := list("q=alp").ids(t); !slices.Equal(got, []string{w.alpha}) {
		t.Errorf("q=alp = %v", got)
	}
	// filter[current_run][status]: comma-separated statuses; counts are
	// of the q matches, before the status filter.
	d = list("filter%5Bcurrent_run%5D%5Bstatus%5D=pending,planned")
	if got := d.ids(t); !slices.Equal(got, []string{w.gamma, w.delta}) {
		t.Errorf("status filter = %v", got)
	}
	d.meta(t, "status-counts", &counts)
	if counts["total"] != 4 {
		t.Errorf("counts under a status filter = %v", counts)
	}
	if got := list("filter[current_run][status]=planned").ids(t); !slices.Equal(got, []string{w.delta}) {
		t.Errorf("planned = %v", got)
	}
	m.fail(m.root, "GET", "/admin/workspaces?filter[current_run][status]=bogus", nil, 400, "filter[current_run][status]")
	// The three sorts, each reversible.
	for _, c := range []struct {
		sort string
		want []string
	}{
		{"name", []string{w.alpha, w.beta, w.delta, w.gamma}},
		{"-name", []string{w.gamma, w.delta, w.beta, w.alpha}},
		{"current-run.created-at", []string{w.alpha, w.beta, w.delta, w.gamma}},
		{"-current-run.created-at", []string{w.gamma, w.delta, w.alpha, w.beta}},
		{"latest-change-at", []string{w.alpha, w.gamma, w.delta, w.beta}},
		{"-latest-change-at", []string{w.beta, w.delta, w.gamma, w.alpha}},
	} {
		if got := list("sort=" + c.sort).ids(t); !slices.Equal(got, c.want) {
			t.Errorf("sort=%s = %v, want %v", c.sort, got, c.want)
		}
	}
	m.fail(m.root, "GET", "/admin/workspaces?sort=created-at", nil, 400, "sort")
	// Includes.
	d = list("include=organization,current_run&q=globex")
	types := map[string]int{}
	for _, r := range d.Included {
		types[r.Type]++
	}
	if types["organizations"] != 1 || types["runs"] != 2 || types["users"] != 0 {
		t.Errorf("included = %v", types)
	}
	d = list("include=organization.owners&q=acme")
	types = map[string]int{}
	for _, r := range d.Included {
		types[r.Type]++
		if r.Type == "users" && r.ID != w.ownerID {
			t.Errorf("included owner %s", r.ID)
		}
	}
	if types["organizations"] != 1 || types["users"] != 1 {
		t.Errorf("included owners = %v", types)
	}
	m.fail(m.root, "GET", "/admin/workspaces?include=projects", nil, 400, "include")
	// Pagination.
	d = list("page[size]=3&page[number]=2")
	if len(d.many(t)) != 1 || d.Links["next"] != nil {
		t.Errorf("page 2 = %v", d.ids(t))
	}
	// Show, with include; delete.
	s := m.call(m.root, "GET", "/admin/workspaces/"+w.delta+"?include=current_run", nil, 200)
	if s.one(t).relID(t, "current-run") != w.deltaRun || len(s.Included) != 1 || s.Included[0].Attributes["status"] != "planned" {
		t.Errorf("show = %s %+v", s.Data, s.Included)
	}
	m.fail(m.root, "GET", "/admin/workspaces/ws-none", nil, 404, "")
	m.call(m.root, "DELETE", "/admin/workspaces/"+w.delta, nil, 204)
	m.fail(m.root, "GET", "/admin/workspaces/"+w.delta, nil, 404, "")
	m.fail(m.root, "DELETE", "/admin/workspaces/"+w.delta, nil, 404, "")
	if got := list("").ids(t); len(got) != 3 {
		t.Errorf("after delete = %v", got)
	}
}

func TestMgmtAdminOrganizationList(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	m.call(w.owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": "globex", "email": "billing@globex.example"}), 201)
	m.call(w.owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": "initech", "email": "acme-fan@initech.example"}), 201)
	list := func(query string) []string {
		t.Helper()
		return m.call(m.root, "GET", "/admin/organizations?"+query, nil, 200).ids(t)
	}
	if got := list(""); !slices.Equal(got, []string{"acme", "globex", "initech"}) {
		t.Errorf("all = %v", got)
	}
	// q searches name and e-mail, and wins over q[email] and q[name].
	if got := list("q=acme"); !slices.Equal(got, []string{"acme", "initech"}) {
		t.Errorf("q=acme = %v", got)
	}
	if got := list("q=acme&q[name]=globex"); !slices.Equal(got, []string{"acme", "initech"}) {
		t.Errorf("q wins = %v", got)
	}
	if got := list("q%5Bemail%5D=billing"); !slices.Equal(got, []string{"globex"}) {
		t.Errorf("q[email] = %v", got)
	}
	if got := list("q[email]=example&q[name]=ini"); !slices.Equal(got, []string{"initech"}) {
		t.Errorf("q[email]+q[name] = %v", got)
	}
	if got := list("q[email]=billing&q[name]=ini"); len(got) != 0 {
		t.Errorf("both must match = %v", got)
	}
	// Producer filters.
	m.call(m.root, "PATCH", "/admin/organizations/globex", docBody("organizations", map[string]any{"global-provider-sharing": true}), 200)
	m.call(m.root, "PATCH", "/admin/organizations/acme/relationships/module-consumers",
		map[string]any{"data": []any{map[string]any{"type": "organizations", "id": "initech"}}}, 204)
	if got := list("filter[module_producer]=true"); !slices.Equal(got, []string{"acme"}) {
		t.Errorf("module producers = %v", got)
	}
	if got := list("filter[module_producer]=false"); !slices.Equal(got, []string{"globex", "initech"}) {
		t.Errorf("not module producers = %v", got)
	}
	if got := list("filter[provider_producer]=true"); !slices.Equal(got, []string{"globex"}) {
		t.Errorf("provider producers = %v", got)
	}
	m.fail(m.root, "GET", "/admin/organizations?filter[module_producer]=yes", nil, 400, "filter[module_producer]")
	// include=owners; status-counts.
	m.call(m.root, "PATCH", "/admin/organizations/initech", docBody("organizations", map[string]any{"is-disabled": true}), 200)
	d := m.call(m.root, "GET", "/admin/organizations?include=owners&page[size]=2", nil, 200)
	var counts map[string]int
	d.meta(t, "status-counts", &counts)
	if counts["total"] != 3 || counts["active"] != 2 || counts["disabled"] != 1 {
		t.Errorf("status-counts = %v", counts)
	}
	if len(d.Included) != 1 || d.Included[0].Type != "users" || d.Included[0].ID != w.ownerID {
		t.Errorf("included owners = %+v", d.Included)
	}
	var owners []map[string]string
	_ = jsonUnmarshal(d.many(t)[0].Relationships["owners"].Data, &owners)
	if len(owners) != 1 || owners[0]["id"] != w.ownerID {
		t.Errorf("owners relationship = %v", owners)
	}
	m.fail(m.root, "GET", "/admin/organizations?include=teams", nil, 400, "include")
	s := m.call(m.root, "GET", "/admin/organizations/acme?include=owners", nil, 200)
	o := s.one(t)
	if o.Attributes["notification-email"] != "ops@acme.example" || o.Attributes["external-id"] == "" || o.Attributes["apply-timeout"] != "24h" ||
		o.Attributes["plan-timeout"] != "2h" || o.Attributes["workspace-limit"] != nil || len(s.Included) != 1 ||
		o.Relationships["module-consumers"].Links["related"] != "/api/v2/admin/organizations/acme/relationships/module-consumers" {
		t.Errorf("show = %+v", o)
	}
	m.fail(m.root, "GET", "/admin/organizations/nowhere", nil, 404, "")
}

func TestMgmtAdminOrganizationUpdate(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	path := "/admin/organizations/acme"
	patch := func(attrs map[string]any) testRes {
		t.Helper()
		return m.call(m.root, "PATCH", path, docBody("organizations", attrs), 200).one(t)
	}
	o := patch(map[string]any{"access-beta-tools": true, "global-module-sharing": true, "global-provider-sharing": true,
		"is-disabled": false, "apply-timeout": "12h", "plan-timeout": "90m", "workspace-limit": 10, "tool-worker-sudo-enabled": true})
	for k, v := range map[string]any{"access-beta-tools": true, "global-module-sharing": true, "global-provider-sharing": true,
		"is-disabled": false, "apply-timeout": "12h", "plan-timeout": "90m", "workspace-limit": 10.0, "tool-worker-sudo-enabled": true,
		"tool-build-worker-apply-timeout": "12h", "tool-build-worker-plan-timeout": "90m"} {
		if o.Attributes[k] != v {
			t.Errorf("%s = %v, want %v", k, o.Attributes[k], v)
		}
	}
	// Left out attributes keep their values; null timeouts return to the
	// defaults; the deprecated aliases set the same values.
	o = patch(map[string]any{"apply-timeout": nil, "tool-build-worker-plan-timeout": "3h"})
	if o.Attributes["apply-timeout"] != "24h" || o.Attributes["plan-timeout"] != "3h" || o.Attributes["access-beta-tools"] != true {
		t.Errorf("defaults and aliases = %v", o.Attributes)
	}
	o = patch(map[string]any{"workspace-limit": nil})
	if o.Attributes["workspace-limit"] != nil {
		t.Errorf("null workspace-limit = %v", o.Attributes["workspace-limit"])
	}
	// data.type may be left out or empty (go-tfe), but not be wrong.
	m.call(m.root, "PATCH", path, map[string]any{"data": map[string]any{"attributes": map[string]any{"plan-timeout": "1h"}}}, 200)
	m.call(m.root, "PATCH", path, map[string]any{"data": map[string]any{"type": "", "attributes": map[string]any{"plan-timeout": "1h"}}}, 200)
	m.fail(m.root, "PATCH", path, docBody("workspaces", map[string]any{"plan-timeout": "1h"}), 422, "/data/type")
	m.fail(m.root, "PATCH", path, map[string]any{"data": map[string]any{"type": "organizations", "id": "globex"}}, 422, "/data/id")
	// Read-only attributes are refused, never dropped; nothing changes.
	before := m.call(m.root, "GET", path, nil, 200).one(t).Attributes
	for _, attr := range []string{"name", "external-id", "notification-email", "sso-enabled"} {
		m.fail(m.root, "PATCH", path, docBody("organizations", map[string]any{attr: before[attr], "plan-timeout": "3h"}), 422, "/data/attributes/"+attr, "read-only")
	}
	if after := m.call(m.root, "GET", path, nil, 200).one(t).Attributes; after["plan-timeout"] != before["plan-timeout"] {
		t.Errorf("a refused patch changed plan-timeout: %v -> %v", before["plan-timeout"], after["plan-timeout"])
	}
	// Malformed values: 422 naming each.
	for _, c := range []struct {
		attrs   map[string]any
		pointer string
	}{
		{map[string]any{"apply-timeout": "soon"}, "/data/attributes/apply-timeout"},
		{map[string]any{"plan-timeout": "-1h"}, "/data/attributes/plan-timeout"},
		{map[string]any{"plan-timeout": 7200}, "/data/attributes/plan-timeout"},
		{map[string]any{"tool-build-worker-apply-timeout": "0s"}, "/data/attributes/tool-build-worker-apply-timeout"},
		{map[string]any{"apply-timeout": "1h", "tool-build-worker-apply-timeout": "2h"}, "/data/attributes/tool-build-worker-apply-timeout"},
		{map[string]any{"workspace-limit": -1}, "/data/attributes/workspace-limit"},
		{map[string]any{"workspace-limit": "5"}, "/data/attributes/workspace-limit"},
		{map[string]any{"workspace-limit": 1.5}, "/data/attributes/workspace-limit"},
		{map[string]any{"is-disabled": "true"}, "/data/attributes/is-disabled"},
		{map[string]any{"access-beta-tools": nil}, "/data/attributes/access-beta-tools"},
	} {
		m.on(t).fail(m.root, "PATCH", path, docBody("organizations", c.attrs), 422, c.pointer)
	}
	m.fail(m.root, "PATCH", "/admin/organizations/nowhere", docBody("organizations", nil), 404, "")

	// is-disabled: members lose the organization; administrators keep it.
	patch(map[string]any{"is-disabled": true})
	m.fail(w.owner, "GET", "/organizations/acme", nil, 404, "")
	m.fail(w.reader, "GET", "/projects/"+w.appProject, nil, 404, "")
	if got := m.call(w.owner, "GET", "/organizations", nil, 200).ids(t); len(got) != 0 {
		t.Errorf("disabled organization listed: %v", got)
	}
	m.call(m.root, "GET", "/organizations/acme", nil, 200)
	patch(map[string]any{"is-disabled": false})
	m.call(w.owner, "GET", "/organizations/acme", nil, 200)

	// workspace-limit below the count blocks new workspaces only; 0 has
	// no effect.
	m.workspace(w.owner, "acme", "one", "", nil)
	m.workspace(w.owner, "acme", "two", "", nil)
	patch(map[string]any{"workspace-limit": 1})
	m.fail(w.owner, "POST", "/organizations/acme/workspaces", docBody("workspaces", map[string]any{"name": "three"}), 409, "", "workspace limit")
	m.call(w.owner, "GET", "/organizations/acme/workspaces/one", nil, 200)
	m.call(w.owner, "PATCH", "/organizations/acme/workspaces/two", docBody("workspaces", map[string]any{"description": "still writable"}), 200)
	patch(map[string]any{"workspace-limit": 0})
	m.workspace(w.owner, "acme", "three", "", nil)
}

func TestMgmtAdminConsumers(t *testing.T) {
	m := newAPIHarness(t)
	w := m.world()
	for _, n := range []string{"globex", "initech", "hooli"} {
		m.org(w.owner, n)
	}
	base := "/admin/organizations/acme/relationships/"
	ids := func(names ...string) map[string]any {
		var data []any
		for _, n := range names {
			data = append(data, map[string]any{"type": "organizations", "id": n})
		}
		return map[string]any{"data": data}
	}
	consumers := func(kind, query string) []string {
		t.Helper()
		return m.call(m.root, "GET", base+kind+"-consumers"+query, nil, 200).ids(t)
	}
	if got := consumers("module", ""); len(got) != 0 {
		t.Errorf("no sharing configuration = %v", got)
	}
	// Replacing the consumers turns global sharing off (spec §3).
	m.call(m.root, "PATCH", "/admin/organizations/acme", docBody("organizations", map[string]any{"global-module-sharing": true}), 200)
	m.call(m.root, "PATCH", base+"module-consumers", ids("initech", "globex", "globex"), 204)
	if got := consumers("module", ""); !slices.Equal(got, []string{"globex", "initech"}) {
		t.Errorf("module consumers = %v", got)
	}
	if got := consumers("module", "?page[size]=1&page[number]=2"); !slices.Equal(got, []string{"initech"}) {
		t.Errorf("page 2 = %v", got)
	}
	o := m.call(m.root, "GET", "/admin/organizations/acme", nil, 200).one(t)
	if o.Attributes["global-module-sharing"] != false {
		t.Errorf("global module sharing after replace = %v", o.Attributes["global-module-sharing"])
	}
	// Turning global sharing on disables the configured consumers: the
	// list is empty.
	m.call(m.root, "PATCH", "/admin/organizations/acme", docBody("organizations", map[string]any{"global-module-sharing": true}), 200)
	if got := consumers("module", ""); len(got) != 0 {
		t.Errorf("consumers under global sharing = %v", got)
	}
	// Provider consumers, likewise.
	m.call(m.root, "PATCH", base+"provider-consumers", ids("hooli"), 204)
	if got := consumers("provider", ""); !slices.Equal(got, []string{"hooli"}) {
		t.Errorf("provider consumers = %v", got)
	}
	m.call(m.root, "PATCH", "/admin/organizations/acme", docBody("organizations", map[string]any{"global-provider-sharing": true}), 200)
	if got := consumers("provider", ""); len(got) != 0 {
		t.Errorf("provider consumers under global sharing = %v", got)
	}
	// Malformed: a consumer that does not exist, the organization itself,
	// a wrong type: 422, nothing changes.
	m.call(m.root, "PATCH", base+"module-consumers", ids("globex"), 204)
	m.fail(m.root, "PATCH", base+"module-consumers", ids("initech", "nowhere"), 422, "/data/1/id", "does not exist")
	m.fail(m.root, "PATCH", base+"module-consumers", ids("acme"), 422, "/data/0/id", "own consumer")
	m.fail(m.root, "PATCH", base+"module-consumers", map[string]any{"data": []any{map[string]any{"type": "users", "id": "globex"}}}, 422, "/data/0/type")
	m.fail(m.root, "PATCH", base+"module-consumers", docBody("organizations", nil), 422, "/data")
	if got := consumers("module", ""); !slices.Equal(got, []string{"globex"}) {
		t.Errorf("a refused replace changed the consumers: %v", got)
	}
	m.fail(m.root, "GET", "/admin/organizations/nowhere/relationships/module-consumers", nil, 404, "")
	// Deleting an organization removes it from others' consumers and
	// revokes its tokens.
	orgTok := m.call(w.owner, "POST", "/organizations/globex/authentication-token", nil, 201).one(t).Attributes["token"].(string)
	m.call(m.root, "DELETE", "/admin/organizations/globex", nil, 204)
	if got := consumers("module", ""); len(got) != 0 {
		t.Errorf("deleted consumer still listed: %v", got)
	}
	m.fail(orgTok, "GET", "/organizations/initech", nil, 401, "")
	m.fail(m.root, "DELETE", "/admin/organizations/globex", nil, 404, "")
}

func TestMgmtAdminVersions(t *testing.T) {
	for _, fam := range []struct{ family, path, typ string }{
		{mgmt.VersionFamilyTool, "/admin/tool-versions", "tool-versions"},
		{mgmt.VersionFamilyPolicy, "/admin/policy-versions", "policy-versions"},
	} {
		t.Run(fam.family, func(t *testing.T) {
			m := newAPIHarness(t)
			w := m.world()
			sha := strings.Repeat("ab", 32)
			body := func(attrs map[string]any) map[string]any {
				a := map[string]any{"url": "https://example.com/bin.zip", "sha": sha}
				for k, v := range attrs {
					if v == "-" {
						delete(a, k)
					} else {
						a[k] = v
					}
				}
				return docBody(fam.typ, a)
			}
			m.clock.Advance(1234 * time.Millisecond)
			v := m.call(m.root, "POST", fam.path, body(map[string]any{"version": "1.2.3", "deprecated-reason": "ignored"}), 201).one(t)
			if !strings.HasPrefix(v.ID, "tool-") || v.Type != fam.typ || v.Attributes["enabled"] != true || v.Attributes["official"] != false ||
				v.Attributes["beta"] != false || v.Attributes["deprecated"] != false || v.Attributes["deprecated-reason"] != nil ||
				v.Attributes["usage"] != 0.0 || v.Attributes["created-at"] != "2025-06-01T12:00:01.234Z" {
				t.Errorf("created = %v", v.Attributes)
			}
			if !slices.Equal(archKeys(v), []string{"linux/amd64 https://example.com/bin.zip"}) {
				t.Errorf("a create with a top-level url: archs %v", v.Attributes["archs"])
			}
			m.call(m.root, "POST", fam.path, body(map[string]any{"version": "1.2.30-bundle", "official": true}), 201)
			m.call(m.root, "POST", fam.path, body(map[string]any{"version": "2.0.0", "beta": true, "enabled": false}), 201)
			// Validation: 422 naming the attribute; a wrong type too.
			for _, c := range []struct {
				attrs   map[string]any
				pointer string
			}{
				{map[string]any{"version": "1.2"}, "/data/attributes/version"},
				{map[string]any{"version": "v1.2.3"}, "/data/attributes/version"},
				{map[string]any{}, "/data/attributes/version"},
				{map[string]any{"version": "1.2.3"}, "/data/attributes/version"}, // taken
				{map[string]any{"version": "3.0.0", "url": "-"}, "/data/attributes/url"},
				{map[string]any{"version": "3.0.0", "url": "ftp://x/y"}, "/data/attributes/url"},
				{map[string]any{"version": "3.0.0", "sha": "-"}, "/data/attributes/sha"},
				{map[string]any{"version": "3.0.0", "sha": "abc"}, "/data/attributes/sha"},
				{map[string]any{"version": "3.0.0", "enabled": "yes"}, "/data/attributes/enabled"},
				{map[string]any{"version": "3.0.0", "archs": []any{map[string]any{"url": "https://x/y", "sha": sha, "os": "Linux!", "arch": "amd64"}}},
					"/data/attributes/archs/0/os"},
			} {
				m.on(t).fail(m.root, "POST", fam.path, body(c.attrs), 422, c.pointer)
			}
			m.fail(m.root, "POST", fam.path, docBody("projects", map[string]any{"version": "3.0.0"}), 422, "/data/type")
			// List: filter[version] is exact and wins over search[version].
			ids := func(q string) []string { return m.call(m.root, "GET", fam.path+"?"+q, nil, 200).ids(t) }
			if got := ids("search%5Bversion%5D=1.2.3"); len(got) != 2 {
				t.Errorf("search = %v", got)
			}
			if got := ids("filter[version]=1.2.3&search[version]=2.0"); len(got) != 1 || got[0] != v.ID {
				t.Errorf("filter wins = %v", got)
			}
			if got := ids(""); len(got) != 3 {
				t.Errorf("all = %v", got)
			}
			// Update: left out keeps; deprecated-reason only while
			// deprecated; archs round-trip.
			u := m.call(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"deprecated": true, "deprecated-reason": "old",
				"archs": []any{map[string]any{"url": "https://example.com/arm.zip", "sha": sha, "os": "linux", "arch": "arm64"}}}), 200).one(t)
			if u.Attributes["deprecated"] != true || u.Attributes["deprecated-reason"] != "old" || u.Attributes["version"] != "1.2.3" ||
				u.Attributes["url"] != "https://example.com/bin.zip" || !slices.Equal(archKeys(u), []string{
				"linux/arm64 https://example.com/arm.zip", "linux/amd64 https://example.com/bin.zip"}) {
				t.Errorf("updated = %v", u.Attributes)
			}
			// The top-level binary is the linux/amd64 entry: a change of
			// either side changes the other; both at once must agree.
			u = m.call(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"url": "https://example.com/bin2.zip"}), 200).one(t)
			if !slices.Equal(archKeys(u), []string{"linux/arm64 https://example.com/arm.zip", "linux/amd64 https://example.com/bin2.zip"}) {
				t.Errorf("after a top-level url update: %v", u.Attributes["archs"])
			}
			u = m.call(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"archs": []any{
				map[string]any{"url": "https://example.com/bin3.zip", "sha": sha, "os": "linux", "arch": "amd64"}}}), 200).one(t)
			if u.Attributes["url"] != "https://example.com/bin3.zip" || !slices.Equal(archKeys(u), []string{"linux/amd64 https://example.com/bin3.zip"}) {
				t.Errorf("after a linux/amd64 arch update: url %v archs %v", u.Attributes["url"], u.Attributes["archs"])
			}
			m.fail(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"url": "https://example.com/other.zip", "archs": []any{
				map[string]any{"url": "https://example.com/bin3.zip", "sha": sha, "os": "linux", "arch": "amd64"}}}), 422, "/data/attributes/url", "linux/amd64")
			u = m.call(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"deprecated": false}), 200).one(t)
			if u.Attributes["deprecated-reason"] != nil {
				t.Errorf("reason kept after undeprecating: %v", u.Attributes["deprecated-reason"])
			}
			m.fail(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"sha": "nope"}), 422, "/data/attributes/sha")
			m.fail(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"usage": 3}), 422, "/data/attributes/usage", "read-only")
			m.fail(m.root, "PATCH", fam.path+"/"+v.ID, docBody(fam.typ, map[string]any{"created-at": "2020-01-01T00:00:00.000Z"}), 422, "/data/attributes/created-at", "read-only")
			m.fail(m.root, "PATCH", fam.path+"/tool-none", docBody(fam.typ, nil), 404, "")
			// usage, and deletes refused for official or used versions.
			if fam.family == mgmt.VersionFamilyTool {
				m.workspace(w.owner, "acme", "uses-it", "", map[string]any{"tool-version": "1.2.3"})
			} else {
				m.call(w.owner, "POST", "/organizations/acme/policy-sets", docBody("policy-sets", map[string]any{"name": "uses-it", "policy-tool-version": "1.2.3"}), 201)
			}
			if got := m.call(m.root, "GET", fam.path+"/"+v.ID, nil, 200).one(t).Attributes["usage"]; got != 1.0 {
				t.Errorf("usage = %v", got)
			}
			m.fail(m.root, "DELETE", fam.path+"/"+v.ID, nil, 422, "/data/attributes/usage", "used by 1")
			official := ids("filter[version]=1.2.30-bundle")[0]
			m.fail(m.root, "DELETE", fam.path+"/"+official, nil, 422, "/data/attributes/official", "official")
			beta := ids("filter[version]=2.0.0")[0]
			m.call(m.root, "DELETE", fam.path+"/"+beta, nil, 204)
			m.fail(m.root, "GET", fam.path+"/"+beta, nil, 404, "")
			// A version of the other family is not found here.
			other := "/admin/policy-versions/"
			if fam.family == mgmt.VersionFamilyPolicy {
				other = "/admin/tool-versions/"
			}
			m.fail(m.root, "GET", other+v.ID, nil, 404, "")
		})
	}
}

// archKeys lists a version's archs as "os/arch url".
func archKeys(r testRes) []string {
	var out []string
	archs, _ := r.Attributes["archs"].([]any)
	for _, a := range archs {
		m := a.(map[string]any)
		out = append(out, fmt.Sprintf("%s/%s %s", m["os"], m["arch"], m["url"]))
	}
	return out
}
