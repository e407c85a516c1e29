package mgmt

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/schedhq/sched/http/api"
)

// Admin is the client of the site-administration endpoints
// (/api/v2/admin/..., spec §4 Admin). The server answers 404 to every
// admin path for a token that is not a site administrator's.
type Admin struct{ m *Client }

// Admin returns the site-administration endpoints.
func (m *Client) Admin() *Admin { return &Admin{m: m} }

// User is a user of the management API as the admin views include it
// (type users).
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Email    string `json:"email,omitempty"`
}

func finishUser(u *User, r *JSONAPIResource, _ *JSONAPIDocument) error {
	u.ID = r.ID
	return nil
}

// AdminOrganization is the admin view of an organization (type
// organizations, spec §2).
type AdminOrganization struct {
	Name            string `json:"name"`
	ExternalID      string `json:"external-id"`
	AccessBetaTools bool   `json:"access-beta-tools"`
	IsDisabled      bool   `json:"is-disabled"`
	// ApplyTimeout and PlanTimeout are durations ("24h"); "" when null.
	ApplyTimeout          string `json:"apply-timeout"`
	PlanTimeout           string `json:"plan-timeout"`
	ToolWorkerSudoEnabled bool   `json:"tool-worker-sudo-enabled"`
	NotificationEmail     string `json:"notification-email"`
	GlobalModuleSharing   bool   `json:"global-module-sharing"`
	GlobalProviderSharing bool   `json:"global-provider-sharing"`
	SSOEnabled            bool   `json:"sso-enabled"`
	// WorkspaceLimit is nil when there is none; 0 means it has no effect.
	WorkspaceLimit *int `json:"workspace-limit"`
	// OwnerIDs are the user ids of the owners relationship.
	OwnerIDs []string `json:"owner-ids,omitempty"`
	// Owners are the owners' users when the answer included them
	// (include=owners), in OwnerIDs order.
	Owners []*User `json:"owners,omitempty"`
}

func finishAdminOrganization(o *AdminOrganization, r *JSONAPIResource, doc *JSONAPIDocument) error {
	if o.Name == "" {
		o.Name = r.ID
	}
	var err error
	if o.OwnerIDs, err = r.relatedIDs("owners"); err != nil {
		return err
	}
	for _, id := range o.OwnerIDs {
		if inc := doc.Find("users", id); inc != nil {
			u, err := decodeResource(inc, "users", doc, finishUser)
			if err != nil {
				return err
			}
			o.Owners = append(o.Owners, u)
		}
	}
	return nil
}

// AdminOrganizationListOptions filter the admin organization list.
type AdminOrganizationListOptions struct {
	PageOptions
	// Query searches names and notification e-mails (q); it wins over
	// QueryEmail and QueryName.
	Query string
	// QueryEmail (q[email]) and QueryName (q[name]) must both match when
	// both are given.
	QueryEmail string
	QueryName  string
	// ModuleProducer and ProviderProducer, when set, keep the
	// organizations that do (true) or do not (false) share modules or
	// providers.
	ModuleProducer   *bool
	ProviderProducer *bool
	// IncludeOwners asks for the owners' users (include=owners).
	IncludeOwners bool
}

// AdminOrganizationStatusCounts is the admin organization list's
// meta.status-counts.
type AdminOrganizationStatusCounts struct {
	Total    int `json:"total"`
	Active   int `json:"active"`
	Disabled int `json:"disabled"`
}

// AdminOrganizationList is one page of the admin organization list.
type AdminOrganizationList struct {
	Page[AdminOrganization]
	StatusCounts AdminOrganizationStatusCounts
}

// AdminOrganizationUpdateOptions change an organization. Nil fields keep
// their value; a pointer to "" for a timeout sends null, which restores
// the default.
type AdminOrganizationUpdateOptions struct {
	AccessBetaTools       *bool
	GlobalModuleSharing   *bool
	GlobalProviderSharing *bool
	IsDisabled            *bool
	ApplyTimeout          *string
	PlanTimeout           *string
	WorkspaceLimit        *int
}

