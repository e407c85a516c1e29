package mgmt

import (
	"context"
	"net/http"
	"testing"
)

const projectJSON = `{"id":"prj-1","type":"projects",
	"attributes":{"name":"web","description":null,"auto-destroy-activity-duration":"14d","workspace-count":2,"team-count":1,
		"permissions":{"can-update":true,"can-destroy":false,"can-create-workspace":true}},
	"relationships":{"organization":{"data":{"id":"acme","type":"organizations"},"links":{"related":"/api/v2/organizations/acme"}}},
	"links":{"self":"/api/v2/projects/prj-1"}}`

var projectWant = &Project{
	ID: "prj-1", Name: "web", AutoDestroyActivityDuration: "14d", WorkspaceCount: 2, TeamCount: 1,
	Permissions:  ProjectPermissions{CanUpdate: true, CanCreateWorkspace: true},
	Organization: "acme",
}

func TestMgmtProjectEndpoints(t *testing.T) {
	runMgmtCases(t, []mgmtCase{
		{
			name: "create",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Projects().Create(ctx, "acme", ProjectCreateOptions{Name: "web", Description: ptrTo("Web tier"), AutoDestroyActivityDuration: ptrTo("14d")})
			},
			status: http.StatusCreated, reply: `{"data":` + projectJSON + `}`,
			method: "POST", path: "/api/v2/organizations/acme/projects",
			body: `{"data":{"type":"projects","attributes":{"name":"web","description":"Web tier","auto-destroy-activity-duration":"14d"}}}`,
			want: projectWant,
		},
		{
			name: "create leaves out empty optional attributes",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Projects().Create(ctx, "my org", ProjectCreateOptions{Name: "web", Description: ptrTo("")})
			},
			status: http.StatusCreated, reply: `{"data":` + projectJSON + `}`,
			method: "POST", path: "/api/v2/organizations/my%20org/projects",
			body: `{"data":{"type":"projects","attributes":{"name":"web"}}}`,
			want: projectWant,
		},
		{
			name: "list with every parameter",
			call: func(ctx context.Context, m *Client) (any, error) {
				l, err := m.Projects().List(ctx, "acme", ProjectListOptions{
					PageOptions: PageOptions{PageNumber: 2, PageSize: 50},
					Query:       "we", Names: []string{"web", "db"}, CanCreateWorkspace: true, CanUpdate: true, Sort: "-name",
				})
				if err != nil {
					return nil, err
				}
				return l.Items, nil
			},
			reply:  `{"data":[` + projectJSON + `]}`,
			method: "GET", path: "/api/v2/organizations/acme/projects",
			query: "filter%5Bnames%5D=web%2Cdb&filter%5Bpermissions%5D%5Bcreate-workspace%5D=true&filter%5Bpermissions%5D%5Bupdate%5D=true" +
				"&page%5Bnumber%5D=2&page%5Bsize%5D=50&q=we&sort=-name",
			want: []*Project{projectWant},
		},
		{
			name: "list without parameters",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Projects().List(ctx, "acme", ProjectListOptions{})
			},
			reply:  `{"data":[],"meta":{"status-counts":{"total":4,"matching":0}}}`,
			method: "GET", path: "/api/v2/organizations/acme/projects",
			want: &ProjectList{Page: Page[Project]{Items: []*Project{}, Document: &JSONAPIDocument{
				Data: []byte(`[]`), Meta: []byte(`{"status-counts":{"total":4,"matching":0}}`)}},
				StatusCounts: ProjectStatusCounts{Total: 4}},
		},
		{
			name:   "read",
			call:   func(ctx context.Context, m *Client) (any, error) { return m.Projects().Read(ctx, "prj-1") },
			reply:  `{"data":` + projectJSON + `}`,
			method: "GET", path: "/api/v2/projects/prj-1",
			want: projectWant,
		},
		{
			name: "update sends only what is given, null to clear",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.Projects().Update(ctx, "prj-1", ProjectUpdateOptions{Name: ptrTo("web"), AutoDestroyActivityDuration: ptrTo("")})
			},
			reply:  `{"data":` + projectJSON + `}`,
			method: "PATCH", path: "/api/v2/projects/prj-1",
			body: `{"data":{"type":"projects","id":"prj-1","attributes":{"name":"web","auto-destroy-activity-duration":null}}}`,
			want: projectWant,
		},
		{
			name: "delete",
			call: func(ctx context.Context, m *Client) (any, error) {
				return mgmtNoValue(m.Projects().Delete(ctx, "prj-1"))
			},
			status: http.StatusNoContent,
			method: "DELETE", path: "/api/v2/projects/prj-1",
		},
		{
			name: "move workspaces",
			call: func(ctx context.Context, m *Client) (any, error) {
				return mgmtNoValue(m.Projects().MoveWorkspaces(ctx, "prj-2", []string{"ws-1", "ws-2"}))
			},
			status: http.StatusNoContent,
			method: "POST", path: "/api/v2/projects/prj-2/relationships/workspaces",
			body: `{"data":[{"type":"workspaces","id":"ws-1"},{"type":"workspaces","id":"ws-2"}]}`,
		},
	})
}

