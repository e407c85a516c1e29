package jsonapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func httpErr(t *testing.T, err error, status int, pointer string) *HTTPError {
	t.Helper()
	var he *HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("error %v is not an HTTPError", err)
	}
	if he.Status != status {
		t.Fatalf("status %d, want %d: %v", he.Status, status, he)
	}
	if pointer != "" {
		found := false
		for _, e := range he.Errors {
			found = found || (e.Source != nil && (e.Source.Pointer == pointer || e.Source.Parameter == pointer))
		}
		if !found {
			t.Fatalf("no error names %q: %v", pointer, he)
		}
	}
	return he
}

func TestParseRequestRejectsMalformedBodies(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		pointer    string
		detail     string
	}{
		{"empty", "", 422, "", "required"},
		{"spaces", "  \n", 422, "", "required"},
		{"syntax", `{"data": {`, 400, "", "malformed JSON"},
		{"garbage", `{"data": x}`, 400, "", "at byte"},
		{"trailing", `{"data": {}} {}`, 400, "", "unexpected data"},
		{"array", `[1, 2]`, 422, "", "JSON object"},
		{"no data", `{"meta": {}}`, 422, "/data", "required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRequest([]byte(c.body))
			he := httpErr(t, err, c.status, c.pointer)
			if !strings.Contains(he.Error(), c.detail) {
				t.Errorf("error %q does not mention %q", he.Error(), c.detail)
			}
		})
	}
}

