package mgmt

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/schedhq/sched/http/api"
)

// Organization is an organization of the management API as its members
// see it (type organizations). Organizations are addressed by name, which
// is also their JSON:API id.
type Organization struct {
	Name       string    `json:"name"`
	ExternalID string    `json:"external-id"`
	Email      string    `json:"email"`
	CreatedAt  time.Time `json:"created-at"`
}

func finishOrganization(o *Organization, r *JSONAPIResource, _ *JSONAPIDocument) error {
	if o.Name == "" {
		o.Name = r.ID
	}
	return nil
}

// OrganizationCreateOptions are the attributes of a new organization.
type OrganizationCreateOptions struct {
	// Name is required; it is the organization's address for good.
	Name string
	// Email is the organization's contact address. Empty sends none and
	// lets the server decide whether it is required.
	Email string
}

// Organizations is the client of /api/v2/organizations.
type Organizations struct{ m *Client }

// Organizations returns the organization endpoints.
func (m *Client) Organizations() *Organizations { return &Organizations{m: m} }

// Create creates an organization; the server gives it an owners team (with
// the caller on it) and a "Default Project".
func (o *Organizations) Create(ctx context.Context, opts OrganizationCreateOptions) (*Organization, error) {
	attrs := map[string]any{"name": opts.Name}
	if opts.Email != "" {
		attrs["email"] = opts.Email
	}
	res, err := newResource("organizations", "", attrs, nil)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, o.m, http.MethodPost, "/organizations", nil, dataDoc{res}, "organizations", finishOrganization)
}

// List returns one page of the organizations the token may see.
func (o *Organizations) List(ctx context.Context, page PageOptions) (*Page[Organization], error) {
	params := url.Values{}
	page.apply(params)
	return fetchList(ctx, o.m, "/organizations", params, "organizations", finishOrganization)
}

// Read returns the organization called name.
func (o *Organizations) Read(ctx context.Context, name string) (*Organization, error) {
	return callOne(ctx, o.m, http.MethodGet, api.PathOf("organizations", name), nil, nil, "organizations", finishOrganization)
}

// Workspace is a workspace (type workspaces). The admin view fills only
// ID, Name, Locked, VCSRepo, Organization and CurrentRunID (spec §2); the
// other fields are those of the organization's workspace endpoints.
type Workspace struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Locked      bool              `json:"locked"`
	VCSRepo     *WorkspaceVCSRepo `json:"vcs-repo,omitempty"`
	// ToolVersion is the version of the provisioning tool the workspace
	// runs ("" for the default).
	ToolVersion string `json:"tool-version,omitempty"`
	// AutoDestroyActivityDuration is the effective inactivity period
	// ("14d", "12h"; "" for none), inherited from the project unless the
	// workspace overrides it.
	AutoDestroyActivityDuration string    `json:"auto-destroy-activity-duration,omitempty"`
	CreatedAt                   time.Time `json:"created-at,omitzero"`
	// LatestChangeAt is when the newest state version was created, or the
	// workspace when it has none.
	LatestChangeAt time.Time `json:"latest-change-at,omitzero"`

	// Organization is the name of the workspace's organization.
	Organization string `json:"organization"`
	// ProjectID is the workspace's project ("" when the view omits it).
	ProjectID string `json:"project,omitempty"`
	// CurrentRunID is the workspace's newest run ("" when none).
	CurrentRunID string `json:"current-run,omitempty"`
	// CurrentRun is the newest run when the answer included it
	// (include=current_run on the admin endpoints).
	CurrentRun *WorkspaceRun `json:"current-run-detail,omitempty"`
}

// WorkspaceVCSRepo links a workspace to a repository.
type WorkspaceVCSRepo struct {
	// Identifier is the repository, such as "acme/network".
	Identifier string `json:"identifier"`
	Branch     string `json:"branch,omitempty"`
}

// WorkspaceRun is the part of a run (type runs) the workspace views show.
type WorkspaceRun struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created-at,omitzero"`
}

