package mgmt

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Organizations, as their members see them (the site administrator's view
// is admin.go), the organization token, and the organization's
// (empty) stacks.
//
// Who may do what: any user (and site administrators) may create an
// organization, becoming its owner; team and organization tokens may not
// (403). Members read it; owners update and delete it (403 for other
// members). Non-members, and everyone but site administrators when the
// organization is disabled, get 404.
func (m *router) organizationRoutes() {
	s := m.s
	newOrganizations(s).mount(m, "/organizations", "/organizations/:org")
	m.handle(http.MethodDelete, "/organizations/:org", s.orgDelete)
	token := &subjectToken[*mgmt.OrgAuthority]{
		s: s,
		load: func(c *call, p httprouter.Params) (*mgmt.OrgAuthority, error) {
			return s.orgAuthority(c, p.ByName("org"))
		},
		may: func(a *mgmt.OrgAuthority) error {
			return forbiddenUnless(a.Owner, "only owners may manage the token of organization %q", a.Organization.Name)
		},
		subject: func(a *mgmt.OrgAuthority) state.TokenSubject {
			return state.TokenSubject{Kind: state.SubjectKindOrganization, ID: a.Organization.ExternalID}
		},
	}
	m.handle(http.MethodPost, "/organizations/:org/authentication-token", token.create)
	m.handle(http.MethodDelete, "/organizations/:org/authentication-token", token.remove)
	m.handle(http.MethodGet, "/organizations/:org/stacks", s.orgStacks)
}

// orgPatch is what an organization create or update sends.
type orgPatch struct{ name, email, mode *string }

// readExecutionMode reads default-execution-mode (null returns to remote).
func readExecutionMode(o *jsonapi.ResourceObject, attr string) *string {
	if o.Attrs.IsNull(attr) {
		empty := ""
		return &empty
	}
	m := o.Attrs.String(attr)
	if m != nil {
		if msg := mgmt.ValidExecutionMode(*m); msg != "" {
			o.Attrs.Fail(attr, "%s", msg)
		}
	}
	return m
}

// newOrganizations is the organization resource, as its members see it. It
// is created by a caller, not in a scope, with the IDs of its owners team
// and Default Project; its name is its address and every row of it refers
// to it, so an update changes only email, and a different name is a 422 on
// the name attribute.
func newOrganizations(s *Server) *resource[mgmt.Caller, *mgmt.OrgAuthority, orgPatch] {
	return &resource[mgmt.Caller, *mgmt.OrgAuthority, orgPatch]{
		s: s, typ: typeOrganizations, prefix: mgmt.PrefixOrganization, list: s.orgList,
		readOnly: []string{"external-id", "created-at", "permissions"},
		scope:    func(c *call, _ httprouter.Params) (mgmt.Caller, error) { return c.caller, nil },
		load: func(c *call, p httprouter.Params) (*mgmt.OrgAuthority, error) {
			return s.orgAuthority(c, p.ByName("org"))
		},
		id: func(a *mgmt.OrgAuthority) string { return a.Organization.Name },
		mayCreate: func(c mgmt.Caller) error {
			return forbiddenUnless(mgmt.CanCreateOrganization(c), "only users and site administrators create organizations")
		},
		mayUpdate: func(a *mgmt.OrgAuthority) error {
			return forbiddenUnless(a.CanUpdateOrganization(), "only owners may update organization %q", a.Organization.Name)
		},
		decode: func(o *jsonapi.ResourceObject, current **mgmt.OrgAuthority) orgPatch {
			if current != nil {
				if name := o.Attrs.String("name"); name != nil && *name != (*current).Organization.Name {
					o.Attrs.Fail("name", "cannot be changed: an organization is addressed by its name")
				}
				return orgPatch{email: o.Attrs.String("email"), mode: readExecutionMode(o, "default-execution-mode")}
			}
			p := orgPatch{name: o.Attrs.String("name"), email: o.Attrs.String("email"), mode: readExecutionMode(o, "default-execution-mode")}
			if p.name == nil && !o.Attrs.Has("name") {
				o.Attrs.Fail("name", "is required")
			}
			if p.email == nil && !o.Attrs.Has("email") {
				o.Attrs.Fail("email", "is required")
			}
			return p
		},
		createCmd: func(c mgmt.Caller, st stamp, p orgPatch) (store.MessageType, any) {
			return store.OrganizationCreateRequestType, &store.OrganizationCreateRequest{
				Organization: &mgmt.Organization{Name: *p.name, ExternalID: st.id, Email: *p.email, CreatedAt: st.now,
					DefaultExecutionMode: deref(p.mode)},
				OwnersTeamID:     s.newID(mgmt.PrefixTeam),
				DefaultProjectID: s.newID(mgmt.PrefixProject),
				OwnerUserID:      c.UserID,
			}
		},
		updateCmd: func(a *mgmt.OrgAuthority, _ stamp, p orgPatch) (store.MessageType, any) {
			return store.OrganizationUpdateRequestType, &store.OrganizationUpdateRequest{Name: a.Organization.Name, Email: p.email, DefaultExecutionMode: p.mode}
		},
		show: func(_ *http.Request, a *mgmt.OrgAuthority) (*jsonapi.Document, error) {
			return jsonapi.One(organizationResource(a.Organization, a)), nil
		},
		showCreated: func(c mgmt.Caller, resp any) (*jsonapi.Document, error) {
			org := resp.(*mgmt.Organization)
			a, err := s.store.OrgAuthorityFor(nil, c, org.Name)
			if err != nil {
				return nil, err
			}
			return jsonapi.One(organizationResource(org, a)), nil
		},
		showUpdated: func(_ *call, a *mgmt.OrgAuthority, resp any) (*jsonapi.Document, error) {
			return jsonapi.One(organizationResource(resp.(*mgmt.Organization), a)), nil
		},
	}
}

// orgAuthority returns the caller's standing in organization name, or a
// 404 when the caller cannot see it.
func (s *Server) orgAuthority(c *call, name string) (*mgmt.OrgAuthority, error) {
	a, err := s.store.OrgAuthorityFor(nil, c.caller, name)
	if err != nil {
		return nil, err
	}
	if !a.CanAccess() {
		return nil, notFound("organization", name)
	}
	return a, nil
}

// orgPage returns the caller's standing in the organization the route
// names (404 when they cannot see it) and the page a list asks for.
func (s *Server) orgPage(c *call, p httprouter.Params, r *http.Request) (*mgmt.OrgAuthority, jsonapi.Page, error) {
	a, err := s.orgAuthority(c, p.ByName("org"))
	if err != nil {
		return nil, jsonapi.Page{}, err
	}
	page, err := pageOf(r)
	return a, page, err
}

func (s *Server) orgList(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *call) (result, error) {
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	q := r.URL.Query()
	search := store.OrganizationSearch{Query: q.Get("q"), Email: q.Get("q[email]"), Name: q.Get("q[name]")}
	list, err := s.store.SearchOrganizationsForCaller(nil, c.caller, search, statePage(page))
	if err != nil {
		return result{}, err
	}
	items := make([]*jsonapi.Resource, 0, len(list.Items))
	for _, o := range list.Items {
		a, err := s.store.OrgAuthorityFor(nil, c.caller, o.Name)
		if err != nil {
			return result{}, err
		}
		items = append(items, organizationResource(o, a))
	}
	return ok(listDoc(r, items, page, list.Matching))
}

func (s *Server) orgDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, err := s.orgAuthority(c, p.ByName("org"))
	if err != nil {
		return result{}, err
	}
	if !a.CanDestroyOrganization() {
		return result{}, forbidden("only owners may delete organization %q", a.Organization.Name)
	}
	return s.deleteOrganization(w, r, a.Organization)
}

// deleteOrganization deletes org with everything in it, then revokes the
// tokens of the organization and of its teams.
func (s *Server) deleteOrganization(w http.ResponseWriter, r *http.Request, org *mgmt.Organization) (result, error) {
	teams, err := s.store.TeamsByOrganization(nil, org.Name)
	if err != nil {
		return result{}, err
	}
	if _, err := s.propose(w, r, store.OrganizationDeleteRequestType, &store.OrganizationDeleteRequest{Name: org.Name}); err != nil {
		return result{}, err
	}
	subjects := []state.TokenSubject{{Kind: state.SubjectKindOrganization, ID: org.ExternalID}}
	for _, t := range teams {
		subjects = append(subjects, state.TokenSubject{Kind: state.SubjectKindTeam, ID: t.ID})
	}
	s.revokeTokens(w, r, subjects...)
	return noContent()
}

// orgStacks serves GET /organizations/:org/stacks: sched has no stacks,
// but terraform-provider-tfe lists them when it reads an organization, so
// the list exists and is empty.
func (s *Server) orgStacks(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	if _, err := s.orgAuthority(c, p.ByName("org")); err != nil {
		return result{}, err
	}
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	return ok(listDoc(r, nil, page, 0))
}