// AdminOrganizations is the client of /api/v2/admin/organizations.
type AdminOrganizations struct{ m *Client }

// Organizations returns the admin organization endpoints.
func (a *Admin) Organizations() *AdminOrganizations { return &AdminOrganizations{m: a.m} }

// List returns one page of every organization of the installation.
func (o *AdminOrganizations) List(ctx context.Context, opts AdminOrganizationListOptions) (*AdminOrganizationList, error) {
	params := url.Values{}
	opts.apply(params)
	setParam(params, "q", opts.Query)
	setParam(params, "q[email]", opts.QueryEmail)
	setParam(params, "q[name]", opts.QueryName)
	if opts.ModuleProducer != nil {
		params.Set("filter[module_producer]", strconv.FormatBool(*opts.ModuleProducer))
	}
	if opts.ProviderProducer != nil {
		params.Set("filter[provider_producer]", strconv.FormatBool(*opts.ProviderProducer))
	}
	if opts.IncludeOwners {
		params.Set("include", "owners")
	}
	page, err := fetchList(ctx, o.m, "/admin/organizations", params, "organizations", finishAdminOrganization)
	if err != nil {
		return nil, err
	}
	list := &AdminOrganizationList{Page: *page}
	if _, err := page.Document.DecodeMeta("status-counts", &list.StatusCounts); err != nil {
		return nil, err
	}
	return list, nil
}

// Read returns the organization called name, with its owners' users when
// includeOwners.
func (o *AdminOrganizations) Read(ctx context.Context, name string, includeOwners bool) (*AdminOrganization, error) {
	params := url.Values{}
	if includeOwners {
		params.Set("include", "owners")
	}
	return callOne(ctx, o.m, http.MethodGet, api.PathOf("admin", "organizations", name), params, nil, "organizations", finishAdminOrganization)
}

// Update changes the organization called name.
func (o *AdminOrganizations) Update(ctx context.Context, name string, opts AdminOrganizationUpdateOptions) (*AdminOrganization, error) {
	attrs := map[string]any{}
	putValue(attrs, "access-beta-tools", opts.AccessBetaTools)
	putValue(attrs, "global-module-sharing", opts.GlobalModuleSharing)
	putValue(attrs, "global-provider-sharing", opts.GlobalProviderSharing)
	putValue(attrs, "is-disabled", opts.IsDisabled)
	putString(attrs, "apply-timeout", opts.ApplyTimeout)
	putString(attrs, "plan-timeout", opts.PlanTimeout)
	putValue(attrs, "workspace-limit", opts.WorkspaceLimit)
	res, err := newResource("organizations", name, attrs, nil)
	if err != nil {
		return nil, err
	}
	return callOne(ctx, o.m, http.MethodPatch, api.PathOf("admin", "organizations", name), nil, dataDoc{res}, "organizations", finishAdminOrganization)
}

// Delete deletes the organization called name and everything in it.
func (o *AdminOrganizations) Delete(ctx context.Context, name string) error {
	_, err := o.m.Do(ctx, http.MethodDelete, api.PathOf("admin", "organizations", name), nil, nil)
	return err
}

// ModuleConsumers returns one page of the organizations allowed to use
// name's modules.
func (o *AdminOrganizations) ModuleConsumers(ctx context.Context, name string, page PageOptions) (*Page[AdminOrganization], error) {
	return o.consumers(ctx, name, "module-consumers", page)
}

// ProviderConsumers returns one page of the organizations allowed to use
// name's providers.
func (o *AdminOrganizations) ProviderConsumers(ctx context.Context, name string, page PageOptions) (*Page[AdminOrganization], error) {
	return o.consumers(ctx, name, "provider-consumers", page)
}

