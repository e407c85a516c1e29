package mgmt

import (
	"context"
	"net/http"
	"testing"
	"time"
)

const adminOrgJSON = `{"id":"acme","type":"organizations",
	"attributes":{"name":"acme","external-id":"org-1","access-beta-tools":true,"is-disabled":false,"apply-timeout":"24h","plan-timeout":null,
		"tool-worker-sudo-enabled":false,"notification-email":"ops@acme.test","global-module-sharing":false,"global-provider-sharing":true,
		"sso-enabled":false,"workspace-limit":5},
	"relationships":{"owners":{"data":[{"id":"user-1","type":"users"},{"id":"user-2","type":"users"}]},
		"subscription":{"data":null},"feature-set":{"data":null},
		"module-consumers":{"links":{"related":"/api/v2/admin/organizations/acme/relationships/module-consumers"}}}}`

var adminOrgWant = &AdminOrganization{
	Name: "acme", ExternalID: "org-1", AccessBetaTools: true, ApplyTimeout: "24h", NotificationEmail: "ops@acme.test",
	GlobalProviderSharing: true, WorkspaceLimit: ptrTo(5), OwnerIDs: []string{"user-1", "user-2"},
}

func TestMgmtAdminOrganizationEndpoints(t *testing.T) {
	withOwners := *adminOrgWant
	// user-2 is not included: only what the answer carries is filled.
	withOwners.Owners = []*User{{ID: "user-1", Username: "alice", Email: "alice@acme.test"}}
	runMgmtCases(t, []mgmtCase{
		{
			name: "list with every parameter",
			call: func(ctx context.Context, m *Client) (any, error) {
				l, err := m.Admin().Organizations().List(ctx, AdminOrganizationListOptions{
					PageOptions: PageOptions{PageNumber: 1, PageSize: 10},
					Query:       "ac", QueryEmail: "ops@", QueryName: "acme",
					ModuleProducer: ptrTo(false), ProviderProducer: ptrTo(true), IncludeOwners: true,
				})
				if err != nil {
					return nil, err
				}
				return []any{l.Items, l.StatusCounts}, nil
			},
			reply: `{"data":[` + adminOrgJSON + `],"included":[{"id":"user-1","type":"users","attributes":{"username":"alice","email":"alice@acme.test"}}],
				"meta":{"status-counts":{"total":3,"active":2,"disabled":1}}}`,
			method: "GET", path: "/api/v2/admin/organizations",
			query: "filter%5Bmodule_producer%5D=false&filter%5Bprovider_producer%5D=true&include=owners" +
				"&page%5Bnumber%5D=1&page%5Bsize%5D=10&q=ac&q%5Bemail%5D=ops%40&q%5Bname%5D=acme",
			want: []any{[]*AdminOrganization{&withOwners}, AdminOrganizationStatusCounts{Total: 3, Active: 2, Disabled: 1}},
		},
		{
			name: "read",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Admin().Organizations().Read(ctx, "acme", false)
			},
			reply:  `{"data":` + adminOrgJSON + `}`,
			method: "GET", path: "/api/v2/admin/organizations/acme",
			want: adminOrgWant,
		},
		{
			name: "read with owners",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Admin().Organizations().Read(ctx, "acme", true)
			},
			reply:  `{"data":` + adminOrgJSON + `,"included":[{"id":"user-1","type":"users","attributes":{"username":"alice","email":"alice@acme.test"}}]}`,
			method: "GET", path: "/api/v2/admin/organizations/acme", query: "include=owners",
			want: &withOwners,
		},
		{
			name: "update",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Admin().Organizations().Update(ctx, "acme", AdminOrganizationUpdateOptions{
					AccessBetaTools: ptrTo(true), GlobalModuleSharing: ptrTo(false), GlobalProviderSharing: ptrTo(true),
					IsDisabled: ptrTo(false), ApplyTimeout: ptrTo("12h"), PlanTimeout: ptrTo(""), WorkspaceLimit: ptrTo(0),
				})
			},
			reply:  `{"data":` + adminOrgJSON + `}`,
			method: "PATCH", path: "/api/v2/admin/organizations/acme",
			body: `{"data":{"type":"organizations","id":"acme","attributes":{"access-beta-tools":true,"global-module-sharing":false,
				"global-provider-sharing":true,"is-disabled":false,"apply-timeout":"12h","plan-timeout":null,"workspace-limit":0}}}`,
			want: adminOrgWant,
		},
		{
			name: "update nothing",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Admin().Organizations().Update(ctx, "acme", AdminOrganizationUpdateOptions{})
			},
			reply:  `{"data":` + adminOrgJSON + `}`,
			method: "PATCH", path: "/api/v2/admin/organizations/acme",
			body: `{"data":{"type":"organizations","id":"acme","attributes":{}}}`,
			want: adminOrgWant,
		},
		{
			name: "delete",
			call: func(ctx context.Context, m *Client) (any, error) {
				return mgmtNoValue(m.Admin().Organizations().Delete(ctx, "acme"))
			},
			status: http.StatusNoContent,
			method: "DELETE", path: "/api/v2/admin/organizations/acme",
		},
		{
			name: "module consumers",
			call: func(ctx context.Context, m *Client) (any, error) {
				return itemsOf(m.Admin().Organizations().ModuleConsumers(ctx, "acme", PageOptions{PageSize: 2}))
			},
			reply:  `{"data":[{"id":"beta","type":"organizations","attributes":{"name":"beta"}}]}`,
			method: "GET", path: "/api/v2/admin/organizations/acme/relationships/module-consumers", query: "page%5Bsize%5D=2",
			want: []*AdminOrganization{{Name: "beta", OwnerIDs: []string{}}},
		},
		{
			name: "provider consumers",
			call: func(ctx context.Context, m *Client) (any, error) {
				return itemsOf(m.Admin().Organizations().ProviderConsumers(ctx, "acme", PageOptions{}))
			},
			reply:  `{"data":[]}`,
			method: "GET", path: "/api/v2/admin/organizations/acme/relationships/provider-consumers",
			want: []*AdminOrganization{},
		},
		{
			name: "replace module consumers",
			call: func(ctx context.Context, m *Client) (any, error) {
				return mgmtNoValue(m.Admin().Organizations().UpdateModuleConsumers(ctx, "acme", []string{"beta", "gamma"}))
			},
			status: http.StatusNoContent,
			method: "PATCH", path: "/api/v2/admin/organizations/acme/relationships/module-consumers",
			body: `{"data":[{"type":"organizations","id":"beta"},{"type":"organizations","id":"gamma"}]}`,
		},
	})
}

