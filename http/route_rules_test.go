package http

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/http/mgmt"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

// registeredRoutes lists the server's routes: every method and pattern
// registered through handle.
func registeredRoutes(s *Server) []route {
	var out []route
	for _, r := range s.router.Routes() {
		out = append(out, route{Method: r.Method, Path: r.Path})
	}
	slices.SortFunc(out, func(a, b route) int { return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method) })
	return out
}

// routesOnlyForwarder is a Forwarder that is never called: with it set,
// the server registers the cluster routes too, so the route walks below
// see every route a server agent serves. Tests that use it check the
// guard's decisions and never run a cluster handler.
type routesOnlyForwarder struct{ Forwarder }

var _ Forwarder = routesOnlyForwarder{}

// newRouteWalkHarness is newACLHarness (enforcement on) with every route
// registered, cluster routes included.
func newRouteWalkHarness(t *testing.T, enforce bool) *aclHarness {
	t.Helper()
	a := newACLHarnessWith(t, func(a *aclHarness, c *testConfig) {
		r, err := NewTokenResolver(TokenResolverConfig{Store: c.Store, Enforce: enforce, Now: a.Clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		a.resolver, c.ACL, c.Now = r, r, a.Clock.Now
		c.Forwarder = routesOnlyForwarder{}
	})
	// The management API mounts on the core, as the agent does, so route
	// walks see every route of both APIs.
	mgmt.New(a.srv, mgmt.Config{})
	return a
}

// v1Routes are the registered /v1 routes.
func v1Routes(s *Server) []route {
	var out []route
	for _, rt := range registeredRoutes(s) {
		if strings.HasPrefix(rt.Path, "/v1/") {
			out = append(out, rt)
		}
	}
	return out
}

// Every /v1 route must have a row in the enforcement table: a route added
// without one fails here (and, at run time, demands a management token).
func TestACLEveryRouteHasARule(t *testing.T) {
	a := newRouteWalkHarness(t, true)
	table := aclRuleTable()
	routes := v1Routes(a.srv)
	if len(routes) < 30 {
		t.Fatalf("only %d /v1 routes found; is the route walk broken?", len(routes))
	}
	for _, rt := range routes {
		if _, ok := ruleFor(table, rt); !ok {
			t.Errorf("%s %s has no ACL rule: add it to aclRuleTable (route_rules.go)", rt.Method, rt.Path)
		}
	}
}

// Unknown /v1 routes fail closed: management only, even with enforcement
// off for the ACL area.
func TestACLUnknownRouteIsManagementOnly(t *testing.T) {
	r, ok := ruleFor(aclRuleTable(), route{Method: http.MethodGet, Path: "/v1/brand/new"})
	if ok || r.kind != ruleManagement || r.always {
		t.Errorf("unknown /v1 route rule = %+v, %v", r, ok)
	}
	r, ok = ruleFor(aclRuleTable(), route{Method: http.MethodGet, Path: "/v1/acl/new"})
	if ok || r.kind != ruleManagement || !r.always {
		t.Errorf("unknown /v1/acl route rule = %+v, %v", r, ok)
	}
	if got := ruleKey(http.MethodGet, "/v1/node/:id/allocations"); got != ruleKey(http.MethodGet, "/v1/node/:node_id/allocations") {
		t.Errorf("ruleKey depends on parameter names: %v", got)
	}
}

// capsExcept is every namespace capability but deny and excl.
func capsExcept(excl ...string) []string {
	var out []string
	for _, c := range state.NamespaceCapabilities() {
		if c != state.NamespaceCapabilityDeny && !slices.Contains(excl, c) {
			out = append(out, c)
		}
	}
	return out
}

// caller is one token tried against a route.
type caller struct {
	name    string
	secret  string
	param   string // value of the route's first parameter ("" = "x")
	allowed bool
}

// callersFor returns the tokens that hold exactly what rule needs
// (allowed) and the tokens that hold everything but it (denied).
func callersFor(a *aclHarness, rule aclRule) []caller {
	everything := func(node, agent, operator string) string {
		return apitest.RulesText("*", capsExcept(), node, agent, operator)
	}
	levelCallers := func(kind string, write bool) []caller {
		level, below := "read", ""
		if write {
			level, below = "write", "read"
		}
		lv := map[string]string{"node": "write", "agent": "write", "operator": "write"}
		lv[kind] = below
		exact := map[string]string{kind: level}
		return []caller{
			{name: kind + " " + level, secret: a.ClientToken(apitest.RulesText("*", nil, exact["node"], exact["agent"], exact["operator"])), allowed: true},
			{name: "everything but " + kind + " " + level, secret: a.ClientToken(everything(lv["node"], lv["agent"], lv["operator"]))},
		}
	}
	switch rule.kind {
	case ruleOpen:
		return nil
	case ruleManagement:
		return []caller{{name: "everything but management", secret: a.ClientToken(everything("write", "write", "write"))}}
	case ruleAnyToken:
		return []caller{{name: "any token", secret: a.ClientToken(`node { policy = "read" }`), allowed: true}}
	case ruleNode:
		return levelCallers("node", rule.write)
	case ruleAgent:
		return levelCallers("agent", rule.write)
	case ruleOperator:
		return levelCallers("operator", rule.write)
	case ruleTokenRead:
		self := a.ClientToken(`node { policy = "read" }`)
		return []caller{
			{name: "the token itself", secret: self, param: a.AccessorOf(self), allowed: true},
			{name: "self alias", secret: self, param: "self", allowed: true},
			{name: "everything, another token", secret: a.ClientToken(everything("write", "write", "write")), param: a.AccessorOf(self)},
		}
	case rulePolicyRead:
		holder := a.ClientToken(`node { policy = "read" }`)
		held := fmt.Sprintf("p%d", a.Policies())
		return []caller{
			{name: "holder of the policy", secret: holder, param: held, allowed: true},
			{name: "everything, not holding it", secret: a.ClientToken(everything("write", "write", "write")), param: held},
		}
	case ruleQuotaRead:
		return []caller{
			{name: "quota read", secret: a.ClientToken(`quota { policy = "read" }`), allowed: true},
			{name: "quota write", secret: a.ClientToken(`quota { policy = "write" }`), allowed: true},
			{name: "everything but quota", secret: a.ClientToken(everything("write", "write", "write"))},
		}
	case ruleFiltering:
		return []caller{
			{name: "node read", secret: a.ClientToken(`node { policy = "read" }`), allowed: true},
			{name: "read-job in default", secret: a.ClientToken(apitest.RulesText("default", []string{"read-job"}, "", "", "")), allowed: true},
			{name: "everything but read-job and node", secret: a.ClientToken(apitest.RulesText("*", capsExcept("read-job"), "", "write", "write"))},
		}
	case ruleNamespaceAny:
		return []caller{
			{name: "one capability in default", secret: a.ClientToken(apitest.RulesText("default", []string{"read-job"}, "", "", "")), param: "default", allowed: true},
			{name: "no namespace rule", secret: a.ClientToken(apitest.RulesText("*", nil, "write", "write", "write")), param: "default"},
		}
	case ruleNamespace:
		var out []caller
		if rule.all {
			out = append(out,
				caller{name: "all of " + strings.Join(rule.caps, "+"), secret: a.ClientToken(apitest.RulesText("*", rule.caps, "", "", "")), allowed: true},
				caller{name: "all of them in default", secret: a.ClientToken(apitest.RulesText("default", rule.caps, "", "", "")), allowed: true})
			for _, c := range rule.caps {
				out = append(out, caller{name: "everything but " + c, secret: a.ClientToken(apitest.RulesText("*", capsExcept(c), "write", "write", "write"))})
			}
			return out
		}
		for _, c := range rule.caps {
			// The exec rules' task does not exist here, so its isolation
			// is not shown: alloc-node-exec is needed as well
			// (taskLacksIsolation).
			out = append(out,
				caller{name: "only " + c, secret: a.ClientToken(apitest.RulesText("*", []string{c}, "", "", "")), allowed: !rule.execDriver},
				caller{name: "only " + c + " in default", secret: a.ClientToken(apitest.RulesText("default", []string{c}, "", "", "")), allowed: !rule.execDriver})
			if rule.execDriver {
				both := []string{c, state.NamespaceCapabilityAllocNodeExec}
				out = append(out, caller{name: "alloc-node-exec and " + c, secret: a.ClientToken(apitest.RulesText("default", both, "", "", "")), allowed: true})
			}
		}
		out = append(out, caller{name: "everything but " + strings.Join(rule.caps, "/"), secret: a.ClientToken(apitest.RulesText("*", capsExcept(rule.caps...), "write", "write", "write"))})
		return append(out, caller{name: "everything in another namespace", secret: a.ClientToken(apitest.RulesText("other", capsExcept(), "", "", ""))})
	}
	panic(fmt.Sprintf("no callers for rule kind %d", rule.kind))
}

// requestFor builds a request for route rt with the first parameter set
// to param (others "x") and returns it with its router parameters.
func requestFor(rt route, param string) (*http.Request, httprouter.Params) {
	var ps httprouter.Params
	segs := strings.Split(rt.Path, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			v := "x"
			if len(ps) == 0 && param != "" {
				v = param
			}
			segs[i] = v
			ps = append(ps, httprouter.Param{Key: name, Value: v})
		}
	}
	return httptest.NewRequest(rt.Method, strings.Join(segs, "/"), nil), ps
}

// The table of the issue: for every registered /v1 endpoint, a token
// with exactly the required capability is let in, one without it gets
// 403, anonymous gets 403, and management is let in. It checks the guard's
// decision for the route (the handlers themselves are tested elsewhere).
func TestACLCapabilityTable(t *testing.T) {
	a := newRouteWalkHarness(t, true)
	mgmt := a.ManagementToken()
	table := aclRuleTable()
	for _, rt := range v1Routes(a.srv) {
		rule, ok := ruleFor(table, rt)
		if !ok {
			continue // TestACLEveryRouteHasARule reports it
		}
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			callers := append(callersFor(a, rule),
				caller{name: "anonymous", allowed: rule.kind == ruleOpen},
				caller{name: "management", secret: mgmt, allowed: true})
			for _, c := range callers {
				r, ps := requestFor(rt, c.param)
				if c.secret != "" {
					r.Header.Set(HeaderToken, c.secret)
				}
				_, err := a.srv.authorize(rule, r, ps)
				switch {
				case c.allowed && err != nil:
					t.Errorf("%s: denied (%v), want allowed", c.name, err)
				case !c.allowed && err == nil:
					t.Errorf("%s: allowed, want 403", c.name)
				case !c.allowed && (codec.StatusOf(err) != http.StatusForbidden || err.Error() != msgPermissionDenied):
					t.Errorf("%s: %d %q, want 403 %q", c.name, codec.StatusOf(err), err, msgPermissionDenied)
				}
			}
		})
	}
}

// With enforcement off, every /v1 route outside /v1/acl is open, to
// anonymous callers and to unknown tokens alike.
func TestACLEnforcementOff(t *testing.T) {
	a := newRouteWalkHarness(t, false)
	table := aclRuleTable()
	for _, rt := range v1Routes(a.srv) {
		rule, _ := ruleFor(table, rt)
		for _, secret := range []string{"", "unknown-secret"} {
			r, ps := requestFor(rt, "")
			if secret != "" {
				r.Header.Set(HeaderToken, secret)
			}
			_, err := a.srv.authorize(rule, r, ps)
			acl := strings.HasPrefix(rt.Path, "/v1/acl/")
			if !acl && err != nil {
				t.Errorf("%s %s with %q: %v", rt.Method, rt.Path, secret, err)
			}
			if acl && rt.Path != "/v1/acl/bootstrap" && err == nil {
				t.Errorf("%s %s with %q allowed with enforcement off", rt.Method, rt.Path, secret)
			}
		}
	}
}
