package jobs

import (
	"net/http"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// aclAPI serves the ACL endpoints: /v1/acl/bootstrap, tokens
// (tokens.go) and policies (policies.go).
type aclAPI struct{ *api }

// errPermissionDenied is the answer to a token that lacks what an
// endpoint needs.
var errPermissionDenied = &codec.CodedError{Code: http.StatusForbidden, Message: "Permission denied"}

// errTokenNotFound is the /v1 answer to an unknown or expired token: 403,
// as Nomad answers (the management API answers 401).
var errTokenNotFound = &codec.CodedError{Code: http.StatusForbidden, Message: "ACL token not found", Err: state.ErrACLTokenNotFound}

// aclRoutes registers the ACL endpoints.
func (h aclAPI) aclRoutes() {
	h.write("/v1/acl/bootstrap", h.aclBootstrap)

	h.core.Route(http.MethodGet, "/v1/acl/tokens", h.aclTokenList)
	h.write("/v1/acl/token", h.aclTokenCreate)
	h.core.Route(http.MethodGet, "/v1/acl/token/self", h.aclTokenSelf)
	h.core.Route(http.MethodGet, "/v1/acl/token/:accessor_id", h.aclTokenRead)
	h.write("/v1/acl/token/:accessor_id", h.aclTokenUpdate)
	h.core.Route(http.MethodDelete, "/v1/acl/token/:accessor_id", h.aclTokenDelete)

	h.core.Route(http.MethodGet, "/v1/acl/policies", h.aclPolicyList)
	h.core.Route(http.MethodGet, "/v1/acl/policy/:name", h.aclPolicyRead)
	h.write("/v1/acl/policy/:name", h.aclPolicyUpsert)
	h.core.Route(http.MethodDelete, "/v1/acl/policy/:name", h.aclPolicyDelete)
}
