package mgmt

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
	"github.com/schedhq/sched/state/store"
)

// Agent pools, as go-tfe's AgentPools calls them: list and create under
// an organization, read, update and delete by ID. An agent pool is a node
// pool of the cluster (state/mgmt/agent_pool.go): the runs of a workspace
// in agent execution mode with pool N execute on node pool N. Members of
// the organization read pools; its owners create, change and delete them.
// sched registers no agents, so a pool's agent-count is 0.

// agentPoolRoutes registers agent pools.
func (m *router) agentPoolRoutes() {
	s := terraformAPI{m.s}
	m.handle(http.MethodGet, "/organizations/:org/agent-pools", s.agentPoolList)
	m.handle(http.MethodPost, "/organizations/:org/agent-pools", s.agentPoolCreate)
	m.handle(http.MethodGet, "/agent-pools/:pool", s.agentPoolShow)
	m.handle(http.MethodPatch, "/agent-pools/:pool", s.agentPoolUpdate)
	m.handle(http.MethodDelete, "/agent-pools/:pool", s.agentPoolDelete)
}

func (s terraformAPI) agentPoolList(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, page, err := s.orgPage(c, p, r)
	if err != nil {
		return result{}, err
	}
	pools, err := s.store.AgentPoolsByOrganization(nil, a.Organization.Name)
	if err != nil {
		return result{}, err
	}
	q := r.URL.Query()
	if pools, err = s.filterAgentPools(pools, a.Organization.Name, q.Get("q"), q.Get("filter[allowed_workspaces][name]")); err != nil {
		return result{}, err
	}
	switch sort := q.Get("sort"); sort {
	case "", "created-at":
	case "-created-at":
		slices.Reverse(pools)
	case "name", "-name":
		slices.SortStableFunc(pools, func(x, y *mgmt.AgentPool) int {
			return strings.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name))
		})
		if sort == "-name" {
			slices.Reverse(pools)
		}
	default:
		return result{}, jsonapi.ParameterError("sort", "must be one of name, created-at, -name, -created-at")
	}
	return pageDoc(r, page, pools, agentPoolResource)
}

// filterAgentPools keeps the pools whose name holds query (any case) and,
// given a workspace name, those that workspace may use (organization-
// scoped, or allowing it).
func (s terraformAPI) filterAgentPools(pools []*mgmt.AgentPool, org, query, workspace string) ([]*mgmt.AgentPool, error) {
	wsID := ""
	if workspace != "" {
		w, err := s.store.WorkspaceByName(nil, org, workspace)
		if err != nil {
			return nil, err
		}
		if w == nil {
			return []*mgmt.AgentPool{}, nil
		}
		wsID = w.ID
	}
	return slices.DeleteFunc(pools, func(p *mgmt.AgentPool) bool {
		if query != "" && !strings.Contains(strings.ToLower(p.Name), strings.ToLower(query)) {
			return true
		}
		return wsID != "" && !p.OrganizationScoped && !slices.Contains(p.AllowedWorkspaceIDs, wsID)
	}), nil
}

// readAgentPoolPatch reads name, organization-scoped and the
// allowed-workspaces relationship.
func readAgentPoolPatch(o *jsonapi.ResourceObject) mgmt.AgentPoolPatch {
	var p mgmt.AgentPoolPatch
	p.Name = o.Attrs.String("name")
	p.OrganizationScoped = o.Attrs.Bool("organization-scoped")
	if objs, sent := o.ToManyObjects("allowed-workspaces", typeWorkspaces); sent {
		ids := make([]string, 0, len(objs))
		for _, x := range objs {
			ids = append(ids, x.ID)
		}
		p.AllowedWorkspaceIDs = &ids
	}
	return p
}