const adminWorkspaceJSON = `{"id":"ws-1","type":"workspaces","attributes":{"name":"net","locked":false,"vcs-repo":{"identifier":"acme/net"}},
	"relationships":{"organization":{"data":{"id":"acme","type":"organizations"}},"current-run":{"data":{"id":"run-1","type":"runs"}}},
	"links":{"self":"/api/v2/organizations/acme/workspaces/net"}}`

func TestMgmtAdminWorkspaceEndpoints(t *testing.T) {
	plain := &Workspace{ID: "ws-1", Name: "net", VCSRepo: &WorkspaceVCSRepo{Identifier: "acme/net"}, Organization: "acme", CurrentRunID: "run-1"}
	withRun := *plain
	withRun.CurrentRun = &WorkspaceRun{ID: "run-1", Status: "applied", CreatedAt: time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC)}
	included := `"included":[{"id":"run-1","type":"runs","attributes":{"status":"applied","created-at":"2025-03-01T11:00:00Z"}},` +
		`{"id":"acme","type":"organizations","attributes":{"name":"acme"}}]`
	runMgmtCases(t, []mgmtCase{
		{
			name: "list with every parameter",
			call: func(ctx context.Context, m *Client) (any, error) {
				l, err := m.Admin().Workspaces().List(ctx, AdminWorkspaceListOptions{
					PageOptions: PageOptions{PageNumber: 2},
					Query:       "net", RunStatuses: []string{"applied", "plan_queued"}, Sort: "-" + AdminWorkspaceSortLatestChange,
					Include: []string{AdminIncludeCurrentRun, AdminIncludeOrganization},
				})
				if err != nil {
					return nil, err
				}
				return []any{l.Items, l.StatusCounts}, nil
			},
			reply: `{"data":[` + adminWorkspaceJSON + `],` + included + `,
				"meta":{"status-counts":{"pending":0,"applied":1,"none":0,"total":1}}}`,
			method: "GET", path: "/api/v2/admin/workspaces",
			query: "filter%5Bcurrent_run%5D%5Bstatus%5D=applied%2Cplan_queued&include=current_run%2Corganization&page%5Bnumber%5D=2&q=net&sort=-latest-change-at",
			want:  []any{[]*Workspace{&withRun}, map[string]int{"pending": 0, "applied": 1, "none": 0, "total": 1}},
		},
		{
			name:   "read",
			call:   func(ctx context.Context, m *Client) (any, error) { return m.Admin().Workspaces().Read(ctx, "ws-1") },
			reply:  `{"data":` + adminWorkspaceJSON + `}`,
			method: "GET", path: "/api/v2/admin/workspaces/ws-1",
			want: plain,
		},
		{
			name: "read with includes",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Admin().Workspaces().Read(ctx, "ws-1", AdminIncludeCurrentRun, AdminIncludeOrganizationOwners)
			},
			reply:  `{"data":` + adminWorkspaceJSON + `,` + included + `}`,
			method: "GET", path: "/api/v2/admin/workspaces/ws-1", query: "include=current_run%2Corganization.owners",
			want: &withRun,
		},
		{
			name: "delete",
			call: func(ctx context.Context, m *Client) (any, error) {
				return mgmtNoValue(m.Admin().Workspaces().Delete(ctx, "ws-1"))
			},
			status: http.StatusNoContent,
			method: "DELETE", path: "/api/v2/admin/workspaces/ws-1",
		},
	})
}

