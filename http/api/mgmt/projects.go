package mgmt

import (
	"context"
	"net/http"
	"net/url"

	"github.com/schedhq/sched/http/api"
)

// Project is a project (type projects, spec §2): a named container of
// workspaces inside an organization.
type Project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Description is "" when the server sends null.
	Description string `json:"description"`
	// AutoDestroyActivityDuration ("14d", "12h"; "" for none) is shown by
	// the show endpoint.
	AutoDestroyActivityDuration string             `json:"auto-destroy-activity-duration,omitempty"`
	WorkspaceCount              int                `json:"workspace-count"`
	TeamCount                   int                `json:"team-count"`
	Permissions                 ProjectPermissions `json:"permissions"`
	// DefaultExecutionMode is sent by servers that speak go-tfe's
	// extension (remote, local, agent).
	DefaultExecutionMode string `json:"default-execution-mode,omitempty"`
	// Organization is the name of the project's organization.
	Organization string `json:"organization"`
}

// ProjectPermissions are what the caller may do with a project.
type ProjectPermissions struct {
	CanUpdate          bool `json:"can-update"`
	CanDestroy         bool `json:"can-destroy"`
	CanCreateWorkspace bool `json:"can-create-workspace"`
}

func finishProject(p *Project, r *JSONAPIResource, _ *JSONAPIDocument) error {
	p.ID = r.ID
	var err error
	p.Organization, err = r.relatedID("organization")
	return err
}

// ProjectCreateOptions are the attributes of a new project.
type ProjectCreateOptions struct {
	// Name is required: 3 to 40 letters, digits, spaces, "-" or "_", not
	// starting or ending with a space.
	Name string
	// Description is at most 256 characters; nil or "" sends none.
	Description *string
	// AutoDestroyActivityDuration ("14d", "12h") is inherited by the
	// project's workspaces; nil or "" sends none.
	AutoDestroyActivityDuration *string
}

// ProjectUpdateOptions change a project. Nil fields keep their value; a
// pointer to "" clears an optional attribute (sends null).
type ProjectUpdateOptions struct {
	Name                        *string
	Description                 *string
	AutoDestroyActivityDuration *string
}

// ProjectListOptions filter and order a project list.
type ProjectListOptions struct {
	PageOptions
	// Query searches names, case-insensitively (q). The server ignores it
	// when Names is given.
	Query string
	// Names keeps the projects with any of these names (filter[names]).
	Names []string
	// CanCreateWorkspace keeps the projects where the caller may create
	// workspaces (filter[permissions][create-workspace]).
	CanCreateWorkspace bool
	// CanUpdate keeps the projects the caller may update
	// (filter[permissions][update]).
	CanUpdate bool
	// Sort is "name" or "-name"; empty is the server's stable order.
	Sort string
}

// ProjectStatusCounts is a project list's meta.status-counts.
type ProjectStatusCounts struct {
	// Total counts the organization's projects; Matching those that pass
	// the filters.
	Total    int `json:"total"`
	Matching int `json:"matching"`
}

// ProjectList is one page of projects with their counts.
type ProjectList struct {
	Page[Project]
	StatusCounts ProjectStatusCounts
}

// Projects is the client of the project endpoints (spec §4 Projects).
type Projects struct{ m *Client }

// Projects returns the project endpoints.
func (m *Client) Projects() *Projects { return &Projects{m: m} }

// Create creates a project in org.
func (p *Projects) Create(ctx context.Context, org string, opts ProjectCreateOptions) (*Project, error) {
	attrs := map[string]any{"name": opts.Name}
	if opts.Description != nil && *opts.Description != "" {
		attrs["description"] = *opts.Description
	}
	if opts.AutoDestroyActivityDuration != nil && *opts.AutoDestroyActivityDuration != "" {
		attrs["auto-destroy-activity-duration"] = *opts.AutoDestroyActivityDuration
	}
	res, err := newResource("projects", "", attrs, nil)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, p.m, http.MethodPost, api.PathOf("organizations", org, "projects"), nil, dataDoc{res}, "projects", finishProject)
}

