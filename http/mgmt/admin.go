package mgmt

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Site administration of workspaces and organizations (spec §4 Admin).
// Only site administrators (management tokens and users marked admin) use
// these endpoints; everyone else gets 404 on every one of them (spec
// §5.4), as from any path that does not exist.
//
// Where the spec is silent: PATCH .../relationships/provider-consumers
// exists next to the module-consumers one (same body, same 204), since
// without it provider consumers could never be configured.
func (m *router) adminRoutes() {
	s := admin{m.s}
	m.handle(http.MethodGet, "/admin/workspaces", adminOnly(s.listWorkspaces))
	m.handle(http.MethodGet, "/admin/workspaces/:id", adminOnly(s.readWorkspace))
	s.workspaces().mount(m, "", "/admin/workspaces/:id", adminOnly)
	m.handle(http.MethodGet, "/admin/organizations", adminOnly(s.listOrgs))
	m.handle(http.MethodGet, "/admin/organizations/:name", adminOnly(s.readOrg))
	s.organizations().mount(m, "", "/admin/organizations/:name", adminOnly)
	m.handle(http.MethodDelete, "/admin/organizations/:name", adminOnly(s.deleteOrg))
	for _, kind := range []string{store.ConsumerKindModule, store.ConsumerKindProvider} {
		path := "/admin/organizations/:name/relationships/" + kind + "-consumers"
		m.handle(http.MethodGet, path, adminOnly(s.consumers(kind)))
		m.handle(http.MethodPatch, path, adminOnly(s.replaceConsumers(kind)))
	}
}

// admin serves site administration: a surface of its own, which only site
// administrators see (adminOnly), on the server's machinery.
type admin struct{ *Server }

// Include paths of the admin workspace endpoints (spec §4).
const (
	includeOrganization = "organization"
	includeOrgOwners    = "organization.owners"
	includeCurrentRun   = "current_run"
	includeOwners       = "owners"
)

// includes adds to doc what include asks of workspace entries.
func (s admin) includes(doc *jsonapi.Document, inc map[string]bool, entries []store.AdminWorkspaceEntry) error {
	orgs := map[string]bool{}
	for _, e := range entries {
		if inc[includeCurrentRun] && e.CurrentRun != nil {
			doc.Include(runResource(e.CurrentRun))
		}
		name := e.Workspace.OrganizationName
		if (!inc[includeOrganization] && !inc[includeOrgOwners]) || orgs[name] {
			continue
		}
		orgs[name] = true
		org, err := s.store.OrganizationByName(nil, name)
		if err != nil {
			return err
		}
		if org == nil {
			continue
		}
		owners, err := s.store.OrganizationOwners(nil, name)
		if err != nil {
			return err
		}
		doc.Include(adminOrganizationResource(org, owners))
		if inc[includeOrgOwners] {
			for _, u := range owners {
				doc.Include(userResource(u, true))
			}
		}
	}
	return nil
}

// listWorkspaces serves GET /admin/workspaces. meta.status-counts
// counts the workspaces matching q by their current run's status: every
// run status of spec §3 (kebab-case, as the spec writes them), none and
// total.
func (s admin) listWorkspaces(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	q := r.URL.Query()
	inc, err := jsonapi.ParseInclude(q, includeOrganization, includeOrgOwners, includeCurrentRun)
	if err != nil {
		return result{}, err
	}
	list, err := s.store.ListAdminWorkspaces(nil, store.AdminWorkspaceListOptions{
		Query:    q.Get("q"),
		Statuses: jsonapi.SplitList(q.Get("filter[current_run][status]")),
		Sort:     q.Get("sort"),
		Page:     statePage(page),
	})
	if err != nil {
		return result{}, err
	}
	items := make([]*jsonapi.Resource, len(list.Items))
	for i, e := range list.Items {
		items[i] = adminWorkspaceResource(e.Workspace)
	}
	doc := listDoc(r, items, page, list.Matching)
	if err := s.includes(doc, inc, list.Items); err != nil {
		return result{}, err
	}
	counts := make(map[string]int, len(list.StatusCounts))
	for k, v := range list.StatusCounts {
		counts[kebabCase(k)] = v
	}
	doc.SetMeta("status-counts", counts)
	return ok(doc)
}