func (s terraformAPI) agentPoolCreate(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, err := s.orgAuthority(c, p.ByName("org"))
	if err != nil {
		return result{}, err
	}
	if err := forbiddenUnless(a.Owner, "only owners of organization %q manage its agent pools", a.Organization.Name); err != nil {
		return result{}, err
	}
	o, err := readResource(r, jsonapi.Expect{Type: typeAgentPools})
	if err != nil {
		return result{}, err
	}
	patch := readAgentPoolPatch(o)
	if err := firstErr(o.Err(), patch.Validate(true)); err != nil {
		return result{}, err
	}
	resp, err := s.propose(w, r, store.AgentPoolUpsertRequestType, &store.AgentPoolUpsertRequest{Create: true,
		ID: s.newID(mgmt.PrefixAgentPool), OrganizationName: a.Organization.Name, Patch: patch, Now: s.now()})
	if err != nil {
		return result{}, err
	}
	return created(jsonapi.One(agentPoolResource(resp.(*mgmt.AgentPool))))
}

// agentPool loads a pool of an organization the caller can see (404
// otherwise), with the caller's standing there.
func (s terraformAPI) agentPool(c *call, id string) (*mgmt.AgentPool, *mgmt.OrgAuthority, error) {
	pool, err := s.store.AgentPoolByID(nil, id)
	if err != nil {
		return nil, nil, err
	}
	if pool == nil {
		return nil, nil, notFound("agent pool", id)
	}
	a, err := s.orgAuthority(c, pool.OrganizationName)
	if err != nil {
		return nil, nil, notFound("agent pool", id)
	}
	return pool, a, nil
}

func (s terraformAPI) agentPoolShow(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	pool, _, err := s.agentPool(c, p.ByName("pool"))
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(agentPoolResource(pool)))
}

func (s terraformAPI) agentPoolUpdate(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	pool, a, err := s.agentPool(c, p.ByName("pool"))
	if err != nil {
		return result{}, err
	}
	if err := forbiddenUnless(a.Owner, "only owners of organization %q manage its agent pools", a.Organization.Name); err != nil {
		return result{}, err
	}
	o, err := readResource(r, jsonapi.Expect{Type: typeAgentPools, ID: pool.ID})
	if err != nil {
		return result{}, err
	}
	patch := readAgentPoolPatch(o)
	if err := firstErr(o.Err(), patch.Validate(false)); err != nil {
		return result{}, err
	}
	resp, err := s.propose(w, r, store.AgentPoolUpsertRequestType, &store.AgentPoolUpsertRequest{ID: pool.ID, Patch: patch, Now: s.now()})
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(agentPoolResource(resp.(*mgmt.AgentPool))))
}

func (s terraformAPI) agentPoolDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	pool, a, err := s.agentPool(c, p.ByName("pool"))
	if err != nil {
		return result{}, err
	}
	if err := forbiddenUnless(a.Owner, "only owners of organization %q manage its agent pools", a.Organization.Name); err != nil {
		return result{}, err
	}
	if _, err := s.propose(w, r, store.AgentPoolDeleteRequestType, &store.AgentPoolDeleteRequest{ID: pool.ID}); err != nil {
		return result{}, err
	}
	return noContent()
}

// agentPoolResource renders an agent pool as go-tfe reads it.
func agentPoolResource(p *mgmt.AgentPool) *jsonapi.Resource {
	allowed := make([]jsonapi.Identifier, 0, len(p.AllowedWorkspaceIDs))
	for _, id := range p.AllowedWorkspaceIDs {
		allowed = append(allowed, jsonapi.Identifier{Type: typeWorkspaces, ID: id})
	}
	return &jsonapi.Resource{
		ID:   p.ID,
		Type: typeAgentPools,
		Attributes: map[string]any{
			"name":                p.Name,
			"created-at":          jsonapi.Time(p.CreatedAt),
			"organization-scoped": p.OrganizationScoped,
			"agent-count":         0,
			"node-pool":           p.NodePool(),
		},
		Relationships: map[string]*jsonapi.Relationship{
			"organization":       orgRel(p.OrganizationName),
			"allowed-workspaces": jsonapi.ToMany(allowed),
			"agents":             jsonapi.ToMany([]jsonapi.Identifier{}),
		},
		Links: selfLink(apiPrefix + "/agent-pools/" + url.PathEscape(p.ID)),
	}
}
