package http

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/http/jobs"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// namespaceWalk is a server with enforcement on, a local client on node 1,
// and in namespace team-b a job with an allocation (on the local client,
// with a log line), an evaluation, a deployment and a service. Nothing
// lives in default.
type namespaceWalk struct {
	*aclHarness
	fc *fakeClientAPI
	// job, alloc, eval and deployment are team-b's objects.
	job, alloc, eval, deployment string
	// secrets are strings only team-b's objects hold: an answer showing
	// one shows team-b.
	secrets []string
}

const (
	walkJob      = "tb-secret-job"
	walkService  = "tb-svc"
	walkSvcID    = "tb-svc-id"
	walkLogLine  = "TEAMB-LOG-LINE"
	walkNSDesc   = "TEAMB-NS-DESCRIPTION"
	walkWSKey    = "dGhlIHNhbXBsZSBub25jZQ=="
	walkTeamB    = "team-b"
	walkDeployID = "d0000000-0000-4000-8000-0000000000b1"
)

// leaderOnlyForwarder is routesOnlyForwarder on the leader: requests are
// never forwarded, and the cluster handlers the walk could reach are
// refused by the guard before they would call it.
type leaderOnlyForwarder struct{ routesOnlyForwarder }

func (leaderOnlyForwarder) IsLeader() bool { return true }

func newNamespaceWalk(t *testing.T) *namespaceWalk {
	t.Helper()
	fc := &fakeClientAPI{nodeID: apitest.NodeID(1), dir: t.TempDir(), allocs: map[string]*state.Allocation{}, stats: &state.AllocResourceUsage{}}
	a := newACLHarnessWith(t, func(a *aclHarness, c *testConfig) {
		r, err := NewTokenResolver(TokenResolverConfig{Store: c.Store, Enforce: true, Now: a.Clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		a.resolver, c.ACL, c.Now = r, r, a.Clock.Now
		c.Jobs.Leader, c.Client = apitest.NewFakeLeader(), fc
		// Every route a server agent serves: the cluster routes too.
		c.Forwarder = leaderOnlyForwarder{}
	})
	w := &namespaceWalk{aclHarness: a, fc: fc, job: walkJob, deployment: walkDeployID}
	mgmt := a.ManagementToken()
	a.OKAs(mgmt, http.MethodPut, "/v1/namespace/"+walkTeamB, map[string]string{"Description": walkNSDesc}, nil)
	a.OKAs(mgmt, http.MethodPut, "/v1/node/register", map[string]any{"Node": apitest.TestNode(1)}, nil)

	job := apitest.TestJob(walkJob)
	job.Namespace = walkTeamB
	job.TaskGroups[0].Tasks[0].Actions = []*state.Action{{Name: "a", Command: "/bin/true"}}
	var reg state.JobRegisterResponse
	a.OKAs(mgmt, http.MethodPost, "/v1/jobs?namespace="+walkTeamB, &jobs.JobRegisterRequest{Job: job}, &reg)
	w.eval = reg.EvalID
	stored := a.Job(walkTeamB, walkJob)

	a.Apply(store.DeploymentUpsertRequestType, &store.DeploymentUpsertRequest{Deployments: []*state.Deployment{{
		ID: walkDeployID, Namespace: walkTeamB, JobID: walkJob, JobVersion: stored.Version,
		Status: state.DeploymentStatusRunning, TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 2}},
	}}})
	w.alloc = apitest.AllocID(0xb1)
	al := &state.Allocation{
		ID: w.alloc, Namespace: walkTeamB, JobID: walkJob, Job: stored, EvalID: w.eval, DeploymentID: walkDeployID,
		NodeID: apitest.NodeID(1), Name: walkJob + ".web[0]", TaskGroup: "web",
		DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusRunning,
	}
	a.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{al}, Now: apitest.Now.UnixNano()})
	fc.allocs[w.alloc] = a.Alloc(w.alloc)
	writeLog(t, fc.dir, "server.stdout.0", walkLogLine+"\n")
	a.OKAs(mgmt, http.MethodPut, "/v1/node/"+apitest.NodeID(1)+"/services", map[string]any{"Services": []any{
		apitest.SvcReg(walkSvcID, walkService, w.alloc, 9000),
	}}, nil)
	w.secrets = []string{walkJob, w.alloc, w.eval, walkDeployID, walkSvcID, walkLogLine, walkNSDesc}
	return w
}