// workspace loads a workspace with its current run, or a 404.
func (s admin) workspace(id string) (store.AdminWorkspaceEntry, error) {
	ws, err := s.store.WorkspaceByID(nil, id)
	if err != nil {
		return store.AdminWorkspaceEntry{}, err
	}
	if ws == nil {
		return store.AdminWorkspaceEntry{}, notFound("workspace", id)
	}
	e := store.AdminWorkspaceEntry{Workspace: ws}
	if ws.CurrentRunID != "" {
		if e.CurrentRun, err = s.store.RunByID(nil, ws.CurrentRunID); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (s admin) readWorkspace(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	inc, err := jsonapi.ParseInclude(r.URL.Query(), includeOrganization, includeOrgOwners, includeCurrentRun)
	if err != nil {
		return result{}, err
	}
	e, err := s.workspace(p.ByName("id"))
	if err != nil {
		return result{}, err
	}
	doc := jsonapi.One(adminWorkspaceResource(e.Workspace))
	if err := s.includes(doc, inc, []store.AdminWorkspaceEntry{e}); err != nil {
		return result{}, err
	}
	return ok(doc)
}

// workspaces is the resource of the administrator's workspace delete
// (reads include what the caller asks for before finding the workspace:
// readWorkspace).
func (s admin) workspaces() *resource[struct{}, store.AdminWorkspaceEntry, struct{}] {
	return &resource[struct{}, store.AdminWorkspaceEntry, struct{}]{
		s: s.Server,
		load: func(_ *call, p httprouter.Params) (store.AdminWorkspaceEntry, error) {
			return s.workspace(p.ByName("id"))
		},
		deleteCmd: func(e store.AdminWorkspaceEntry) (store.MessageType, any) {
			return store.WorkspaceDeleteRequestType, &store.WorkspaceDeleteRequest{ID: e.Workspace.ID}
		},
	}
}

// orgResource renders an organization with its owners, and includes
// the owners when asked.
func (s admin) orgResource(doc *jsonapi.Document, o *mgmt.Organization, includeUsers bool) (*jsonapi.Resource, error) {
	owners, err := s.store.OrganizationOwners(nil, o.Name)
	if err != nil {
		return nil, err
	}
	if includeUsers && doc != nil {
		for _, u := range owners {
			doc.Include(userResource(u, true))
		}
	}
	return adminOrganizationResource(o, owners), nil
}

// listOrgs serves GET /admin/organizations: q (name or notification
// e-mail; wins over the others), q[email], q[name] (both must match when
// both are given), filter[module_producer], filter[provider_producer],
// include=owners; meta.status-counts total, active, disabled.
func (s admin) listOrgs(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	q := r.URL.Query()
	inc, err := jsonapi.ParseInclude(q, includeOwners)
	if err != nil {
		return result{}, err
	}
	opts := store.AdminOrganizationListOptions{Query: q.Get("q"), Email: q.Get("q[email]"), Name: q.Get("q[name]"), Page: statePage(page)}
	if opts.ModuleProducer, err = jsonapi.ParseBool(q, "filter[module_producer]"); err != nil {
		return result{}, err
	}
	if opts.ProviderProducer, err = jsonapi.ParseBool(q, "filter[provider_producer]"); err != nil {
		return result{}, err
	}
	list, err := s.store.ListAdminOrganizations(nil, opts)
	if err != nil {
		return result{}, err
	}
	doc := jsonapi.Many(nil)
	items := make([]*jsonapi.Resource, 0, len(list.Items))
	for _, o := range list.Items {
		res, err := s.orgResource(doc, o, inc[includeOwners])
		if err != nil {
			return result{}, err
		}
		items = append(items, res)
	}
	doc.Data = items
	jsonapi.Paginate(doc, r, page, list.Matching)
	doc.SetMeta("status-counts", map[string]int{"total": list.Matching, "active": list.Active, "disabled": list.Disabled})
	return ok(doc)
}

// org loads organization name, or a 404.
func (s admin) org(name string) (*mgmt.Organization, error) {
	o, err := s.store.OrganizationByName(nil, name)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, notFound("organization", name)
	}
	return o, nil
}

func (s admin) orgDoc(o *mgmt.Organization, includeOwners bool) (*jsonapi.Document, error) {
	doc := jsonapi.One(nil)
	res, err := s.orgResource(doc, o, includeOwners)
	if err != nil {
		return nil, err
	}
	doc.Data = res
	return doc, nil
}

func (s admin) readOrg(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	inc, err := jsonapi.ParseInclude(r.URL.Query(), includeOwners)
	if err != nil {
		return result{}, err
	}
	o, err := s.org(p.ByName("name"))
	if err != nil {
		return result{}, err
	}
	doc, err := s.orgDoc(o, inc[includeOwners])
	if err != nil {
		return result{}, err
	}
	return ok(doc)
}

// adminOrgExpect: data.type may be left out (go-tfe sends the admin
// organization update without one), but a wrong type is a 422, as the
// spec's error table answers every malformed body of this endpoint.
func adminOrgExpect(name string) jsonapi.Expect {
	return jsonapi.Expect{Type: typeOrganizations, AllowEmptyType: true, WrongTypeStatus: http.StatusUnprocessableEntity, ID: name}
}

// organizations is the resource of the administrator's organization
// update: PATCH /admin/organizations/:name with every attribute of the
// spec's table (and tool-worker-sudo-enabled, which the view shows).
// Timeouts take null to return to their defaults (24h, 2h); the
// deprecated tool-build-worker-* timeouts are used when their
// replacements are absent; workspace-limit takes null to remove the
// limit. Reads and deletes have their own shape (readOrg, deleteOrg).
func (s admin) organizations() *resource[struct{}, *mgmt.Organization, mgmt.OrganizationAdminPatch] {
	return &resource[struct{}, *mgmt.Organization, mgmt.OrganizationAdminPatch]{
		s:        s.Server,
		expect:   adminOrgExpect,
		readOnly: []string{"name", "external-id", "notification-email", "sso-enabled", "created-at"},
		load:     func(_ *call, p httprouter.Params) (*mgmt.Organization, error) { return s.org(p.ByName("name")) },
		id:       func(o *mgmt.Organization) string { return o.Name },
		decode: func(o *jsonapi.ResourceObject, _ **mgmt.Organization) mgmt.OrganizationAdminPatch {
			a := o.Attrs
			patch := mgmt.OrganizationAdminPatch{
				AccessBetaTools:         a.Bool("access-beta-tools"),
				GlobalModuleSharing:     a.Bool("global-module-sharing"),
				GlobalProviderSharing:   a.Bool("global-provider-sharing"),
				IsDisabled:              a.Bool("is-disabled"),
				ToolWorkerSudoEnabled:   a.Bool("tool-worker-sudo-enabled"),
				ApplyTimeout:            a.NullableString("apply-timeout"),
				PlanTimeout:             a.NullableString("plan-timeout"),
				BuildWorkerApplyTimeout: a.NullableString("tool-build-worker-apply-timeout"),
				BuildWorkerPlanTimeout:  a.NullableString("tool-build-worker-plan-timeout"),
			}
			patch.WorkspaceLimit, patch.SetWorkspaceLimit = a.NullableInt("workspace-limit")
			return patch
		},
		check: func(p mgmt.OrganizationAdminPatch, _ **mgmt.Organization) []error { return []error{p.Validate()} },
		updateCmd: func(o *mgmt.Organization, _ stamp, p mgmt.OrganizationAdminPatch) (store.MessageType, any) {
			return store.OrganizationAdminUpdateRequestType, &store.OrganizationAdminUpdateRequest{Name: o.Name, Patch: p}
		},
		showUpdated: func(_ *call, _ *mgmt.Organization, resp any) (*jsonapi.Document, error) {
			return s.orgDoc(resp.(*mgmt.Organization), false)
		},
	}
}

func (s admin) deleteOrg(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	o, err := s.org(p.ByName("name"))
	if err != nil {
		return result{}, err
	}
	return s.deleteOrganization(w, r, o)
}

// consumers serves GET .../relationships/{module,provider}-consumers:
// the organizations allowed to use this one's modules or providers,
// paginated; empty under global sharing.
func (s admin) consumers(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		page, err := pageOf(r)
		if err != nil {
			return result{}, err
		}
		list, err := s.store.OrganizationConsumers(nil, p.ByName("name"), kind, statePage(page))
		if err != nil {
			return result{}, err
		}
		items := make([]*jsonapi.Resource, 0, len(list.Items))
		for _, o := range list.Items {
			res, err := s.orgResource(nil, o, false)
			if err != nil {
				return result{}, err
			}
			items = append(items, res)
		}
		return ok(listDoc(r, items, page, list.Matching))
	}
}

// replaceConsumers serves PATCH .../relationships/{kind}-consumers:
// the body's organizations become the consumers, and global sharing of
// that kind turns off (spec §3). 204. A consumer that does not exist is a
// 422 naming its entry.
func (s admin) replaceConsumers(kind string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
		o, err := s.org(p.ByName("name"))
		if err != nil {
			return result{}, err
		}
		doc, err := readDoc(r)
		if err != nil {
			return result{}, err
		}
		refs, err := doc.Identifiers(typeOrganizations)
		if err != nil {
			return result{}, err
		}
		names := make([]string, len(refs))
		for i, ref := range refs {
			names[i] = ref.ID
		}
		if _, err := s.propose(w, r, store.OrganizationConsumersReplaceRequestType,
			&store.OrganizationConsumersReplaceRequest{Name: o.Name, Kind: kind, Consumers: names}); err != nil {
			return result{}, err
		}
		return noContent()
	}
}
