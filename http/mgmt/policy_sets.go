package mgmt

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Policy sets: named groups of policies that run on a policy version
// (policy-tool-version), which counts in that version's usage. Members of
// the organization list and read them; owners and teams with Manage
// policies create, update and delete them (403 for other members).
func (m *router) policySetRoutes() {
	s := m.s
	m.handle(http.MethodGet, "/organizations/:org/policy-sets", s.policySetList)
	m.handle(http.MethodPost, "/organizations/:org/policy-sets", s.policySetCreate)
	m.handle(http.MethodGet, "/policy-sets/:id", s.policySetRead)
	m.handle(http.MethodPatch, "/policy-sets/:id", s.policySetUpdate)
	m.handle(http.MethodDelete, "/policy-sets/:id", s.policySetDelete)
}

func (s *Server) policySetList(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, err := s.orgAuthority(c, p.ByName("org"))
	if err != nil {
		return result{}, err
	}
	page, err := pageOf(r)
	if err != nil {
		return result{}, err
	}
	sets, err := s.store.PolicySetsByOrganization(nil, a.Organization.Name)
	if err != nil {
		return result{}, err
	}
	items := []*jsonapi.Resource{}
	for _, ps := range pageSlice(sets, page) {
		items = append(items, policySetResource(ps))
	}
	return ok(listDoc(r, items, page, len(sets)))
}

func readPolicySetPatch(o *jsonapi.ResourceObject) mgmt.PolicySetPatch {
	a := o.Attrs
	return mgmt.PolicySetPatch{
		Name:              a.String("name"),
		Description:       a.NullableString("description"),
		Kind:              a.NullableString("kind"),
		Overridable:       a.Bool("overridable"),
		Global:            a.Bool("global"),
		PolicyToolVersion: a.NullableString("policy-tool-version"),
	}
}

func (s *Server) policySetCreate(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, err := s.orgAuthority(c, p.ByName("org"))
	if err != nil {
		return result{}, err
	}
	if !a.CanManagePolicies() {
		return result{}, forbidden("not allowed to manage policy sets in organization %q", a.Organization.Name)
	}
	o, err := readResource(r, jsonapi.Expect{Type: typePolicySets})
	if err != nil {
		return result{}, err
	}
	patch := readPolicySetPatch(o)
	if err := firstErr(o.Err(), patch.Validate(true)); err != nil {
		return result{}, err
	}
	resp, err := s.propose(w, r, store.PolicySetCreateRequestType, &store.PolicySetCreateRequest{
		ID: s.newID(mgmt.PrefixPolicySet), OrganizationName: a.Organization.Name, CreatedAt: s.now(), Attributes: patch})
	if err != nil {
		return result{}, err
	}
	return created(jsonapi.One(policySetResource(resp.(*mgmt.PolicySet))))
}

// visiblePolicySet loads a policy set with the caller's authority, or a
// 404 when the caller is not a member of its organization.
func (s *Server) visiblePolicySet(c *call, id string) (*mgmt.PolicySet, *mgmt.OrgAuthority, error) {
	ps, err := s.store.PolicySetByID(nil, id)
	if err != nil {
		return nil, nil, err
	}
	if ps == nil {
		return nil, nil, notFound("policy set", id)
	}
	a, err := s.store.OrgAuthorityFor(nil, c.caller, ps.OrganizationName)
	if err != nil {
		return nil, nil, err
	}
	if !a.CanAccess() {
		return nil, nil, notFound("policy set", id)
	}
	return ps, a, nil
}

func (s *Server) policySetRead(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	ps, _, err := s.visiblePolicySet(c, p.ByName("id"))
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(policySetResource(ps)))
}

func (s *Server) policySetUpdate(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	ps, a, err := s.visiblePolicySet(c, p.ByName("id"))
	if err != nil {
		return result{}, err
	}
	if !a.CanManagePolicies() {
		return result{}, forbidden("not allowed to manage policy sets in organization %q", a.Organization.Name)
	}
	o, err := readResource(r, jsonapi.Expect{Type: typePolicySets, ID: ps.ID})
	if err != nil {
		return result{}, err
	}
	o.Attrs.ReadOnly("created-at", "updated-at")
	patch := readPolicySetPatch(o)
	if err := firstErr(o.Err(), patch.Validate(false)); err != nil {
		return result{}, err
	}
	resp, err := s.propose(w, r, store.PolicySetUpdateRequestType, &store.PolicySetUpdateRequest{ID: ps.ID, Attributes: patch, Now: s.now()})
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(policySetResource(resp.(*mgmt.PolicySet))))
}

func (s *Server) policySetDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	ps, a, err := s.visiblePolicySet(c, p.ByName("id"))
	if err != nil {
		return result{}, err
	}
	if !a.CanManagePolicies() {
		return result{}, forbidden("not allowed to manage policy sets in organization %q", a.Organization.Name)
	}
	if _, err := s.propose(w, r, store.PolicySetDeleteRequestType, &store.PolicySetDeleteRequest{ID: ps.ID}); err != nil {
		return result{}, err
	}
	return noContent()
}