// target fills rt's path parameters with team-b's objects.
func (w *namespaceWalk) target(rt route) string {
	segs := strings.Split(rt.Path, "/")
	for i, s := range segs {
		name, ok := strings.CutPrefix(s, ":")
		if !ok {
			continue
		}
		v := "x"
		switch name {
		case "job_id":
			v = w.job
		case "alloc_id":
			v = w.alloc
		case "eval_id":
			v = w.eval
		case "deployment_id":
			v = w.deployment
		case "node_id":
			v = apitest.NodeID(1)
		case "service_name":
			v = walkService
		case "service_id":
			v = walkSvcID
		case "name":
			if strings.HasPrefix(rt.Path, "/v1/namespace/") {
				v = walkTeamB
			}
		}
		segs[i] = v
	}
	return strings.Join(segs, "/")
}

// extraQuery is what a route needs beside the namespace to get past its
// handler's own checks, so that a guard that lets a request through is
// seen acting on team-b.
func (w *namespaceWalk) extraQuery(rt route) string {
	switch {
	case strings.HasSuffix(rt.Path, "/exec"):
		return `task=server&command=%5B%22%2Fbin%2Fsh%22%5D`
	case strings.HasSuffix(rt.Path, "/action"):
		return "action=a&task=server&alloc_id=" + w.alloc
	case strings.Contains(rt.Path, "/client/fs/logs/"):
		return "task=server&type=stdout&plain=true"
	case strings.Contains(rt.Path, "/client/fs/"):
		return "path=%2F"
	}
	return ""
}

// body is a write body that most handlers accept: the team-b job (in
// namespace ns) and the fields of the other writes.
func (w *namespaceWalk) body(ns string, topLevel bool) []byte {
	job := *w.aclHarness.Job(walkTeamB, walkJob)
	job.Namespace = ns
	job.TaskGroups = append([]*state.TaskGroup(nil), job.TaskGroups...)
	b := map[string]any{
		"Job": &job, "Count": 3, "Target": map[string]string{"Group": "web"}, "All": true, "JobVersion": 0,
		"Signal": "SIGTERM", "Task": "server", "TaskName": "server", "Prefix": "", "Context": "all",
	}
	if topLevel {
		b["Namespace"] = ns
	}
	out, err := json.Marshal(b)
	if err != nil {
		w.T.Fatal(err)
	}
	return out
}

// walkVariant is one way of naming team-b in a request.
type walkVariant struct {
	name  string
	query string // before the route's own parameters
	// bodyNS is the namespace of the body's job and its Namespace field;
	// "" sends a job naming none (GET requests then send no body).
	bodyNS string
}

var walkVariants = []walkVariant{
	{name: "query", query: "namespace=team-b"},
	{name: "encoded key", query: "%6eamespace=team-b"},
	{name: "encoded key, upper case", query: "%6E%61mespace=team-b"},
	{name: "default then team-b", query: "namespace=default&namespace=team-b"},
	{name: "team-b then default", query: "namespace=team-b&namespace=default"},
	{name: "encoded value", query: "namespace=%74eam-b"},
	{name: "star", query: "namespace=%2A"},
	{name: "body, no query", bodyNS: walkTeamB},
	{name: "body, query default", query: "namespace=default", bodyNS: walkTeamB},
}

