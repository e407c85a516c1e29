package mgmt

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Measurements of the management API (issue 7): the latency of a page of
// projects from an organization of 10,000, over real HTTP (an httptest
// server on loopback, the real handler, store and token resolver), and the
// throughput of project creates through the handler and the state
// machine (without Raft: the in-memory writer applies each command as the
// FSM would).
//
//	go test ./http/ -run '^$' -bench 'BenchmarkMgmt' -benchtime 2000x

// benchOrg fills an organization with n projects (straight into the
// store: the setup is not what is measured) and returns the owner's
// secret and a reader's, whose team has records on 50 of them.
func benchOrg(b *testing.B, m *apiHarness, n int) (owner, reader string) {
	b.Helper()
	w := m.world()
	ids := make([]string, 0, n)
	for i := range n {
		id := mgmt.NewID(mgmt.PrefixProject)
		name := fmt.Sprintf("project-%05d", i)
		m.Apply(store.ProjectCreateRequestType, &store.ProjectCreateRequest{ID: id, OrganizationName: "acme", CreatedAt: apitest.Now,
			Attributes: mgmt.ProjectPatch{Name: &name}})
		ids = append(ids, id)
	}
	for i := 0; i < 50; i++ {
		m.Apply(store.TeamProjectCreateRequestType, &store.TeamProjectCreateRequest{ID: mgmt.NewID(mgmt.PrefixTeamProject),
			TeamID: w.readersTeam, ProjectID: ids[i*(n/50)], CreatedAt: apitest.Now, Access: mgmt.ProjectAccessWrite})
	}
	return w.owner, w.reader
}

// latencies runs get b.N times and reports the p50 and p99 in ms.
func latencies(b *testing.B, get func() int) {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if code := get(); code != http.StatusOK {
			b.Fatalf("status %d", code)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
}

func BenchmarkMgmtProjectList10k(b *testing.B) {
	m := newAPIHarness(b)
	owner, reader := benchOrg(b, m, 10000)
	ts := httptest.NewServer(m.srv.Handler())
	defer ts.Close()
	client := ts.Client()
	for _, c := range []struct{ name, secret, query string }{
		{"owner-first-page", owner, ""},
		{"owner-page-100-size-100", owner, "?page%5Bsize%5D=100&page%5Bnumber%5D=100"},
		{"owner-sort-name", owner, "?sort=-name"},
		{"owner-q", owner, "?q=project-0999"},
		{"owner-filter-names", owner, "?filter%5Bnames%5D=project-00042,project-09999"},
		{"reader-50-records", reader, ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			url := ts.URL + "/api/v2/organizations/acme/projects" + c.query
			latencies(b, func() int {
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+c.secret)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			})
		})
	}
}

func BenchmarkMgmtProjectCreate(b *testing.B) {
	m := newAPIHarness(b)
	owner, _ := benchOrg(b, m, 10000)
	ts := httptest.NewServer(m.srv.Handler())
	defer ts.Close()
	client := ts.Client()
	b.ResetTimer()
	for i := range b.N {
		body := fmt.Sprintf(`{"data":{"type":"projects","attributes":{"name":"new-%07d"}}}`, i)
		req, _ := http.NewRequest("POST", ts.URL+"/api/v2/organizations/acme/projects", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+owner)
		req.Header.Set("Content-Type", "application/vnd.api+json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}
