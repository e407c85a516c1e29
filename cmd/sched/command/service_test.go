package command

import (
	"net/http"
	"strings"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestServiceList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/services", reply(5, []*state.ServiceListStub{
		{Namespace: "default", Services: []*state.ServiceListEntry{{ServiceName: "db", Tags: []string{}}, {ServiceName: "web", Tags: []string{"a", "b"}}}},
	}))
	runCLI(t, f, runOpts{}, "service", "list").check(t, 0, lines(
		"Service Name  Tags",
		"db            []",
		"web           [a,b]",
	), "")

	all := newFakeAPI(t)
	all.on("GET", "/v1/services", reply(5, []*state.ServiceListStub{
		{Namespace: "default", Services: []*state.ServiceListEntry{{ServiceName: "web", Tags: []string{"a"}}}},
		{Namespace: "prod", Services: []*state.ServiceListEntry{{ServiceName: "api", Tags: []string{}}}},
	}))
	runCLI(t, all, runOpts{}, "service", "list", "-namespace", "*").check(t, 0, lines(
		"Service Name  Namespace  Tags",
		"web           default    [a]",
		"api           prod       []",
	), "")
	if q := all.only("GET /v1/services").Query; q.Get("namespace") != "*" {
		t.Errorf("query %v", q)
	}

	empty := newFakeAPI(t)
	empty.on("GET", "/v1/services", reply(5, []*state.ServiceListStub{}))
	runCLI(t, empty, runOpts{}, "service", "list").check(t, 0, "No services found\n", "")

	broken := newFakeAPI(t)
	broken.on("GET", "/v1/services", fail(http.StatusForbidden, "Permission denied"))
	runCLI(t, broken, runOpts{}, "service", "list").check(t, 1, "", "Error listing services: Unexpected response code: 403 (Permission denied)\n")
}

func TestServiceInfo(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/service/web", reply(5, []*state.ServiceRegistration{
		{ID: "s1", ServiceName: "web", JobID: "shop", Address: "10.0.0.1", Port: 8080, Tags: []string{"v1"},
			NodeID: "11111111-aaaa-4000-8000-000000000001", AllocID: "a1a1a1a1-0000-4000-8000-000000000001"},
		{ID: "s2", ServiceName: "web", JobID: "shop", Address: "::1", Port: 8081,
			NodeID: "11111111-aaaa-4000-8000-000000000001", AllocID: "a2a2a2a2-0000-4000-8000-000000000002"},
	}))
	runCLI(t, f, runOpts{}, "service", "info", "web").check(t, 0, lines(
		"Job ID  Address        Tags  Node ID   Alloc ID",
		"shop    10.0.0.1:8080  [v1]  11111111  a1a1a1a1",
		"shop    [::1]:8081     []    11111111  a2a2a2a2",
	), "")

	f.on("GET", "/v1/service/nope", reply(5, []*state.ServiceRegistration{}))
	runCLI(t, f, runOpts{}, "service", "info", "nope").check(t, 1, "", "No service registrations found for \"nope\"\n")
	if r := runCLI(t, f, runOpts{}, "service", "info"); r.code != 1 {
		t.Errorf("no name: %d", r.code)
	}
	if r := runCLI(t, f, runOpts{}, "service"); r.code != 1 {
		t.Errorf("no subcommand: %d", r.code)
	}
}

func TestNodeStatusSelfOfClient(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/agent/self", reply(0, &state.AgentSelf{Stats: map[string]map[string]string{"client": {"node_id": n1}}}))
	f.on("GET", "/v1/node/"+n1, reply(5, &state.Node{ID: n1, Name: "node-1", Datacenter: "dc1", NodePool: "default", Status: "ready", SchedulingEligibility: "eligible"}))
	f.on("GET", "/v1/node/"+n1+"/allocations", reply(5, []*state.Allocation{}))
	r := runCLI(t, f, runOpts{}, "node", "status", "-self")
	if r.code != 0 || !strings.Contains(r.stdout, "node-1") || len(f.requests("GET /v1/nodes")) != 0 {
		t.Errorf("node status -self: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	runCLI(t, f, runOpts{}, "node", "status", "-self", n1).check(t, 1, "", "Error: -self takes no node ID\n")

	server := newFakeAPI(t)
	server.on("GET", "/v1/agent/self", reply(0, &state.AgentSelf{Stats: map[string]map[string]string{"raft": {}}}))
	r = runCLI(t, server, runOpts{}, "node", "status", "-self")
	if r.code != 1 || !strings.Contains(r.stderr, "runs no client") {
		t.Errorf("no client: %d %q", r.code, r.stderr)
	}
}