// A token that may write in default and is denied team-b gets nothing of
// team-b from any /v1 route, however the request names team-b: in the
// query (plain, percent-encoded, repeated), in the body, or both. Routes
// that answer this token 2xx anyway (lists that filter, the token's own
// ACL reads, the event stream, search) must show none of team-b's
// objects; a route about one object of team-b (its ID in the path) must
// not answer 2xx with anything but an empty result; no write may succeed,
// and nothing may be written. Reads share one world; each write route
// gets a fresh one, so that what one wrongly let through does not blur
// what the next one shows.
func TestACLNamespaceWalk(t *testing.T) {
	reads := newNamespaceWalk(t)
	routes := v1Routes(reads.srv)
	if len(routes) < 100 {
		t.Fatalf("only %d /v1 routes: is the walk missing some?", len(routes))
	}
	readToken := reads.walkToken()
	before := reads.Store.LatestIndex()
	walked := 0
	for _, rt := range routes {
		rule, _ := ruleFor(aclRuleTable(), rt)
		if rule.kind == ruleOpen {
			// Status, health, metrics, bootstrap, the read index: open to
			// anyone, about no namespace (TestACLCapabilityTable).
			continue
		}
		walked++
		if rt.Method == http.MethodGet {
			reads.walkRoute(t, rt, readToken)
			continue
		}
		w := newNamespaceWalk(t)
		token := w.walkToken()
		at := w.Store.LatestIndex()
		w.walkRoute(t, rt, token)
		if after := w.Store.LatestIndex(); after != at {
			t.Errorf("%s %s wrote: index %d → %d", rt.Method, rt.Path, at, after)
		}
	}
	if walked < 80 {
		t.Errorf("walked only %d routes", walked)
	}
	if after := reads.Store.LatestIndex(); after != before {
		t.Errorf("the reads wrote: index %d → %d", before, after)
	}
}

// walkToken is the walk's caller: write in default, denied team-b.
func (w *namespaceWalk) walkToken() string {
	return w.ClientToken(`namespace "default" { policy = "write" }`, `namespace "team-b" { policy = "deny" }`)
}

// walkRoute sends every variant to rt and reports what showed team-b.
func (w *namespaceWalk) walkRoute(t *testing.T, rt route, token string) {
	t.Helper()
	target := w.target(rt)
	about := strings.Contains(rt.Path, ":") && !strings.Contains(rt.Path, "/:node_id") && !strings.HasPrefix(rt.Path, "/v1/acl/") &&
		!strings.HasPrefix(rt.Path, "/v1/agent/") && !strings.HasPrefix(rt.Path, "/v1/node/pool")
	for _, v := range walkVariants {
		query := v.query
		if extra := w.extraQuery(rt); extra != "" {
			query = strings.TrimPrefix(query+"&"+extra, "&")
		}
		u := target
		if query != "" {
			u += "?" + query
		}
		var body []byte
		if rt.Method != http.MethodGet || v.bodyNS != "" {
			body = w.body(v.bodyNS, v.bodyNS != "")
		}
		code, got := w.send(token, rt.Method, u, body)
		fail := func(why string) {
			t.Errorf("%s %s [%s]: %s: %d %.200q", rt.Method, u, v.name, why, code, got)
		}
		switch {
		case code >= 500:
			fail("server error (a guard let it through to a handler that failed)")
		case code < 200 || code >= 300:
		case containsAny(got, w.secrets):
			fail("shows team-b")
		case rt.Method != http.MethodGet && rt.Path != "/v1/search":
			fail("a write succeeded")
		case about && !isEmptyJSON(got):
			fail("answered about a team-b object")
		}
	}
}

// send serves one request through the router (not the forwarding layer,
// whose Forwarder here is a stub) and returns its status and body. An
// exec route is asked for a WebSocket upgrade, so that a request the
// guard lets through reaches the upgrade (which a recorder cannot do:
// 500). A stream ends after a moment.
func (w *namespaceWalk) send(token, method, target string, body []byte) (int, string) {
	w.T.Helper()
	var req *http.Request
	if body != nil {
		req = httptest.NewRequest(method, target, strings.NewReader(string(body)))
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	req.Header.Set(HeaderToken, token)
	if strings.Contains(target, "/exec") || strings.Contains(target, "/action?") {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", walkWSKey)
	}
	ctx, cancel := context.WithTimeout(req.Context(), 300*time.Millisecond)
	defer cancel()
	req = req.WithContext(ctx)
	rec := httptest.NewRecorder()
	w.srv.router.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// isEmptyJSON reports whether an answer shows nothing: an empty list or
// object, or null.
func isEmptyJSON(s string) bool {
	switch strings.TrimSpace(s) {
	case "", "[]", "{}", "null":
		return true
	}
	return false
}
