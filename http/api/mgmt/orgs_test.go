package mgmt

import (
	"context"
	"net/http"
	"testing"
	"time"
)

const orgJSON = `{"id":"acme","type":"organizations","attributes":{"name":"acme","external-id":"org-1","email":"ops@acme.test","created-at":"2025-03-01T12:00:00.123Z"},"links":{"self":"/api/v2/organizations/acme"}}`

var orgWant = &Organization{Name: "acme", ExternalID: "org-1", Email: "ops@acme.test", CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 123e6, time.UTC)}

const workspaceJSON = `{"id":"ws-1","type":"workspaces",
	"attributes":{"name":"net","description":"d","locked":true,"vcs-repo":{"identifier":"acme/net"},"tool-version":"1.9.0",
		"auto-destroy-activity-duration":"3d","created-at":"2025-03-01T12:00:00Z"},
	"relationships":{"organization":{"data":{"id":"acme","type":"organizations"}},"project":{"data":{"id":"prj-1","type":"projects"}},
		"current-run":{"data":null}}}`

var workspaceWant = &Workspace{
	ID: "ws-1", Name: "net", Description: "d", Locked: true, VCSRepo: &WorkspaceVCSRepo{Identifier: "acme/net"}, ToolVersion: "1.9.0",
	AutoDestroyActivityDuration: "3d", CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
	Organization: "acme", ProjectID: "prj-1",
}

func TestMgmtOrganizationEndpoints(t *testing.T) {
	runMgmtCases(t, []mgmtCase{
		{
			name: "create",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Organizations().Create(ctx, OrganizationCreateOptions{Name: "acme", Email: "ops@acme.test"})
			},
			status: http.StatusCreated, reply: `{"data":` + orgJSON + `}`,
			method: "POST", path: "/api/v2/organizations",
			body: `{"data":{"type":"organizations","attributes":{"name":"acme","email":"ops@acme.test"}}}`,
			want: orgWant,
		},
		{
			name: "create without e-mail",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Organizations().Create(ctx, OrganizationCreateOptions{Name: "acme"})
			},
			status: http.StatusCreated, reply: `{"data":` + orgJSON + `}`,
			method: "POST", path: "/api/v2/organizations",
			body: `{"data":{"type":"organizations","attributes":{"name":"acme"}}}`,
			want: orgWant,
		},
		{
			name: "list",
			call: func(ctx context.Context, m *Client) (any, error) {
				return itemsOf(m.Organizations().List(ctx, PageOptions{PageNumber: 3}))
			},
			reply:  `{"data":[` + orgJSON + `,{"id":"bare","type":"organizations"}]}`,
			method: "GET", path: "/api/v2/organizations", query: "page%5Bnumber%5D=3",
			want: []*Organization{orgWant, {Name: "bare"}},
		},
		{
			name:   "read",
			call:   func(ctx context.Context, m *Client) (any, error) { return m.Organizations().Read(ctx, "acme") },
			reply:  `{"data":` + orgJSON + `}`,
			method: "GET", path: "/api/v2/organizations/acme",
			want: orgWant,
		},
	})
}

func TestMgmtWorkspaceEndpoints(t *testing.T) {
	runMgmtCases(t, []mgmtCase{
		{
			name: "create",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Workspaces().Create(ctx, "acme", WorkspaceCreateOptions{
					Name: "net", Description: ptrTo("d"), ProjectID: "prj-1", ToolVersion: ptrTo("1.9.0"),
					AutoDestroyActivityDuration: ptrTo("3d"), VCSRepoIdentifier: "acme/net",
				})
			},
			status: http.StatusCreated, reply: `{"data":` + workspaceJSON + `}`,
			method: "POST", path: "/api/v2/organizations/acme/workspaces",
			body: `{"data":{"type":"workspaces","attributes":{"name":"net","description":"d","tool-version":"1.9.0",
				"auto-destroy-activity-duration":"3d","vcs-repo":{"identifier":"acme/net"}},
				"relationships":{"project":{"data":{"type":"projects","id":"prj-1"}}}}}`,
			want: workspaceWant,
		},
		{
			name: "create with only a name",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Workspaces().Create(ctx, "acme", WorkspaceCreateOptions{Name: "net"})
			},
			status: http.StatusCreated, reply: `{"data":` + workspaceJSON + `}`,
			method: "POST", path: "/api/v2/organizations/acme/workspaces",
			body: `{"data":{"type":"workspaces","attributes":{"name":"net"}}}`,
			want: workspaceWant,
		},
		{
			name: "list",
			call: func(ctx context.Context, m *Client) (any, error) {
				return itemsOf(m.Workspaces().List(ctx, "acme", WorkspaceListOptions{Search: "ne", PageOptions: PageOptions{PageSize: 100}}))
			},
			reply:  `{"data":[` + workspaceJSON + `]}`,
			method: "GET", path: "/api/v2/organizations/acme/workspaces", query: "page%5Bsize%5D=100&search%5Bname%5D=ne",
			want: []*Workspace{workspaceWant},
		},
		{
			name:   "read by name",
			call:   func(ctx context.Context, m *Client) (any, error) { return m.Workspaces().Read(ctx, "acme", "net") },
			reply:  `{"data":` + workspaceJSON + `}`,
			method: "GET", path: "/api/v2/organizations/acme/workspaces/net",
			want: workspaceWant,
		},
		{
			name:   "read by id",
			call:   func(ctx context.Context, m *Client) (any, error) { return m.Workspaces().ReadByID(ctx, "ws-1") },
			reply:  `{"data":` + workspaceJSON + `}`,
			method: "GET", path: "/api/v2/workspaces/ws-1",
			want: workspaceWant,
		},
		{
			name: "delete",
			call: func(ctx context.Context, m *Client) (any, error) {
				return mgmtNoValue(m.Workspaces().Delete(ctx, "ws-1"))
			},
			status: http.StatusNoContent,
			method: "DELETE", path: "/api/v2/workspaces/ws-1",
		},
	})
}