func TestResourceTypeChecks(t *testing.T) {
	parse := func(body string) *RequestDoc {
		t.Helper()
		d, err := ParseRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// A wrong type is a malformed body, 422 by default (the spec's
	// tables), 409 (JSON:API's suggestion) where asked.
	_, err := parse(`{"data":{"type":"teams"}}`).Resource(Expect{Type: "projects"})
	he := httpErr(t, err, http.StatusUnprocessableEntity, "/data/type")
	if !strings.Contains(he.Error(), `"teams"`) || he.Errors[0].Title != TitleInvalid {
		t.Errorf("wrong type error = %v", he)
	}
	_, err = parse(`{"data":{"type":"teams"}}`).Resource(Expect{Type: "projects", WrongTypeStatus: http.StatusConflict})
	if he := httpErr(t, err, http.StatusConflict, "/data/type"); he.Errors[0].Title != TitleConflict {
		t.Errorf("409 title %q", he.Errors[0].Title)
	}
	// A missing type is a 422, unless the endpoint allows it.
	_, err = parse(`{"data":{"attributes":{}}}`).Resource(Expect{Type: "projects"})
	httpErr(t, err, 422, "/data/type")
	if o, err := parse(`{"data":{"type":""}}`).Resource(Expect{Type: "organizations", AllowEmptyType: true}); err != nil || o.Type != "" {
		t.Errorf("empty type allowed: %v, %v", o, err)
	}
	_, err = parse(`{"data":{"type":"users"}}`).Resource(Expect{Type: "organizations", AllowEmptyType: true, WrongTypeStatus: 422})
	httpErr(t, err, 422, "/data/type")
	_, err = parse(`{"data":{"type":7}}`).Resource(Expect{Type: "projects"})
	httpErr(t, err, 422, "/data/type")
	// data that is not an object.
	for _, body := range []string{`{"data":null}`, `{"data":[]}`, `{"data":"x"}`} {
		_, err = parse(body).Resource(Expect{Type: "projects"})
		httpErr(t, err, 422, "/data")
	}
	// An update's id must match the path's, when sent.
	_, err = parse(`{"data":{"type":"projects","id":"prj-b"}}`).Resource(Expect{Type: "projects", ID: "prj-a"})
	httpErr(t, err, http.StatusUnprocessableEntity, "/data/id")
	if _, err := parse(`{"data":{"type":"projects","id":"prj-a"}}`).Resource(Expect{Type: "projects", ID: "prj-a"}); err != nil {
		t.Errorf("matching id: %v", err)
	}
	if _, err := parse(`{"data":{"type":"projects"}}`).Resource(Expect{Type: "projects", ID: "prj-a"}); err != nil {
		t.Errorf("id left out: %v", err)
	}
}

func TestAttributeTypesArePointedAt(t *testing.T) {
	d, err := ParseRequest([]byte(`{"data":{"type":"x","attributes":{
		"s":"str","n":null,"b":true,"i":12,"f":1.5,"q":"12","o":{"inner":3},"arr":[{"k":"v"},7],
		"wrong-s":1,"wrong-b":"yes","wrong-o":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := d.Resource(Expect{Type: "x"})
	if err != nil {
		t.Fatal(err)
	}
	a := o.Attrs
	if v := a.String("s"); v == nil || *v != "str" {
		t.Errorf("String(s) = %v", v)
	}
	if v := a.String("absent"); v != nil {
		t.Errorf("String(absent) = %v", *v)
	}
	if v := a.NullableString("n"); v == nil || *v != "" {
		t.Errorf("NullableString(null) = %v", v)
	}
	if v := a.Bool("b"); v == nil || !*v {
		t.Errorf("Bool(b) = %v", v)
	}
	if v := a.Int("i"); v == nil || *v != 12 {
		t.Errorf("Int(i) = %v", v)
	}
	if v, sent := a.NullableInt("n"); v != nil || !sent {
		t.Errorf("NullableInt(null) = %v, %v", v, sent)
	}
	if sub := a.Object("o"); sub == nil || *sub.Int("inner") != 3 || sub.Pointer("inner") != "/data/attributes/o/inner" {
		t.Errorf("Object(o) = %v", sub)
	}
	items, sent := a.Objects("arr")
	if !sent || len(items) != 1 || *items[0].String("k") != "v" {
		t.Errorf("Objects(arr) = %v, %v", items, sent)
	}
	if o.Err() == nil {
		t.Fatal("no error for arr[1]")
	}
	// Wrong types: each is named by its pointer, all in one answer.
	_ = a.String("wrong-s")
	_ = a.Bool("wrong-b")
	_ = a.Object("wrong-o")
	_ = a.Int("f")
	_ = a.Int("q")
	_ = a.String("n")
	he := httpErr(t, o.Err(), 422, "")
	want := []string{"/data/attributes/arr/1", "/data/attributes/wrong-s", "/data/attributes/wrong-b", "/data/attributes/wrong-o",
		"/data/attributes/f", "/data/attributes/q", "/data/attributes/n"}
	if len(he.Errors) != len(want) {
		t.Fatalf("errors = %v", he)
	}
	for i, p := range want {
		if he.Errors[i].Source.Pointer != p || he.Errors[i].Status != "422" || he.Errors[i].Title != TitleInvalid {
			t.Errorf("error %d = %+v, want pointer %s", i, he.Errors[i], p)
		}
	}
}

func TestRelationships(t *testing.T) {
	d, err := ParseRequest([]byte(`{"data":{"type":"team-projects","relationships":{
		"project":{"data":{"type":"projects","id":"prj-1"}},
		"team":{"data":null},
		"wrong":{"data":{"type":"users","id":"u"}},
		"noid":{"data":{"type":"teams"}},
		"tags":{"data":[{"type":"tag-bindings","attributes":{"key":"env","value":"prod"}},{"type":"other"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := d.Resource(Expect{Type: "team-projects"})
	if err != nil {
		t.Fatal(err)
	}
	if id, sent := o.ToOne("project", "projects"); id != "prj-1" || !sent {
		t.Errorf("ToOne(project) = %q, %v", id, sent)
	}
	if id, sent := o.ToOne("team", "teams"); id != "" || !sent {
		t.Errorf("ToOne(null) = %q, %v", id, sent)
	}
	if _, sent := o.ToOne("absent", "teams"); sent {
		t.Error("absent relationship reported sent")
	}
	if o.Err() != nil {
		t.Fatalf("unexpected errors: %v", o.Err())
	}
	o.RequiredToOne("team", "teams")
	o.RequiredToOne("absent", "teams")
	o.ToOne("wrong", "teams")
	o.ToOne("noid", "teams")
	tags, _ := o.ToManyObjects("tags", "tag-bindings")
	if len(tags) != 2 || *tags[0].Attrs.String("key") != "env" {
		t.Errorf("tags = %+v", tags)
	}
	he := httpErr(t, o.Err(), 422, "")
	want := []string{"/data/relationships/team/data", "/data/relationships/absent", "/data/relationships/wrong/data/type",
		"/data/relationships/noid/data/id", "/data/relationships/tags/data/1/type"}
	if len(he.Errors) != len(want) {
		t.Fatalf("errors = %v", he)
	}
	for i, p := range want {
		if he.Errors[i].Source.Pointer != p {
			t.Errorf("error %d at %s, want %s", i, he.Errors[i].Source.Pointer, p)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	d, _ := ParseRequest([]byte(`{"data":[{"type":"workspaces","id":"ws-1"},{"type":"projects","id":"x"},{"type":"workspaces"},5]}`))
	_, err := d.Identifiers("workspaces")
	he := httpErr(t, err, 422, "/data/1/type")
	if len(he.Errors) != 3 {
		t.Errorf("errors = %v", he)
	}
	d, _ = ParseRequest([]byte(`{"data":[{"type":"workspaces","id":"ws-1"}]}`))
	if ids, err := d.Identifiers("workspaces"); err != nil || len(ids) != 1 || ids[0].ID != "ws-1" {
		t.Errorf("identifiers = %v, %v", ids, err)
	}
	d, _ = ParseRequest([]byte(`{"data":{"type":"workspaces","id":"ws-1"}}`))
	_, err = d.Identifiers("workspaces")
	httpErr(t, err, 422, "/data")
}

func TestCheckContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"": true, MediaType: true, "application/json": true, "application/json; charset=utf-8": true,
		MediaType + "; ext=bulk": false, "text/plain": false, "application/x-www-form-urlencoded": false, ";;": false,
	} {
		r := httptest.NewRequest("POST", "/", nil)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		err := CheckContentType(r)
		if ok != (err == nil) {
			t.Errorf("Content-Type %q: err %v", ct, err)
		}
		if err != nil {
			httpErr(t, err, http.StatusUnsupportedMediaType, "")
		}
	}
}

func TestParsePage(t *testing.T) {
	cases := []struct {
		query        string
		number, size int
		badParam     string
	}{
		{"", 1, 20, ""},
		{"page[number]=3&page[size]=5", 3, 5, ""},
		{"page%5Bnumber%5D=2&page%5Bsize%5D=7", 2, 7, ""}, // percent-encoded brackets
		{"page[size]=100", 1, 100, ""},
		{"page[size]=101", 1, 100, ""},    // capped, not refused
		{"page[size]=5000", 1, 100, ""},   // capped
		{"page[number]=999", 999, 20, ""}, // past the end is kept
		{"page[number]=0", 0, 0, "page[number]"},
		{"page[number]=-1", 0, 0, "page[number]"},
		{"page[number]=x", 0, 0, "page[number]"},
		{"page[size]=0", 0, 0, "page[size]"},
		{"page[size]=1.5", 0, 0, "page[size]"},
		{"unknown=1&page[size]=3", 1, 3, ""}, // unknown parameters are ignored
	}
	for _, c := range cases {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParsePage(q)
		if c.badParam != "" {
			httpErr(t, err, http.StatusBadRequest, c.badParam)
			continue
		}
		if err != nil || p.Number != c.number || p.Size != c.size {
			t.Errorf("%q: %+v, %v; want %d/%d", c.query, p, err, c.number, c.size)
		}
	}
	if p, err := ParsePage(url.Values{"page[number]": {"99999999999999"}}); err != nil || p.Number*p.Size < 0 {
		t.Errorf("a huge page number overflows: %+v, %v", p, err)
	}
}

func paginate(t *testing.T, target string, p Page, total int) (*PageLinks, *Pagination) {
	t.Helper()
	r := httptest.NewRequest("GET", target, nil)
	r.Host = "sched.example:4646"
	doc := Many(nil)
	Paginate(doc, r, p, total)
	return doc.Links, doc.Meta["pagination"].(*Pagination)
}

func TestPaginateLinksAndMeta(t *testing.T) {
	base := "http://sched.example:4646/api/v2/organizations/acme/projects?"
	// Middle page: every link, absolute, other parameters kept.
	links, pg := paginate(t, "/api/v2/organizations/acme/projects?q=web&page[number]=2&page[size]=10", Page{2, 10}, 35)
	if links.Self != base+"page%5Bnumber%5D=2&page%5Bsize%5D=10&q=web" ||
		links.First != base+"page%5Bnumber%5D=1&page%5Bsize%5D=10&q=web" ||
		links.Last != base+"page%5Bnumber%5D=4&page%5Bsize%5D=10&q=web" ||
		links.Prev == nil || *links.Prev != links.First || links.Next == nil || !strings.Contains(*links.Next, "page%5Bnumber%5D=3") {
		t.Errorf("middle links = %+v", links)
	}
	if pg.CurrentPage != 2 || pg.PageSize != 10 || *pg.PrevPage != 1 || *pg.NextPage != 3 || pg.TotalPages != 4 || pg.TotalCount != 35 {
		t.Errorf("middle meta = %+v", pg)
	}
	// First page: prev null. Last page: next null.
	links, pg = paginate(t, "/api/v2/organizations/acme/projects", Page{1, 20}, 35)
	if links.Prev != nil || pg.PrevPage != nil || links.Next == nil || *pg.NextPage != 2 {
		t.Errorf("first page = %+v %+v", links, pg)
	}
	links, pg = paginate(t, "/api/v2/organizations/acme/projects", Page{2, 20}, 35)
	if links.Next != nil || pg.NextPage != nil || links.Prev == nil {
		t.Errorf("last page = %+v %+v", links, pg)
	}
	// Past the end: the requested page is echoed, next is null.
	links, pg = paginate(t, "/api/v2/organizations/acme/projects", Page{9, 20}, 35)
	if pg.CurrentPage != 9 || *pg.PrevPage != 8 || pg.NextPage != nil || pg.TotalPages != 2 || !strings.Contains(links.Self, "page%5Bnumber%5D=9") {
		t.Errorf("past the end = %+v %+v", links, pg)
	}
	// Empty list: one empty page.
	links, pg = paginate(t, "/api/v2/x", Page{1, 20}, 0)
	if pg.TotalPages != 1 || pg.TotalCount != 0 || links.Prev != nil || links.Next != nil || links.Last != links.First {
		t.Errorf("empty = %+v %+v", links, pg)
	}
	// JSON: prev and next are written as null, not left out.
	buf, _ := json.Marshal(&PageLinks{Self: "s"})
	if !strings.Contains(string(buf), `"prev":null`) || !strings.Contains(string(buf), `"next":null`) {
		t.Errorf("links JSON = %s", buf)
	}
}

func TestBaseURLScheme(t *testing.T) {
	r := httptest.NewRequest("GET", "https://sched.example/api/v2/x?y=1", nil)
	if got := BaseURL(r); got != "https://sched.example/api/v2/x" {
		t.Errorf("TLS request: %s", got)
	}
	r = httptest.NewRequest("GET", "/api/v2/x", nil)
	r.Host = "lb.example"
	r.Header.Set("X-Forwarded-Proto", "https")
	if got := BaseURL(r); got != "https://lb.example/api/v2/x" {
		t.Errorf("behind a TLS proxy: %s", got)
	}
	r.Header.Set("X-Forwarded-Proto", "gopher")
	if got := BaseURL(r); got != "http://lb.example/api/v2/x" {
		t.Errorf("unknown forwarded proto: %s", got)
	}
}

func TestParseInclude(t *testing.T) {
	q, _ := url.ParseQuery("include=organization,current_run&include=organization.owners")
	inc, err := ParseInclude(q, "organization", "organization.owners", "current_run")
	if err != nil || !inc["organization"] || !inc["current_run"] || !inc["organization.owners"] {
		t.Errorf("include = %v, %v", inc, err)
	}
	q, _ = url.ParseQuery("include=organization,bogus")
	_, err = ParseInclude(q, "organization")
	he := httpErr(t, err, 400, ParamInclude)
	if !strings.Contains(he.Errors[0].Detail, "include parameter") || !strings.Contains(he.Errors[0].Detail, "bogus") {
		t.Errorf("detail = %q", he.Errors[0].Detail)
	}
	if inc, err := ParseInclude(url.Values{}, "organization"); err != nil || len(inc) != 0 {
		t.Errorf("no include = %v, %v", inc, err)
	}
}

func TestParseBoolAndSplitList(t *testing.T) {
	q, _ := url.ParseQuery("a=true&b=false&c=maybe")
	if v, err := ParseBool(q, "a"); err != nil || !*v {
		t.Errorf("a = %v, %v", v, err)
	}
	if v, err := ParseBool(q, "b"); err != nil || *v {
		t.Errorf("b = %v, %v", v, err)
	}
	if v, err := ParseBool(q, "absent"); err != nil || v != nil {
		t.Errorf("absent = %v, %v", v, err)
	}
	_, err := ParseBool(q, "c")
	httpErr(t, err, 400, "c")
	if got := SplitList(" a, ,b,,c "); strings.Join(got, "|") != "a|b|c" {
		t.Errorf("SplitList = %q", got)
	}
}

func TestDocumentEncoding(t *testing.T) {
	r := &Resource{ID: "prj-1", Type: "projects", Attributes: map[string]any{"name": "x", "description": nil},
		Relationships: map[string]*Relationship{
			"organization": ToOne("organizations", "acme").Related("/api/v2/organizations/acme"),
			"agent-pool":   ToOne("agent-pools", ""),
			"tags":         ToMany(nil),
			"consumers":    LinksOnly("/api/v2/c"),
		},
		Links: map[string]string{"self": "/api/v2/projects/prj-1"}}
	doc := One(r)
	doc.Include(r, &Resource{ID: "u1", Type: "users"}, &Resource{ID: "u1", Type: "users"}, nil)
	rec := httptest.NewRecorder()
	if err := Write(rec, 201, doc); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 201 || rec.Header().Get("Content-Type") != MediaType {
		t.Errorf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	data := got["data"].(map[string]any)
	rels := data["relationships"].(map[string]any)
	if org := rels["organization"].(map[string]any); org["data"].(map[string]any)["id"] != "acme" || org["links"].(map[string]any)["related"] != "/api/v2/organizations/acme" {
		t.Errorf("organization relationship = %v", org)
	}
	if pool := rels["agent-pool"].(map[string]any); pool["data"] != nil {
		t.Errorf("null relationship = %v", pool)
	} else if _, has := pool["data"]; !has {
		t.Error("null relationship left data out")
	}
	if tags := rels["tags"].(map[string]any); len(tags["data"].([]any)) != 0 {
		t.Errorf("empty to-many = %v", tags)
	}
	if c := rels["consumers"].(map[string]any); c["data"] != nil || c["links"] == nil {
		t.Errorf("links-only relationship = %v", c)
	} else if _, has := c["data"]; has {
		t.Error("links-only relationship has data")
	}
	if attrs := data["attributes"].(map[string]any); attrs["description"] != nil {
		t.Errorf("null attribute = %v", attrs)
	}
	if inc := got["included"].([]any); len(inc) != 1 {
		t.Errorf("included = %v (the primary resource and duplicates must not be included)", inc)
	}
	// Empty lists are [], not null; bodiless answers carry the type too.
	rec = httptest.NewRecorder()
	_ = Write(rec, 200, Many(nil))
	if !strings.Contains(rec.Body.String(), `"data":[]`) {
		t.Errorf("empty list = %s", rec.Body.String())
	}
	rec = httptest.NewRecorder()
	_ = Write(rec, 204, nil)
	if rec.Code != 204 || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != MediaType {
		t.Errorf("204 = %d %q %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
	}
}

func TestErrorDocument(t *testing.T) {
	rec := httptest.NewRecorder()
	e := &HTTPError{Status: 422, Errors: []*Error{PointerError("/data/attributes/name", "is %s", "required")}}
	if err := WriteError(rec, e); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Errors []struct {
			Status, Title, Detail string
			Source                struct{ Pointer string }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || rec.Code != 422 || len(doc.Errors) != 1 {
		t.Fatalf("error doc %s: %v", rec.Body.String(), err)
	}
	if d := doc.Errors[0]; d.Status != "422" || d.Title != TitleInvalid || d.Detail != "is required" || d.Source.Pointer != "/data/attributes/name" {
		t.Errorf("error = %+v", d)
	}
	if !strings.Contains(e.Error(), "/data/attributes/name") {
		t.Errorf("Error() = %q", e.Error())
	}
	if Invalid(nil) != nil {
		t.Error("Invalid(nil) is an error")
	}
	if got := Time(time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.FixedZone("x", 3600))); got != "2025-01-02T02:04:05.006Z" {
		t.Errorf("Time = %v", got)
	}
	if Time(time.Time{}) != nil || NullString("") != nil || NullString("a") != "a" {
		t.Error("zero values are not null")
	}
}
