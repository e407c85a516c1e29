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
	newPolicySets(s).mount(m, "/organizations/:org/policy-sets", "/policy-sets/:id")
}

// policySetView is a policy set the caller can see, with their authority
// in its organization.
type policySetView struct {
	ps *mgmt.PolicySet
	a  *mgmt.OrgAuthority
}

// newPolicySets is the policy set resource.
func newPolicySets(s *Server) *resource[*mgmt.OrgAuthority, policySetView, mgmt.PolicySetPatch] {
	mayManage := func(a *mgmt.OrgAuthority) error {
		if !a.CanManagePolicies() {
			return forbidden("not allowed to manage policy sets in organization %q", a.Organization.Name)
		}
		return nil
	}
	mayChange := func(v policySetView) error { return mayManage(v.a) }
	return &resource[*mgmt.OrgAuthority, policySetView, mgmt.PolicySetPatch]{
		s: s, typ: typePolicySets, prefix: mgmt.PrefixPolicySet, list: s.policySetList,
		readOnly: []string{"created-at", "updated-at"},
		scope: func(c *call, p httprouter.Params) (*mgmt.OrgAuthority, error) {
			return s.orgAuthority(c, p.ByName("org"))
		},
		load: func(c *call, p httprouter.Params) (policySetView, error) {
			ps, a, err := s.visiblePolicySet(c, p.ByName("id"))
			return policySetView{ps, a}, err
		},
		id:        func(v policySetView) string { return v.ps.ID },
		mayCreate: mayManage, mayUpdate: mayChange, mayDelete: mayChange,
		decode: func(o *jsonapi.ResourceObject, _ *policySetView) mgmt.PolicySetPatch { return readPolicySetPatch(o) },
		check: func(p mgmt.PolicySetPatch, current *policySetView) []error {
			return []error{p.Validate(current == nil)}
		},
		createCmd: func(a *mgmt.OrgAuthority, st stamp, p mgmt.PolicySetPatch) (store.MessageType, any) {
			return store.PolicySetCreateRequestType, &store.PolicySetCreateRequest{ID: st.id, OrganizationName: a.Organization.Name, CreatedAt: st.now, Attributes: p}
		},
		updateCmd: func(v policySetView, st stamp, p mgmt.PolicySetPatch) (store.MessageType, any) {
			return store.PolicySetUpdateRequestType, &store.PolicySetUpdateRequest{ID: v.ps.ID, Attributes: p, Now: st.now}
		},
		deleteCmd: func(v policySetView) (store.MessageType, any) {
			return store.PolicySetDeleteRequestType, &store.PolicySetDeleteRequest{ID: v.ps.ID}
		},
		show: func(_ *http.Request, v policySetView) (*jsonapi.Document, error) {
			return jsonapi.One(policySetResource(v.ps)), nil
		},
		showCreated: func(_ *mgmt.OrgAuthority, resp any) (*jsonapi.Document, error) {
			return jsonapi.One(policySetResource(resp.(*mgmt.PolicySet))), nil
		},
		showUpdated: func(_ *call, _ policySetView, resp any) (*jsonapi.Document, error) {
			return jsonapi.One(policySetResource(resp.(*mgmt.PolicySet))), nil
		},
	}
}

func (s *Server) policySetList(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, page, err := s.orgPage(c, p, r)
	if err != nil {
		return result{}, err
	}
	sets, err := s.store.PolicySetsByOrganization(nil, a.Organization.Name)
	if err != nil {
		return result{}, err
	}
	return pageDoc(r, page, sets, policySetResource)
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
