package mgmt

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
)

func TestMgmtErrorDecoding(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		want     JSONAPIError
		text     string
		notFound bool
	}{
		{
			name:   "422 with pointers",
			status: http.StatusUnprocessableEntity,
			body: `{"errors":[` +
				`{"status":"422","title":"invalid attribute","detail":"Name must be 3 to 40 characters","source":{"pointer":"/data/attributes/name"}},` +
				`{"status":"422","title":"invalid attribute","detail":"Description is too long","source":{"pointer":"/data/attributes/description"}}]}`,
			want: JSONAPIError{
				Status: 422, Title: "invalid attribute", Detail: "Name must be 3 to 40 characters", Pointer: "/data/attributes/name",
				Errors: []JSONAPIErrorObject{
					{Status: "422", Title: "invalid attribute", Detail: "Name must be 3 to 40 characters", Source: &JSONAPIErrorSource{Pointer: "/data/attributes/name"}},
					{Status: "422", Title: "invalid attribute", Detail: "Description is too long", Source: &JSONAPIErrorSource{Pointer: "/data/attributes/description"}},
				},
			},
			text: "422 invalid attribute: Name must be 3 to 40 characters (at /data/attributes/name); " +
				"invalid attribute: Description is too long (at /data/attributes/description)",
		},
		{
			name:   "404 without detail",
			status: http.StatusNotFound,
			body:   `{"errors":[{"status":"404","title":"not found"}]}`,
			want: JSONAPIError{Status: 404, Title: "not found",
				Errors: []JSONAPIErrorObject{{Status: "404", Title: "not found"}}},
			text:     "404 not found",
			notFound: true,
		},
		{
			name:   "400 naming a query parameter",
			status: http.StatusBadRequest,
			body:   `{"errors":[{"status":"400","title":"bad request","detail":"must be a positive integer","source":{"parameter":"page[size]"}}]}`,
			want: JSONAPIError{Status: 400, Title: "bad request", Detail: "must be a positive integer",
				Errors: []JSONAPIErrorObject{{Status: "400", Title: "bad request", Detail: "must be a positive integer", Source: &JSONAPIErrorSource{Parameter: "page[size]"}}}},
			text: "400 bad request: must be a positive integer (parameter page[size])",
		},
		{
			name:   "not JSON:API",
			status: http.StatusBadGateway,
			body:   "upstream went away\n",
			want:   JSONAPIError{Status: 502, Title: "Bad Gateway", Detail: "upstream went away"},
			text:   "502 Bad Gateway: upstream went away",
		},
		{
			name:   "empty errors list",
			status: http.StatusTooManyRequests,
			body:   `{"errors":[]}`,
			want:   JSONAPIError{Status: 429, Title: "Too Many Requests", Detail: `{"errors":[]}`},
			text:   `429 Too Many Requests: {"errors":[]}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newMgmtFake(t, tc.status, tc.body)
			_, err := f.mgmt(t, "tok").WithRateLimitRetries(0).Projects().Read(t.Context(), "prj-1")
			var je *JSONAPIError
			if !errors.As(err, &je) {
				t.Fatalf("err = %T %v, want *JSONAPIError", err, err)
			}
			if !reflect.DeepEqual(*je, tc.want) {
				t.Errorf("error = %+v\nwant    %+v", *je, tc.want)
			}
			if err.Error() != tc.text {
				t.Errorf("Error() = %q\nwant      %q", err.Error(), tc.text)
			}
			if api.IsNotFound(err) != tc.notFound {
				t.Errorf("IsNotFound = %v", !tc.notFound)
			}
			var se *api.StatusError
			if !errors.As(err, &se) || se.Code != tc.status {
				t.Errorf("StatusError = %+v, want code %d", se, tc.status)
			}
		})
	}
}

func TestMgmtTokenAndHeaders(t *testing.T) {
	f := newMgmtFake(t, http.StatusNoContent, "")
	m := f.mgmt(t, "")
	if err := m.Projects().Delete(t.Context(), "prj-1"); err != nil {
		t.Fatal(err)
	}
	if err := m.WithToken("other").Projects().Delete(t.Context(), "prj-2"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	seen := append([]mgmtSeen(nil), f.seen...)
	f.mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d requests", len(seen))
	}
	if h, ok := seen[0].Header["Authorization"]; ok {
		t.Errorf("no token, but Authorization = %q", h)
	}
	if h := seen[1].Header.Get("Authorization"); h != "Bearer other" {
		t.Errorf("WithToken: Authorization = %q", h)
	}
	for _, s := range seen {
		// The jobs API's token header and namespace do not belong here.
		if s.Header.Get(api.HeaderToken) != "" || s.RawQuery != "" {
			t.Errorf("%s %s?%s carries jobs API parameters: %v", s.Method, s.Path, s.RawQuery, s.Header)
		}
	}
}

func TestMgmtPagination(t *testing.T) {
	body := `{"data":[{"id":"prj-1","type":"projects","attributes":{"name":"a"}}],
		"links":{"self":"http://h/api/v2/organizations/acme/projects?page%5Bnumber%5D=1&page%5Bsize%5D=1",
			"first":"http://h/first","prev":null,"next":"http://h/next","last":"http://h/last"},
		"meta":{"pagination":{"current-page":1,"page-size":1,"prev-page":null,"next-page":2,"total-pages":3,"total-count":3},
			"status-counts":{"total":5,"matching":3}}}`
	f := newMgmtFake(t, http.StatusOK, body)
	list, err := f.mgmt(t, "tok").Projects().List(t.Context(), "acme", ProjectListOptions{PageOptions: PageOptions{PageNumber: 1, PageSize: 1}})
	if err != nil {
		t.Fatal(err)
	}
	wantLinks := JSONAPILinks{Self: "http://h/api/v2/organizations/acme/projects?page%5Bnumber%5D=1&page%5Bsize%5D=1", First: "http://h/first", Next: "http://h/next", Last: "http://h/last"}
	if list.Links != wantLinks {
		t.Errorf("links = %+v", list.Links)
	}
	if want := (Pagination{CurrentPage: 1, PageSize: 1, NextPage: 2, TotalPages: 3, TotalCount: 3}); list.Pagination == nil || *list.Pagination != want {
		t.Errorf("pagination = %+v, want %+v", list.Pagination, want)
	}
	if list.StatusCounts != (ProjectStatusCounts{Total: 5, Matching: 3}) {
		t.Errorf("status counts = %+v", list.StatusCounts)
	}
	if len(list.Items) != 1 || list.Items[0].ID != "prj-1" || list.Items[0].Name != "a" {
		t.Errorf("items = %+v", list.Items)
	}
	if got := f.only(t).RawQuery; got != "page%5Bnumber%5D=1&page%5Bsize%5D=1" {
		t.Errorf("query = %q", got)
	}
}

func TestMgmtPageWithoutMeta(t *testing.T) {
	f := newMgmtFake(t, http.StatusOK, `{"data":[]}`)
	page, err := f.mgmt(t, "tok").Organizations().List(t.Context(), PageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Pagination != nil || len(page.Items) != 0 || page.Items == nil {
		t.Errorf("page = %+v, want empty items and no pagination", page)
	}
}

func TestMgmtMalformedAnswers(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"wrong type", `{"data":{"id":"ws-1","type":"workspaces","attributes":{}}}`, `has type "workspaces", want "projects"`},
		{"list where one is expected", `{"data":[]}`, "not a resource object"},
		{"null data", `{"data":null}`, "has no data"},
		{"attribute of the wrong type", `{"data":{"id":"prj-1","type":"projects","attributes":{"name":7}}}`, "attributes of projects prj-1"},
		{"relationship of the wrong shape", `{"data":{"id":"prj-1","type":"projects","relationships":{"organization":{"data":[1]}}}}`, "relationship organization"},
		{"not JSON", `<html>`, "decode response of GET /projects/prj-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newMgmtFake(t, http.StatusOK, tc.body)
			_, err := f.mgmt(t, "tok").Projects().Read(t.Context(), "prj-1")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			var je *JSONAPIError
			if errors.As(err, &je) {
				t.Errorf("a malformed 200 answer became a server error: %v", je)
			}
		})
	}
}

func TestMgmtEmptyPathSegment(t *testing.T) {
	f := newMgmtFake(t, http.StatusOK, `{}`)
	m := f.mgmt(t, "tok")
	calls := map[string]func() error{
		"project read":   func() error { _, err := m.Projects().Read(t.Context(), ""); return err },
		"project delete": func() error { return m.Projects().Delete(t.Context(), "") },
		"org read":       func() error { _, err := m.Organizations().Read(t.Context(), ""); return err },
		"version delete": func() error { return m.Admin().ToolVersions().Delete(t.Context(), "") },
	}
	for name, call := range calls {
		if err := call(); err == nil || !strings.Contains(err.Error(), "empty path segment") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) != 0 {
		t.Errorf("%d requests sent for empty IDs", len(f.seen))
	}
}

func TestMgmtDoRaw(t *testing.T) {
	f := newMgmtFake(t, http.StatusOK, `{"data":{"id":"ws-1","type":"workspaces","attributes":{"locked":true}},"included":[{"id":"run-1","type":"runs","attributes":{"status":"applied"}}]}`)
	doc, err := f.mgmt(t, "tok").Do(t.Context(), http.MethodPost, "/workspaces/ws-1/actions/lock", nil, map[string]string{"reason": "x"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := doc.One()
	if err != nil || r.ID != "ws-1" {
		t.Fatalf("One = %+v, %v", r, err)
	}
	if inc := doc.Find("runs", "run-1"); inc == nil || doc.Find("runs", "run-2") != nil {
		t.Errorf("Find: %+v", inc)
	}
	s := f.only(t)
	if s.Path != "/api/v2/workspaces/ws-1/actions/lock" || !testutil.JSONEqual(t, s.Body, `{"reason":"x"}`) {
		t.Errorf("sent %s %s", s.Path, s.Body)
	}
}