func (o *AdminOrganizations) consumers(ctx context.Context, name, kind string, page PageOptions) (*Page[AdminOrganization], error) {
	params := url.Values{}
	page.apply(params)
	return fetchList(ctx, o.m, api.PathOf("admin", "organizations", name, "relationships", kind), params, "organizations", finishAdminOrganization)
}

// UpdateModuleConsumers replaces the organizations allowed to use name's
// modules, which turns global module sharing off. The endpoint is
// deprecated in the spec, and kept for the clients that still use it.
func (o *AdminOrganizations) UpdateModuleConsumers(ctx context.Context, name string, consumers []string) error {
	data := make([]ResourceIdentifier, 0, len(consumers))
	for _, c := range consumers {
		data = append(data, ResourceIdentifier{Type: "organizations", ID: c})
	}
	_, err := o.m.Do(ctx, http.MethodPatch, api.PathOf("admin", "organizations", name, "relationships", "module-consumers"), nil, dataDoc{data})
	return err
}

// Admin workspace list sorts (each may be prefixed with "-").
const (
	AdminWorkspaceSortName             = "name"
	AdminWorkspaceSortCurrentRunCreate = "current-run.created-at"
	AdminWorkspaceSortLatestChange     = "latest-change-at"
)

// Admin workspace includes.
const (
	AdminIncludeOrganization       = "organization"
	AdminIncludeOrganizationOwners = "organization.owners"
	AdminIncludeCurrentRun         = "current_run"
)

// AdminWorkspaceListOptions filter and order the admin workspace list.
type AdminWorkspaceListOptions struct {
	PageOptions
	// Query searches workspace and organization names (q).
	Query string
	// RunStatuses keeps the workspaces whose current run is in one of
	// these statuses (filter[current_run][status]).
	RunStatuses []string
	// Sort is one of the AdminWorkspaceSort values, optionally prefixed
	// with "-".
	Sort string
	// Include lists AdminInclude values.
	Include []string
}

// AdminWorkspaceList is one page of the admin workspace list.
type AdminWorkspaceList struct {
	Page[Workspace]
	// StatusCounts holds meta.status-counts: the count of workspaces per
	// current-run status (pending, planning, ..., none) and total.
	StatusCounts map[string]int
}

// AdminWorkspaces is the client of /api/v2/admin/workspaces.
type AdminWorkspaces struct{ m *Client }

// Workspaces returns the admin workspace endpoints.
func (a *Admin) Workspaces() *AdminWorkspaces { return &AdminWorkspaces{m: a.m} }

// List returns one page of every workspace of the installation.
func (w *AdminWorkspaces) List(ctx context.Context, opts AdminWorkspaceListOptions) (*AdminWorkspaceList, error) {
	params := url.Values{}
	opts.apply(params)
	setParam(params, "q", opts.Query)
	setParam(params, "filter[current_run][status]", commaList(opts.RunStatuses))
	setParam(params, "sort", opts.Sort)
	setParam(params, "include", commaList(opts.Include))
	page, err := fetchList(ctx, w.m, "/admin/workspaces", params, "workspaces", finishWorkspace)
	if err != nil {
		return nil, err
	}
	list := &AdminWorkspaceList{Page: *page}
	if _, err := page.Document.DecodeMeta("status-counts", &list.StatusCounts); err != nil {
		return nil, err
	}
	return list, nil
}

// Read returns the workspace with the given ws- id, with the includes
// asked for.
func (w *AdminWorkspaces) Read(ctx context.Context, id string, include ...string) (*Workspace, error) {
	params := url.Values{}
	setParam(params, "include", commaList(include))
	return callOne(ctx, w.m, http.MethodGet, api.PathOf("admin", "workspaces", id), params, nil, "workspaces", finishWorkspace)
}

// Delete destroys the workspace with the given id.
func (w *AdminWorkspaces) Delete(ctx context.Context, id string) error {
	_, err := w.m.Do(ctx, http.MethodDelete, api.PathOf("admin", "workspaces", id), nil, nil)
	return err
}