func TestMgmtAdminVersionEndpoints(t *testing.T) {
	for _, family := range []string{FamilyToolVersions, FamilyPolicyVersions} {
		t.Run(family, func(t *testing.T) {
			versions := func(m *Client) *AdminVersions {
				if family == FamilyToolVersions {
					return m.Admin().ToolVersions()
				}
				return m.Admin().PolicyVersions()
			}
			one := `{"id":"tool-1","type":"` + family + `","attributes":{"version":"1.9.0","url":"https://dl/x.zip","sha":"abc",
				"deprecated":true,"deprecated-reason":"old","official":false,"enabled":true,"beta":false,"usage":3,
				"created-at":"2025-03-01T12:00:00.250Z","archs":[{"url":"https://dl/arm.zip","sha":"def","os":"linux","arch":"arm64"}]}}`
			want := &ToolVersion{ID: "tool-1", Version: "1.9.0", URL: "https://dl/x.zip", SHA: "abc", Deprecated: true,
				DeprecatedReason: ptrTo("old"), Enabled: true, Usage: 3, CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 250e6, time.UTC),
				Archs: []ToolVersionArch{{URL: "https://dl/arm.zip", SHA: "def", OS: "linux", Arch: "arm64"}}}
			base := "/api/v2/admin/" + family
			runMgmtCases(t, []mgmtCase{
				{
					name: "list",
					call: func(ctx context.Context, m *Client) (any, error) {
						return itemsOf(versions(m).List(ctx, ToolVersionListOptions{FilterVersion: "1.9.0", SearchVersion: "1.", PageOptions: PageOptions{PageSize: 100}}))
					},
					reply:  `{"data":[` + one + `]}`,
					method: "GET", path: base, query: "filter%5Bversion%5D=1.9.0&page%5Bsize%5D=100&search%5Bversion%5D=1.",
					want: []*ToolVersion{want},
				},
				{
					name:   "read",
					call:   func(ctx context.Context, m *Client) (any, error) { return versions(m).Read(ctx, "tool-1") },
					reply:  `{"data":` + one + `}`,
					method: "GET", path: base + "/tool-1",
					want: want,
				},
				{
					name: "create",
					call: func(ctx context.Context, m *Client) (any, error) {
						return versions(m).Create(ctx, ToolVersionCreateOptions{Version: "1.9.0", URL: "https://dl/x.zip", SHA: "abc",
							Deprecated: ptrTo(true), DeprecatedReason: ptrTo("old"), Enabled: ptrTo(true),
							Archs: []ToolVersionArch{{URL: "https://dl/arm.zip", SHA: "def", OS: "linux", Arch: "arm64"}}})
					},
					status: http.StatusCreated, reply: `{"data":` + one + `}`,
					method: "POST", path: base,
					body: `{"data":{"type":"` + family + `","attributes":{"version":"1.9.0","url":"https://dl/x.zip","sha":"abc",
						"deprecated":true,"deprecated-reason":"old","enabled":true,
						"archs":[{"url":"https://dl/arm.zip","sha":"def","os":"linux","arch":"arm64"}]}}}`,
					want: want,
				},
				{
					name: "create sends the required attributes even when empty",
					call: func(ctx context.Context, m *Client) (any, error) {
						return versions(m).Create(ctx, ToolVersionCreateOptions{})
					},
					status: http.StatusCreated, reply: `{"data":` + one + `}`,
					method: "POST", path: base,
					body: `{"data":{"type":"` + family + `","attributes":{"version":"","url":"","sha":""}}}`,
					want: want,
				},
				{
					name: "update",
					call: func(ctx context.Context, m *Client) (any, error) {
						return versions(m).Update(ctx, "tool-1", ToolVersionUpdateOptions{Deprecated: ptrTo(false), DeprecatedReason: ptrTo(""),
							Official: ptrTo(true), Beta: ptrTo(true), URL: ptrTo("https://dl/y.zip")})
					},
					reply:  `{"data":` + one + `}`,
					method: "PATCH", path: base + "/tool-1",
					body: `{"data":{"type":"` + family + `","id":"tool-1","attributes":{"deprecated":false,"deprecated-reason":null,
						"official":true,"beta":true,"url":"https://dl/y.zip"}}}`,
					want: want,
				},
				{
					name: "delete",
					call: func(ctx context.Context, m *Client) (any, error) {
						return mgmtNoValue(versions(m).Delete(ctx, "tool-1"))
					},
					status: http.StatusNoContent,
					method: "DELETE", path: base + "/tool-1",
				},
			})
		})
	}
}