func finishRun(run *WorkspaceRun, r *JSONAPIResource, _ *JSONAPIDocument) error {
	run.ID = r.ID
	return nil
}

func finishWorkspace(w *Workspace, r *JSONAPIResource, doc *JSONAPIDocument) error {
	w.ID = r.ID
	var err error
	if w.Organization, err = r.relatedID("organization"); err != nil {
		return err
	}
	if w.ProjectID, err = r.relatedID("project"); err != nil {
		return err
	}
	if w.CurrentRunID, err = r.relatedID("current-run"); err != nil {
		return err
	}
	if w.CurrentRunID != "" {
		if inc := doc.Find("runs", w.CurrentRunID); inc != nil {
			if w.CurrentRun, err = decodeResource(inc, "runs", doc, finishRun); err != nil {
				return err
			}
		}
	}
	return nil
}

// WorkspaceCreateOptions are the attributes of a new workspace. Nil and
// empty fields are not sent, so the server's defaults apply.
type WorkspaceCreateOptions struct {
	// Name is required.
	Name        string
	Description *string
	// ProjectID places the workspace; empty means the organization's
	// Default Project.
	ProjectID string
	// ToolVersion pins the tool version.
	ToolVersion *string
	// AutoDestroyActivityDuration overrides the project's ("14d", "12h").
	AutoDestroyActivityDuration *string
	// VCSRepoIdentifier links the workspace to a repository.
	VCSRepoIdentifier string
}

// WorkspaceListOptions filter an organization's workspace list.
type WorkspaceListOptions struct {
	PageOptions
	// Search matches part of the name (search[name]).
	Search string
}

// Workspaces is the client of an organization's workspaces.
type Workspaces struct{ m *Client }

// Workspaces returns the workspace endpoints.
func (m *Client) Workspaces() *Workspaces { return &Workspaces{m: m} }

// Create creates a workspace in org.
func (w *Workspaces) Create(ctx context.Context, org string, opts WorkspaceCreateOptions) (*Workspace, error) {
	attrs := map[string]any{"name": opts.Name}
	putString(attrs, "description", opts.Description)
	putString(attrs, "tool-version", opts.ToolVersion)
	putString(attrs, "auto-destroy-activity-duration", opts.AutoDestroyActivityDuration)
	if opts.VCSRepoIdentifier != "" {
		attrs["vcs-repo"] = map[string]any{"identifier": opts.VCSRepoIdentifier}
	}
	var rels map[string]*JSONAPIRelationship
	if opts.ProjectID != "" {
		rels = map[string]*JSONAPIRelationship{"project": toOne("projects", opts.ProjectID)}
	}
	res, err := newResource("workspaces", "", attrs, rels)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, w.m, http.MethodPost, api.PathOf("organizations", org, "workspaces"), nil, dataDoc{res}, "workspaces", finishWorkspace)
}

// List returns one page of org's workspaces.
func (w *Workspaces) List(ctx context.Context, org string, opts WorkspaceListOptions) (*Page[Workspace], error) {
	params := url.Values{}
	opts.apply(params)
	setParam(params, "search[name]", opts.Search)
	return fetchList(ctx, w.m, api.PathOf("organizations", org, "workspaces"), params, "workspaces", finishWorkspace)
}

// Read returns org's workspace called name.
func (w *Workspaces) Read(ctx context.Context, org, name string) (*Workspace, error) {
	return callOne(ctx, w.m, http.MethodGet, api.PathOf("organizations", org, "workspaces", name), nil, nil, "workspaces", finishWorkspace)
}

// ReadByID returns the workspace with the given ws- id.
func (w *Workspaces) ReadByID(ctx context.Context, id string) (*Workspace, error) {
	return callOne(ctx, w.m, http.MethodGet, api.PathOf("workspaces", id), nil, nil, "workspaces", finishWorkspace)
}

// Delete deletes the workspace with the given ws- id.
func (w *Workspaces) Delete(ctx context.Context, id string) error {
	_, err := w.m.Do(ctx, http.MethodDelete, api.PathOf("workspaces", id), nil, nil)
	return err
}
