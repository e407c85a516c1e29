package jobs

import (
	"net/http"
	"slices"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// ACLPolicyRequest is the body of POST /v1/acl/policy/:name. Name may be
// left out; when given it must be the name of the path.
type ACLPolicyRequest struct {
	Name        string
	Description string
	// Rules are HCL (HCL2 native syntax) or JSON; see
	// state.ParsePolicyRules.
	Rules string
}

// aclPolicyList serves GET /v1/acl/policies (prefix on the name). A
// management token sees every policy; any other token sees the policies
// it holds.
func (h aclAPI) aclPolicyList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	prefix := h.core.Query(r).Get("prefix")
	var keep func(*state.ACLPolicy) bool
	if tok := h.core.Token(r); tok != nil && !tok.IsManagement() {
		keep = func(p *state.ACLPolicy) bool { return slices.Contains(tok.Policies, p.Name) }
	}
	var out []*state.ACLPolicy
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		all, err := h.store.ACLPolicies(ws, prefix)
		out = out[:0]
		for _, p := range all {
			if keep == nil || keep(p) {
				out = append(out, p)
			}
		}
		return h.maxIndex(store.TableACLPolicies), err
	})
	return nonNil(out), err
}

// aclPolicyRead serves GET /v1/acl/policy/:name.
func (h aclAPI) aclPolicyRead(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("name")
	var out *state.ACLPolicy
	err := h.core.Read(w, r, func(ws memdb.WatchSet, _ string) (uint64, error) {
		var err error
		out, err = h.store.ACLPolicyByName(ws, name)
		return h.maxIndex(store.TableACLPolicies), err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, state.NotFoundf("ACL policy %q", name)
	}
	return out, nil
}

// aclPolicyUpsert serves POST /v1/acl/policy/:name: the rules are parsed
// and validated here (400 with line and column) and again by Apply. The
// answer is the policy as stored.
func (h aclAPI) aclPolicyUpsert(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	name := p.ByName("name")
	var req ACLPolicyRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Name != "" && req.Name != name {
		return nil, codec.BadRequest("Name: %q does not match the policy in the path %q", req.Name, name)
	}
	policy := &state.ACLPolicy{Name: name, Description: req.Description, Rules: req.Rules}
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	if _, _, err := h.core.Propose(w, r, store.ACLPolicyUpsertRequestType, &store.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{policy}}); err != nil {
		return nil, err
	}
	return h.store.ACLPolicyByName(nil, name)
}

// aclPolicyDelete serves DELETE /v1/acl/policy/:name.
func (h aclAPI) aclPolicyDelete(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	_, _, err := h.core.Propose(w, r, store.ACLPolicyDeleteRequestType, &store.ACLPolicyDeleteRequest{Names: []string{p.ByName("name")}})
	return nil, err
}