// List returns one page of org's projects.
func (p *Projects) List(ctx context.Context, org string, opts ProjectListOptions) (*ProjectList, error) {
	params := url.Values{}
	opts.apply(params)
	setParam(params, "q", opts.Query)
	setParam(params, "filter[names]", commaList(opts.Names))
	if opts.CanCreateWorkspace {
		params.Set("filter[permissions][create-workspace]", "true")
	}
	if opts.CanUpdate {
		params.Set("filter[permissions][update]", "true")
	}
	setParam(params, "sort", opts.Sort)
	page, err := fetchList(ctx, p.m, api.PathOf("organizations", org, "projects"), params, "projects", finishProject)
	if err != nil {
		return nil, err
	}
	list := &ProjectList{Page: *page}
	if _, err := page.Document.DecodeMeta("status-counts", &list.StatusCounts); err != nil {
		return nil, err
	}
	return list, nil
}

// Read returns the project with the given prj- id.
func (p *Projects) Read(ctx context.Context, id string) (*Project, error) {
	return callOne(ctx, p.m, http.MethodGet, api.PathOf("projects", id), nil, nil, "projects", finishProject)
}

// Update changes the project with the given id.
func (p *Projects) Update(ctx context.Context, id string, opts ProjectUpdateOptions) (*Project, error) {
	attrs := map[string]any{}
	putValue(attrs, "name", opts.Name)
	putString(attrs, "description", opts.Description)
	putString(attrs, "auto-destroy-activity-duration", opts.AutoDestroyActivityDuration)
	res, err := newResource("projects", id, attrs, nil)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, p.m, http.MethodPatch, api.PathOf("projects", id), nil, dataDoc{res}, "projects", finishProject)
}

// Delete deletes the project with the given id. The server refuses a
// project that still holds workspaces.
func (p *Projects) Delete(ctx context.Context, id string) error {
	_, err := p.m.Do(ctx, http.MethodDelete, api.PathOf("projects", id), nil, nil)
	return err
}

// MoveWorkspaces moves the workspaces with the given ws- ids into the
// project id: all of them, or none when one is missing or the caller may
// not move it (403).
func (p *Projects) MoveWorkspaces(ctx context.Context, id string, workspaceIDs []string) error {
	data := make([]ResourceIdentifier, 0, len(workspaceIDs))
	for _, ws := range workspaceIDs {
		data = append(data, ResourceIdentifier{Type: "workspaces", ID: ws})
	}
	_, err := p.m.Do(ctx, http.MethodPost, api.PathOf("projects", id, "relationships", "workspaces"), nil, dataDoc{data})
	return err
}

// TeamProject gives a team a level of access to a project (type
// team-projects, spec §2).
type TeamProject struct {
	ID string `json:"id"`
	// Access is read, write, maintain, admin or custom.
	Access          string                     `json:"access"`
	ProjectAccess   TeamProjectProjectAccess   `json:"project-access"`
	WorkspaceAccess TeamProjectWorkspaceAccess `json:"workspace-access"`
	TeamID          string                     `json:"team"`
	ProjectID       string                     `json:"project"`
}

// TeamProjectProjectAccess is a record's permissions on the project.
type TeamProjectProjectAccess struct {
	// Settings is read, update or delete.
	Settings string `json:"settings"`
	// Teams is none, read or manage.
	Teams string `json:"teams"`
	// VariableSets (none, read, write) is go-tfe's extension.
	VariableSets string `json:"variable-sets,omitempty"`
}

// TeamProjectWorkspaceAccess is a record's permissions on the project's
// workspaces.
type TeamProjectWorkspaceAccess struct {
	Runs          string `json:"runs"`
	Variables     string `json:"variables"`
	StateVersions string `json:"state-versions"`
	GateMocks     string `json:"gate-mocks"`
	Create        bool   `json:"create"`
	Move          bool   `json:"move"`
	Locking       bool   `json:"locking"`
	Delete        bool   `json:"delete"`
	RunTasks      bool   `json:"run-tasks"`
}

func finishTeamProject(tp *TeamProject, r *JSONAPIResource, _ *JSONAPIDocument) error {
	tp.ID = r.ID
	var err error
	if tp.TeamID, err = r.relatedID("team"); err != nil {
		return err
	}
	tp.ProjectID, err = r.relatedID("project")
	return err
}

// TeamProjectProjectAccessOptions choose project permissions of a custom
// record; nil fields are not sent (the server's custom default applies).
type TeamProjectProjectAccessOptions struct {
	Settings     *string `json:"settings,omitempty"`
	Teams        *string `json:"teams,omitempty"`
	VariableSets *string `json:"variable-sets,omitempty"`
}

