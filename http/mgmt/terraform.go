package mgmt

import (
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/jsonapi"
	"github.com/schedhq/sched/state/mgmt"
)

// What Terraform itself (not go-tfe alone) needs before it uses sched as
// its cloud or remote backend: the service discovery document, which says
// where the API lives, and the organization's entitlement set, which says
// what the backend may do.

// DiscoveryPath is where Terraform looks for a host's services.
const DiscoveryPath = "/.well-known/terraform.json"

// discoveredServices are the services sched announces: the TFE API in the
// three versions Terraform and go-tfe ask for. The module and provider
// registries (modules.v1, providers.v1) are not served, so they are not
// announced: Terraform then says the host offers no registry.
var discoveredServices = map[string]string{
	"tfe.v2":   apiPrefix + "/",
	"tfe.v2.1": apiPrefix + "/",
	"tfe.v2.2": apiPrefix + "/",
}

// terraformAPI serves what Terraform itself uses beyond the management
// API's entities: discovery, the entitlement set, state versions,
// configuration versions, runs, plans and applies. It is a surface of its
// own (as admin is) on the server's machinery, so that the Server type
// keeps only the entities' handlers.
type terraformAPI struct{ *Server }

// terraformRoutes registers the terraformAPI surface: discovery and the
// entitlement set here, then runs and state versions (runs.go) and
// configuration versions (config_versions.go).
func (m *router) terraformRoutes() {
	s := terraformAPI{m.s}
	s.mount(http.MethodGet, DiscoveryPath, m.discovery)
	m.handle(http.MethodGet, "/organizations/:org/entitlement-set", s.entitlementSet)
	m.runRoutes()
	m.configVersionRoutes()
	m.agentPoolRoutes() // agent_pools.go
}

// discovery serves GET /.well-known/terraform.json. It needs no token, as
// Terraform asks before it knows which credentials to send; it reveals
// nothing but the API's path, and counts against the caller's rate limit.
func (m *router) discovery(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if err := m.limiter.admit(w, "addr:"+remoteHost(r)); err != nil {
		m.s.writeError(w, r, err)
		return
	}
	body, _ := json.Marshal(discoveredServices)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=60")
	_, _ = w.Write(body)
}

// entitlementSet serves GET /organizations/:org/entitlement-set, go-tfe's
// ReadEntitlements, for any member of the organization. It says what sched
// does: state storage, teams, agents (node pools) and operations (runs
// executed as jobs) are true only where sched serves them.
func (s terraformAPI) entitlementSet(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *call) (result, error) {
	a, err := s.orgAuthority(c, p.ByName("org"))
	if err != nil {
		return result{}, err
	}
	return ok(jsonapi.One(&jsonapi.Resource{
		ID:   a.Organization.ExternalID,
		Type: typeEntitlementSets,
		Attributes: map[string]any{
			"state-storage":           true,
			"teams":                   true,
			"operations":              RunsExecute,
			"agents":                  true,
			"audit-logging":           false,
			"cost-estimation":         false,
			"global-run-tasks":        false,
			"private-module-registry": false,
			"private-run-tasks":       false,
			"run-tasks":               false,
			"gate":                    false,
			"sso":                     false,
			"vcs-integrations":        false,
		},
		Links: selfLink(orgPath(a.Organization.Name) + "/entitlement-set"),
	}))
}

// RunsExecute says whether sched executes runs (the operations
// entitlement): it does, as jobs (run_exec.go, package agent/runexec), so
// Terraform runs operations here for workspaces in remote or agent
// execution mode, and locally for those in local mode.
const RunsExecute = true

// typeEntitlementSets is the JSON:API type of an entitlement set.
const typeEntitlementSets = "entitlement-sets"

// workspaceResource renders a workspace with its effective execution mode
// (its own, its project's, its organization's, remote).
func (s *Server) workspaceResource(w *mgmt.Workspace, pa mgmt.ProjectAccess) *jsonapi.Resource {
	return workspaceResource(w, pa, s.executionMode(w))
}

// executionMode is a workspace's effective execution mode.
func (s *Server) executionMode(w *mgmt.Workspace) string {
	var org *mgmt.Organization
	var project *mgmt.Project
	if w.ExecutionMode == "" {
		project, _ = s.store.ProjectByID(nil, w.ProjectID)
		org, _ = s.store.OrganizationByName(nil, w.OrganizationName)
	}
	return mgmt.EffectiveExecutionMode(org, project, w)
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
