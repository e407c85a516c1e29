package http

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
	"github.com/schedhq/sched/http/router"
)

// specRoute is one endpoint of spec/jobs-api.md or spec/management-api.md
// (method and path as the spec writes them), or a case of the router's
// conflicts. want is the logical route it must reach, when that differs
// from path (the request path with concrete values); notYet names the
// issue that adds an endpoint the server does not serve yet.
type specRoute struct {
	method, path string
	want         string
	notYet       string
}

// specRoutes lists every endpoint of both specs, then each
// static-beside-parameter conflict from both sides.
var specRoutes = []specRoute{
	// spec/jobs-api.md, section 4.
	{method: "GET", path: "/v1/jobs"},
	{method: "POST", path: "/v1/jobs"},
	{method: "POST", path: "/v1/jobs/parse"},
	{method: "GET", path: "/v1/job/:job_id"},
	{method: "GET", path: "/v1/job/:job_id/submission"},
	{method: "GET", path: "/v1/job/:job_id/versions"},
	{method: "GET", path: "/v1/job/:job_id/allocations"},
	{method: "GET", path: "/v1/job/:job_id/evaluations"},
	{method: "GET", path: "/v1/job/:job_id/deployments"},
	{method: "GET", path: "/v1/job/:job_id/deployment"},
	{method: "GET", path: "/v1/job/:job_id/summary"},
	{method: "POST", path: "/v1/job/:job_id"},
	{method: "POST", path: "/v1/job/:job_id/dispatch"},
	{method: "POST", path: "/v1/job/:job_id/revert"},
	{method: "POST", path: "/v1/job/:job_id/stable"},
	{method: "POST", path: "/v1/job/:job_id/evaluate"},
	{method: "POST", path: "/v1/job/:job_id/plan"},
	{method: "POST", path: "/v1/job/:job_id/periodic/force"},
	{method: "DELETE", path: "/v1/job/:job_id"},
	{method: "GET", path: "/v1/job/:job_id/scale"},
	{method: "POST", path: "/v1/job/:job_id/scale"},
	{method: "GET", path: "/v1/job/:job_id/services"},
	{method: "GET", path: "/v1/job/:job_id/actions"},
	{method: "GET", path: "/v1/job/:job_id/action"},

	// spec/management-api.md, section 4.
	{method: "POST", path: "/api/v2/organizations/:organization_name/projects"},
	{method: "PATCH", path: "/api/v2/projects/:project_id"},
	{method: "GET", path: "/api/v2/organizations/:organization_name/projects"},
	{method: "GET", path: "/api/v2/projects/:project_id"},
	{method: "DELETE", path: "/api/v2/projects/:project_id"},
	{method: "POST", path: "/api/v2/projects/:project_id/relationships/workspaces"},
	{method: "GET", path: "/api/v2/team-projects"},
	{method: "GET", path: "/api/v2/team-projects/:id"},
	{method: "POST", path: "/api/v2/team-projects"},
	{method: "PATCH", path: "/api/v2/team-projects/:id"},
	{method: "DELETE", path: "/api/v2/team-projects/:id"},
	{method: "GET", path: "/api/v2/admin/workspaces"},
	{method: "GET", path: "/api/v2/admin/workspaces/:id"},
	{method: "DELETE", path: "/api/v2/admin/workspaces/:id"},
	{method: "GET", path: "/api/v2/admin/organizations"},
	{method: "GET", path: "/api/v2/admin/organizations/:name"},
	{method: "PATCH", path: "/api/v2/admin/organizations/:name"},
	{method: "DELETE", path: "/api/v2/admin/organizations/:name"},
	{method: "GET", path: "/api/v2/admin/organizations/:name/relationships/module-consumers"},
	{method: "PATCH", path: "/api/v2/admin/organizations/:name/relationships/module-consumers"},
	{method: "GET", path: "/api/v2/admin/organizations/:name/relationships/provider-consumers"},
	{method: "GET", path: "/api/v2/admin/tool-versions"},
	{method: "POST", path: "/api/v2/admin/tool-versions"},
	{method: "GET", path: "/api/v2/admin/tool-versions/:id"},
	{method: "PATCH", path: "/api/v2/admin/tool-versions/:id"},
	{method: "DELETE", path: "/api/v2/admin/tool-versions/:id"},
	{method: "GET", path: "/api/v2/admin/policy-versions"},
	{method: "POST", path: "/api/v2/admin/policy-versions"},
	{method: "GET", path: "/api/v2/admin/policy-versions/:id"},
	{method: "PATCH", path: "/api/v2/admin/policy-versions/:id"},
	{method: "DELETE", path: "/api/v2/admin/policy-versions/:id"},

	// The static routes beside a parameter, and the parameter routes.
	{method: "GET", path: "/v1/node/pools"},
	{method: "PUT", path: "/v1/node/pools"},
	{method: "PUT", path: "/v1/node/register"},
	{method: "GET", path: "/v1/node/:node_id"},
	{method: "GET", path: "/v1/node/pool", want: "/v1/node/:node_id"},
	{method: "GET", path: "/v1/node/pool/:pool_name"},
	{method: "DELETE", path: "/v1/node/pool/:pool_name"},
	{method: "GET", path: "/v1/node/pool/:pool_name/nodes"},
	{method: "GET", path: "/v1/node/:node_id/allocations"},
	{method: "PUT", path: "/v1/node/:node_id/drain"},
	{method: "GET", path: "/v1/node/pool/allocations", want: "/v1/node/pool/:pool_name"},
	{method: "GET", path: "/v1/node/pools/allocations", want: "/v1/node/:node_id/allocations"},
	{method: "PUT", path: "/v1/node/register/heartbeat", want: "/v1/node/:node_id/heartbeat"},
	{method: "GET", path: "/v1/acl/token/self"},
	{method: "GET", path: "/v1/acl/token/:accessor_id"},
	{method: "DELETE", path: "/v1/acl/token/:accessor_id"},
	{method: "GET", path: "/v1/deployment/allocations/:deployment_id"},
	{method: "GET", path: "/v1/deployment/:deployment_id"},
	{method: "GET", path: "/v1/deployment/allocations", want: "/v1/deployment/:deployment_id"},
}

