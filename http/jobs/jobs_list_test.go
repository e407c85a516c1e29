package jobs

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

// listHarness holds jobs in four namespaces: default has web-1, web-2,
// api (batch, priority 80) and cron (periodic); prod has web-1 and db;
// prod-eu has web-1 (its name sorts after prod, but "prod-eu/" sorts
// before "prod/": a page token must not be compared as a plain string);
// empty has none.
func listHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.CreateNamespace("prod")
	h.CreateNamespace("empty")
	h.CreateNamespace("prod-eu")
	h.register(apitest.TestJob("web-1"))
	h.register(apitest.TestJob("web-2"))
	api := apitest.BatchJob("api")
	api.Priority = 80
	h.register(api)
	h.register(apitest.PeriodicJob("cron"))
	for _, nsID := range [][2]string{{"prod", "web-1"}, {"prod", "db"}, {"prod-eu", "web-1"}} {
		j := apitest.TestJob(nsID[1])
		j.Namespace = nsID[0]
		h.register(j)
	}
	return h
}

// listIDs lists jobs and returns "<namespace>/<id>" of each entry.
func listIDs(t *testing.T, h *harness, query string) ([]string, []*state.JobListStub) {
	t.Helper()
	var out []*state.JobListStub
	h.on(t).OK(http.MethodGet, "/v1/jobs"+query, nil, &out)
	ids := make([]string, len(out))
	for i, s := range out {
		ids[i] = s.Namespace + "/" + s.ID
	}
	return ids, out
}