// TeamProjectWorkspaceAccessOptions choose workspace permissions of a
// custom record; nil fields are not sent.
type TeamProjectWorkspaceAccessOptions struct {
	Runs          *string `json:"runs,omitempty"`
	Variables     *string `json:"variables,omitempty"`
	StateVersions *string `json:"state-versions,omitempty"`
	GateMocks     *string `json:"gate-mocks,omitempty"`
	Create        *bool   `json:"create,omitempty"`
	Move          *bool   `json:"move,omitempty"`
	Locking       *bool   `json:"locking,omitempty"`
	Delete        *bool   `json:"delete,omitempty"`
	RunTasks      *bool   `json:"run-tasks,omitempty"`
}

// TeamProjectAddOptions give a team access to a project.
type TeamProjectAddOptions struct {
	TeamID    string
	ProjectID string
	// Access is read, write, maintain, admin or custom.
	Access string
	// ProjectAccess and WorkspaceAccess may be set only with custom.
	ProjectAccess   *TeamProjectProjectAccessOptions
	WorkspaceAccess *TeamProjectWorkspaceAccessOptions
}

// TeamProjectUpdateOptions change a record; empty Access keeps the level.
type TeamProjectUpdateOptions struct {
	Access          string
	ProjectAccess   *TeamProjectProjectAccessOptions
	WorkspaceAccess *TeamProjectWorkspaceAccessOptions
}

// TeamProjectListOptions choose the project whose records to list.
type TeamProjectListOptions struct {
	PageOptions
	// ProjectID is required (filter[project][id]).
	ProjectID string
}

// TeamProjects is the client of /api/v2/team-projects.
type TeamProjects struct{ m *Client }

// TeamProjects returns the project team access endpoints.
func (m *Client) TeamProjects() *TeamProjects { return &TeamProjects{m: m} }

// teamProjectAttrs encodes the writable attributes of a record.
func teamProjectAttrs(access string, pa *TeamProjectProjectAccessOptions, wa *TeamProjectWorkspaceAccessOptions) map[string]any {
	attrs := map[string]any{}
	if access != "" {
		attrs["access"] = access
	}
	if pa != nil {
		attrs["project-access"] = pa
	}
	if wa != nil {
		attrs["workspace-access"] = wa
	}
	return attrs
}

// List returns one page of the access records of a project.
func (t *TeamProjects) List(ctx context.Context, opts TeamProjectListOptions) (*Page[TeamProject], error) {
	params := url.Values{}
	opts.apply(params)
	// Sent even when empty, so that the server (not the client) names
	// the missing filter.
	params.Set("filter[project][id]", opts.ProjectID)
	return fetchList(ctx, t.m, "/team-projects", params, "team-projects", finishTeamProject)
}

// Read returns the record with the given tprj- id.
func (t *TeamProjects) Read(ctx context.Context, id string) (*TeamProject, error) {
	return callOne(ctx, t.m, http.MethodGet, api.PathOf("team-projects", id), nil, nil, "team-projects", finishTeamProject)
}

// Add gives a team access to a project; the server answers 200 with the
// new record.
func (t *TeamProjects) Add(ctx context.Context, opts TeamProjectAddOptions) (*TeamProject, error) {
	rels := map[string]*JSONAPIRelationship{
		"project": toOne("projects", opts.ProjectID),
		"team":    toOne("teams", opts.TeamID),
	}
	res, err := newResource("team-projects", "", teamProjectAttrs(opts.Access, opts.ProjectAccess, opts.WorkspaceAccess), rels)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, t.m, http.MethodPost, "/team-projects", nil, dataDoc{res}, "team-projects", finishTeamProject)
}

// Update changes the record with the given id.
func (t *TeamProjects) Update(ctx context.Context, id string, opts TeamProjectUpdateOptions) (*TeamProject, error) {
	res, err := newResource("team-projects", id, teamProjectAttrs(opts.Access, opts.ProjectAccess, opts.WorkspaceAccess), nil)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, t.m, http.MethodPatch, api.PathOf("team-projects", id), nil, dataDoc{res}, "team-projects", finishTeamProject)
}

// Remove deletes the record with the given id.
func (t *TeamProjects) Remove(ctx context.Context, id string) error {
	_, err := t.m.Do(ctx, http.MethodDelete, api.PathOf("team-projects", id), nil, nil)
	return err
}
