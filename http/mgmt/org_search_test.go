package mgmt

import (
	"slices"
	"testing"

	"github.com/schedhq/sched/http/jsonapi"
)

// GET /organizations?q= keeps the caller's organizations whose name or
// e-mail contains q (any case); q[name] and q[email] search one field,
// both must match, and q wins over them. The pagination counts only the
// matches.
func TestOrganizationListSearch(t *testing.T) {
	m := newAPIHarness(t)
	_, owner := m.user("olivia")
	for _, o := range [][2]string{{"global-corp", "ops@corp.example"}, {"acme", "team@globex.example"}, {"bolt", "ops@bolt.example"}} {
		m.call(owner, "POST", "/organizations", docBody("organizations", map[string]any{"name": o[0], "email": o[1]}), 201)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"acme", "bolt", "global-corp"}},
		{"?q=glo", []string{"acme", "global-corp"}},
		{"?q=GLO", []string{"acme", "global-corp"}},
		{"?q=nothing", []string{}},
		{"?q%5Bname%5D=glo", []string{"global-corp"}},
		{"?q%5Bemail%5D=ops%40", []string{"bolt", "global-corp"}},
		{"?q%5Bemail%5D=ops%40&q%5Bname%5D=bo", []string{"bolt"}},
		{"?q=acme&q%5Bname%5D=bolt", []string{"acme"}},
	} {
		doc := m.call(owner, "GET", "/organizations"+tc.query, nil, 200)
		got := doc.ids(t)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	// Paging is over the matches: one per page, two pages.
	doc := m.call(owner, "GET", "/organizations?q=glo&page%5Bsize%5D=1", nil, 200)
	if got := doc.ids(t); len(got) != 1 {
		t.Fatalf("first page of q=glo: %v", got)
	}
	var pg jsonapi.Pagination
	doc.meta(t, "pagination", &pg)
	if pg.TotalCount != 2 || pg.TotalPages != 2 {
		t.Errorf("pagination of q=glo: %+v, want 2 matches on 2 pages", pg)
	}
}