const teamProjectJSON = `{"id":"tprj-1","type":"team-projects",
	"attributes":{"access":"custom",
		"project-access":{"settings":"update","teams":"read"},
		"workspace-access":{"runs":"plan","variables":"read","state-versions":"read-outputs","gate-mocks":"none",
			"create":true,"move":false,"locking":true,"delete":false,"run-tasks":false}},
	"relationships":{"team":{"data":{"id":"team-1","type":"teams"}},"project":{"data":{"id":"prj-1","type":"projects"}}},
	"links":{"self":"/api/v2/team-projects/tprj-1"}}`

var teamProjectWant = &TeamProject{
	ID: "tprj-1", Access: "custom",
	ProjectAccess:   TeamProjectProjectAccess{Settings: "update", Teams: "read"},
	WorkspaceAccess: TeamProjectWorkspaceAccess{Runs: "plan", Variables: "read", StateVersions: "read-outputs", GateMocks: "none", Create: true, Locking: true},
	TeamID:          "team-1", ProjectID: "prj-1",
}

func TestMgmtTeamProjectEndpoints(t *testing.T) {
	runMgmtCases(t, []mgmtCase{
		{
			name: "list",
			call: func(ctx context.Context, m *Client) (any, error) {
				return itemsOf(m.TeamProjects().List(ctx, TeamProjectListOptions{ProjectID: "prj-1", PageOptions: PageOptions{PageSize: 5}}))
			},
			reply:  `{"data":[` + teamProjectJSON + `]}`,
			method: "GET", path: "/api/v2/team-projects",
			query: "filter%5Bproject%5D%5Bid%5D=prj-1&page%5Bsize%5D=5",
			want:  []*TeamProject{teamProjectWant},
		},
		{
			name: "list sends the required filter even when empty",
			call: func(ctx context.Context, m *Client) (any, error) {
				return itemsOf(m.TeamProjects().List(ctx, TeamProjectListOptions{}))
			},
			reply:  `{"data":[]}`,
			method: "GET", path: "/api/v2/team-projects",
			query: "filter%5Bproject%5D%5Bid%5D=",
			want:  []*TeamProject{},
		},
		{
			name:   "read",
			call:   func(ctx context.Context, m *Client) (any, error) { return m.TeamProjects().Read(ctx, "tprj-1") },
			reply:  `{"data":` + teamProjectJSON + `}`,
			method: "GET", path: "/api/v2/team-projects/tprj-1",
			want: teamProjectWant,
		},
		{
			name: "add custom",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.TeamProjects().Add(ctx, TeamProjectAddOptions{
					TeamID: "team-1", ProjectID: "prj-1", Access: "custom",
					ProjectAccess:   &TeamProjectProjectAccessOptions{Settings: ptrTo("update"), Teams: ptrTo("read")},
					WorkspaceAccess: &TeamProjectWorkspaceAccessOptions{Runs: ptrTo("plan"), Create: ptrTo(true), Move: ptrTo(false)},
				})
			},
			reply:  `{"data":` + teamProjectJSON + `}`,
			method: "POST", path: "/api/v2/team-projects",
			body: `{"data":{"type":"team-projects","attributes":{"access":"custom",
				"project-access":{"settings":"update","teams":"read"},
				"workspace-access":{"runs":"plan","create":true,"move":false}},
				"relationships":{"project":{"data":{"type":"projects","id":"prj-1"}},"team":{"data":{"type":"teams","id":"team-1"}}}}}`,
			want: teamProjectWant,
		},
		{
			name: "add a level",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.TeamProjects().Add(ctx, TeamProjectAddOptions{TeamID: "team-1", ProjectID: "prj-1", Access: "read"})
			},
			reply:  `{"data":` + teamProjectJSON + `}`,
			method: "POST", path: "/api/v2/team-projects",
			body: `{"data":{"type":"team-projects","attributes":{"access":"read"},
				"relationships":{"project":{"data":{"type":"projects","id":"prj-1"}},"team":{"data":{"type":"teams","id":"team-1"}}}}}`,
			want: teamProjectWant,
		},
		{
			name: "update",
			call: func(ctx context.Context, m *Client) (any, error) {
				return m.TeamProjects().Update(ctx, "tprj-1", TeamProjectUpdateOptions{Access: "custom",
					WorkspaceAccess: &TeamProjectWorkspaceAccessOptions{StateVersions: ptrTo("read-outputs"), Locking: ptrTo(true)}})
			},
			reply:  `{"data":` + teamProjectJSON + `}`,
			method: "PATCH", path: "/api/v2/team-projects/tprj-1",
			body: `{"data":{"type":"team-projects","id":"tprj-1","attributes":{"access":"custom",
				"workspace-access":{"state-versions":"read-outputs","locking":true}}}}`,
			want: teamProjectWant,
		},
		{
			name: "remove",
			call: func(ctx context.Context, m *Client) (any, error) {
				return mgmtNoValue(m.TeamProjects().Remove(ctx, "tprj-1"))
			},
			status: http.StatusNoContent,
			method: "DELETE", path: "/api/v2/team-projects/tprj-1",
		},
	})
}
