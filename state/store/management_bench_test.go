package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/schedhq/sched/state/mgmt"
)

// mgBenchProjects is the size of the organization the list benchmarks use:
// issue 7 measures a page out of 10,000 projects in one organization.
const mgBenchProjects = 10000

// mgBenchOrg builds organization "acme" with n projects (plus its Default
// Project) through Apply, an owner, and a member whose team has a record
// on every 100th project.
func mgBenchOrg(b *testing.B, n int) *mgEnv {
	b.Helper()
	e := newMgEnv(b)
	e.fast = true
	e.user("user-owner", "owner", false)
	e.user("user-dev", "dev", false)
	e.org("acme", "user-owner")
	e.team("team-dev", "acme", mgmt.TeamVisibilityOrganization, nil, "user-dev")
	for i := range n {
		id := fmt.Sprintf("prj-p%07d", i)
		e.project(id, "acme", fmt.Sprintf("project %07d", (i*7919)%n), "")
		if i%100 == 0 {
			e.teamProject(fmt.Sprintf("tprj-p%07d", i), "team-dev", id, mgmt.ProjectAccessWrite, mgmt.TeamProjectPermissionsPatch{})
		}
	}
	return e
}

// BenchmarkMgmtProjectListPage lists one page (20) of the organization's
// projects with each kind of query, and reports the 99th percentile of
// one list's latency next to the mean.
func BenchmarkMgmtProjectListPage(b *testing.B) {
	e := mgBenchOrg(b, mgBenchProjects)
	owner := e.authority(mgmt.CallerUser, "user-owner", "acme")
	dev := e.authority(mgmt.CallerUser, "user-dev", "acme")
	cases := []struct {
		name string
		a    *mgmt.OrgAuthority
		opts ProjectListOptions
		want int
	}{
		{"owner/default", owner, ProjectListOptions{Page: Page{Number: 250}}, 20},
		{"owner/sort=name", owner, ProjectListOptions{Sort: "name", Page: Page{Number: 250}}, 20},
		{"owner/sort=-name", owner, ProjectListOptions{Sort: "-name"}, 20},
		{"owner/q", owner, ProjectListOptions{Query: "project 00012"}, 20},
		{"owner/filter-names", owner, ProjectListOptions{Names: []string{"project 0000001", "project 0009999"}}, 2},
		{"owner/create-workspace", owner, ProjectListOptions{CanCreateWorkspace: true, Page: Page{Number: 3}}, 20},
		{"member/default", dev, ProjectListOptions{Page: Page{Number: 2}}, 20},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				l, err := e.s.ListProjects(nil, c.a, c.opts)
				lat = append(lat, time.Since(start))
				if err != nil || len(l.Items) != c.want {
					b.Fatalf("list: %v, %d items, want %d", err, len(l.Items), c.want)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkMgmtProjectCreateApply measures the state machine's share of a
// project create: encoding the command and applying it (name checks,
// index updates) into an organization that already holds 10,000 projects.
func BenchmarkMgmtProjectCreateApply(b *testing.B) {
	e := mgBenchOrg(b, mgBenchProjects)
	i := 0
	for b.Loop() {
		i++
		e.idx++
		data, err := Encode(ProjectCreateRequestType, &ProjectCreateRequest{ID: fmt.Sprintf("prj-n%09d", i), OrganizationName: "acme",
			CreatedAt: mgT0, Attributes: mgmt.ProjectPatch{Name: mgPtr(fmt.Sprintf("new %09d", i))}})
		if err != nil {
			b.Fatal(err)
		}
		if resp := e.s.Apply(e.idx, data); resp == nil {
			b.Fatal("no response")
		} else if err, ok := resp.(error); ok {
			b.Fatal(err)
		}
	}
}