// routeShape replaces every parameter name with ":", so a route the spec
// writes /v1/job/:job_id matches one registered as /v1/job/:id.
func routeShape(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = ":"
		}
	}
	return strings.Join(segs, "/")
}

// TestEverySpecRouteReachesItsHandler routes each endpoint of both specs,
// and each conflict from both sides, through a router holding the
// server's routes, and checks which registered route answered.
func TestEverySpecRouteReachesItsHandler(t *testing.T) {
	srv := newRouteWalkHarness(t, false).srv
	rt := router.New()
	for _, r := range registeredRoutes(srv) {
		rt.Handle(r.Method, r.Path, func(w http.ResponseWriter, req *http.Request, ps httprouter.Params) {
			w.Header().Set("X-Route", r.Method+" "+r.Path)
			for _, p := range ps {
				w.Header().Add("X-Param", p.Value)
			}
		})
	}
	for _, tc := range specRoutes {
		segs := strings.Split(tc.path, "/")
		var params []string
		for i, s := range segs {
			if strings.HasPrefix(s, ":") {
				segs[i] = "v" + s[1:]
				params = append(params, segs[i])
			}
		}
		want := tc.path
		if tc.want != "" {
			want = tc.want
		}
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, httptest.NewRequest(tc.method, strings.Join(segs, "/"), nil))
		got := rec.Header().Get("X-Route")
		if tc.notYet != "" {
			if got != "" {
				t.Errorf("%s %s is routed now (to %s): drop its notYet (%s)", tc.method, tc.path, got, tc.notYet)
			}
			continue
		}
		if rec.Code != http.StatusOK || routeShape(got) != tc.method+" "+routeShape(want) {
			t.Errorf("%s %s: %d, route %q, want %s %s", tc.method, tc.path, rec.Code, got, tc.method, want)
			continue
		}
		// The handler gets every parameter's value, in order.
		if got := rec.Header().Values("X-Param"); tc.want == "" && !slices.Equal(got, params) {
			t.Errorf("%s %s: parameters %q, want %q", tc.method, tc.path, got, params)
		}
	}
}