func TestJobListSelection(t *testing.T) {
	h := listHarness(t)
	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{"default/api", "default/cron", "default/web-1", "default/web-2"}},
		{"?prefix=web", []string{"default/web-1", "default/web-2"}},
		{"?prefix=zzz", []string{}},
		{"?namespace=prod", []string{"prod/db", "prod/web-1"}},
		{"?namespace=empty", []string{}},
		{"?namespace=*", []string{"default/api", "default/cron", "default/web-1", "default/web-2", "prod/db", "prod/web-1", "prod-eu/web-1"}},
		{"?namespace=*&prefix=web", []string{"default/web-1", "default/web-2", "prod/web-1", "prod-eu/web-1"}},
		{"?filter=" + urlEscape(`Type == "batch"`), []string{"default/api", "default/cron"}},
		{"?filter=" + urlEscape(`Type == "batch" and Priority != 50`), []string{"default/api"}},
		{"?filter=" + urlEscape(`Periodic == true`), []string{"default/cron"}},
		{"?filter=" + urlEscape(`Type == "system"`), []string{}},
		{"?namespace=*&filter=" + urlEscape(`Namespace == "prod"`), []string{"prod/db", "prod/web-1"}},
		{"?filter=" + urlEscape(`JobSummary.Summary.web.Starting == 0`), []string{"default/api", "default/cron", "default/web-1", "default/web-2"}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			h := h.on(t)
			got, _ := listIDs(t, h, tc.query)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestJobListEmptyIsArray(t *testing.T) {
	h := newHarness(t)
	rec := h.OK(http.MethodGet, "/v1/jobs", nil, nil)
	if got := rec.Body.String(); got != "[]" {
		t.Errorf("body %q, want []", got)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestJobListEntries(t *testing.T) {
	h := listHarness(t)
	_, out := listIDs(t, h, "?prefix=api")
	if len(out) != 1 {
		t.Fatalf("%d entries", len(out))
	}
	e := out[0]
	job := h.Job(state.DefaultNamespace, "api")
	if e.Type != state.JobTypeBatch || e.Priority != 80 || e.Name != "api" || e.Status != job.Status ||
		e.CreateIndex != job.CreateIndex || e.JobModifyIndex != job.JobModifyIndex || e.SubmitTime != apitest.Now.UnixNano() {
		t.Errorf("entry %+v does not match job %+v", e, job)
	}
	if e.JobSummary == nil || e.JobSummary.JobID != "api" {
		t.Fatalf("entry JobSummary %+v", e.JobSummary)
	}
	if _, ok := e.JobSummary.Summary["web"]; !ok {
		t.Errorf("summary %+v lacks group web", e.JobSummary.Summary)
	}
}

func TestJobListMeta(t *testing.T) {
	h := listHarness(t)
	cases := []struct {
		query    string
		wantMeta bool
	}{
		{"", false},
		{"?meta=false", false},
		{"?meta=true", true},
		{"?meta", true},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			h := h.on(t)
			rec := h.OK(http.MethodGet, "/v1/jobs"+tc.query, nil, nil)
			var raw []map[string]json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			for _, e := range raw {
				meta, ok := e["Meta"]
				if ok != tc.wantMeta {
					t.Fatalf("entry %s: Meta present %v, want %v", e["ID"], ok, tc.wantMeta)
				}
				if ok {
					var m map[string]string
					var id string
					json.Unmarshal(meta, &m)
					json.Unmarshal(e["ID"], &id)
					if m["owner"] != "team-"+id {
						t.Errorf("entry %s: Meta %v", id, m)
					}
				}
			}
		})
	}
}

func TestJobListFilterMetaOnlyWithMeta(t *testing.T) {
	h := listHarness(t)
	got, _ := listIDs(t, h, "?meta=true&filter="+urlEscape(`Meta.owner == "team-web-2"`))
	if !slices.Equal(got, []string{"default/web-2"}) {
		t.Errorf("got %v, want default/web-2", got)
	}
}

// TestJobListPagination walks every page size over one namespace and all
// of them: the pages, joined, must be the unpaginated list exactly once.
func TestJobListPagination(t *testing.T) {
	h := listHarness(t)
	for _, base := range []string{"?", "?namespace=*&", "?filter=" + urlEscape(`Type != "batch"`) + "&namespace=*&"} {
		all, _ := listIDs(t, h, base)
		for perPage := 1; perPage <= len(all)+1; perPage++ {
			t.Run(base+"per_page="+strconv.Itoa(perPage), func(t *testing.T) {
				h := h.on(t)
				var walked []string
				token := ""
				for pages := 0; ; pages++ {
					if pages > len(all)+1 {
						t.Fatal("pagination does not end")
					}
					q := base + "per_page=" + strconv.Itoa(perPage)
					if token != "" {
						q += "&next_token=" + urlEscape(token)
					}
					var out []*state.JobListStub
					rec := h.OK(http.MethodGet, "/v1/jobs"+q, nil, &out)
					if len(out) > perPage {
						t.Fatalf("page of %d entries, per_page %d", len(out), perPage)
					}
					for _, s := range out {
						walked = append(walked, s.Namespace+"/"+s.ID)
					}
					token = rec.Header().Get(schedhttp.HeaderNextToken)
					if token == "" {
						break
					}
					if len(out) != perPage {
						t.Fatalf("short page of %d with a next token", len(out))
					}
				}
				if !slices.Equal(walked, all) {
					t.Errorf("pages walked %v, want %v", walked, all)
				}
			})
		}
	}
}

func TestJobListNextTokenShape(t *testing.T) {
	h := listHarness(t)
	cases := []struct{ query, want string }{
		{"?per_page=1", "cron"},
		{"?per_page=4&namespace=*", "prod/db"},
		{"?per_page=4", ""},
		{"?per_page=6&namespace=*", "prod-eu/web-1"},
	}
	for _, tc := range cases {
		rec := h.OK(http.MethodGet, "/v1/jobs"+tc.query, nil, nil)
		if got := rec.Header().Get(schedhttp.HeaderNextToken); got != tc.want {
			t.Errorf("%s: next token %q, want %q", tc.query, got, tc.want)
		}
	}
}

// TestJobListIndexHeader: the index is that of the last write to jobs or
// summaries, and the leader headers are set.
func TestJobListIndexHeader(t *testing.T) {
	h := newHarness(t)
	rec := h.OK(http.MethodGet, "/v1/jobs", nil, nil)
	if got := apitest.HeaderIndexOf(t, rec); got != 1 {
		t.Errorf("index %d on an empty store, want the floor of 1", got)
	}
	out := h.register(apitest.TestJob("web"))
	rec = h.OK(http.MethodGet, "/v1/jobs", nil, nil)
	if got := apitest.HeaderIndexOf(t, rec); got != out.Index {
		t.Errorf("index %d, want %d (the register)", got, out.Index)
	}
	if rec.Header().Get(schedhttp.HeaderKnownLeader) != "true" || rec.Header().Get(schedhttp.HeaderLastContact) != "0" {
		t.Errorf("leader headers %q %q", rec.Header().Get(schedhttp.HeaderKnownLeader), rec.Header().Get(schedhttp.HeaderLastContact))
	}
	// A namespace write does not move the jobs index.
	h.CreateNamespace("other")
	rec = h.OK(http.MethodGet, "/v1/jobs", nil, nil)
	if got := apitest.HeaderIndexOf(t, rec); got != out.Index {
		t.Errorf("index %d after a namespace write, want %d", got, out.Index)
	}
}
