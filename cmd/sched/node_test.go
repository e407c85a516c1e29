package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const (
	n1 = "11111111-aaaa-4000-8000-000000000001"
	n2 = "11112222-aaaa-4000-8000-000000000002"
)

func nodeStubs() []*api.NodeListStub {
	return []*api.NodeListStub{
		{ID: n1, Name: "node-1", Datacenter: "dc1", NodePool: "default", Status: "ready", SchedulingEligibility: "eligible"},
		{ID: n2, Name: "node-2", Datacenter: "dc2", NodePool: "gpu", NodeClass: "large", Drain: true, Status: "ready", SchedulingEligibility: "ineligible"},
	}
}

func TestNodeStatusList(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/nodes", reply(5, nodeStubs()))
	r := runCLI(t, f, runOpts{}, "node", "status")
	r.check(t, 0, lines(
		"ID        Node Pool  DC   Name    Class   Drain  Eligibility  Status",
		"11111111  default    dc1  node-1  <none>  false  eligible     ready",
		"11112222  gpu        dc2  node-2  large   true   ineligible   ready",
	), "")

	empty := newFakeAPI(t)
	empty.on("GET", "/v1/nodes", reply(5, []*api.NodeListStub{}))
	runCLI(t, empty, runOpts{}, "node", "status").check(t, 0, "No nodes registered\n", "")
}

func TestNodeStatusDetail(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/nodes", reply(5, nodeStubs()[:1]))
	node := &state.Node{
		ID: n1, Name: "node-1", Datacenter: "dc1", NodePool: "default", Status: "ready", SchedulingEligibility: "ineligible",
		Drain: true, HTTPAddr: "10.0.0.1:4646",
		DrainStrategy:     &state.DrainStrategy{Deadline: int64(time.Hour), ForceDeadline: testNow.Add(time.Hour).UnixNano(), StartedAt: testNow.UnixNano()},
		NodeResources:     &state.NodeResources{CPU: 4000, MemoryMB: 8192, DiskMB: 10240},
		ReservedResources: &state.NodeReservedResources{CPU: 500, MemoryMB: 512},
		Drivers:           map[string]*state.DriverInfo{"raw_exec": {Detected: true, Healthy: true}, "docker": {Detected: true}},
	}
	f.on("GET", "/v1/node/"+n1, reply(5, node))
	f.on("GET", "/v1/node/"+n1+"/allocations", reply(6, []*state.Allocation{
		{ID: "a1a1a1a1-full", NodeID: n1, TaskGroup: "web", DesiredStatus: "run", ClientStatus: "running",
			Job: &state.Job{Version: 2}, CreateTime: testNow.Add(-time.Hour).UnixNano(), ModifyTime: testNow.Add(-time.Minute).UnixNano(),
			AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"server": {CPU: 100, MemoryMB: 256}},
				Shared: state.AllocatedSharedResources{DiskMB: 300}}},
		{ID: "a0a0a0a0-full", NodeID: n1, TaskGroup: "web", DesiredStatus: "stop", ClientStatus: "complete",
			AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"server": {CPU: 999, MemoryMB: 999}}}},
	}))
	r := runCLI(t, f, runOpts{}, "node", "status", "1111")
	r.check(t, 0, lines(
		"ID           = 11111111",
		"Name         = node-1",
		"Node Pool    = default",
		"Class        = <none>",
		"DC           = dc1",
		"Drain        = true",
		"Eligibility  = ineligible",
		"Status       = ready",
		"HTTP Address = 10.0.0.1:4646",
		"Drivers      = raw_exec",
		"",
		"Drain Strategy",
		"Deadline           = 2025-03-01T13:00:00Z",
		"Started            = 2025-03-01T12:00:00Z",
		"Ignore System Jobs = false",
		"",
		"Allocated Resources",
		"CPU           Memory           Disk",
		"100/3500 MHz  256 MiB/7.5 GiB  300 MiB/10 GiB",
		"",
		"Allocations",
		"ID        Node ID   Task Group  Version  Desired  Status    Created  Modified",
		"a1a1a1a1  11111111  web         2        run      running   1h ago   1m ago",
		"a0a0a0a0  11111111  web         <none>   stop     complete  <none>   <none>",
	), "")
	if got := f.only("GET /v1/nodes").Query.Get("prefix"); got != "1111" {
		t.Errorf("lookup prefix = %q", got)
	}
}

func TestNodeStatusLookupFailures(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/nodes", reply(5, nodeStubs()), reply(5, []*api.NodeListStub{}))
	r := runCLI(t, f, runOpts{}, "node", "status", "1111")
	r.check(t, 1, "", lines(
		"Prefix matched multiple nodes",
		"",
		"ID        Node Pool  DC   Name    Class   Drain  Eligibility  Status",
		"11111111  default    dc1  node-1  <none>  false  eligible     ready",
		"11112222  gpu        dc2  node-2  large   true   ineligible   ready",
	))
	runCLI(t, f, runOpts{}, "node", "status", "ffff").check(t, 1, "", "No node(s) with prefix \"ffff\" found\n")
}

func TestNodeEligibility(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/v1/nodes", reply(5, nodeStubs()[:1]))
	f.on("PUT", "/v1/node/"+n1+"/eligibility", reply(7, api.NodeUpdateResponse{Index: 7}))
	runCLI(t, f, runOpts{}, "node", "eligibility", "-disable", n1).
		check(t, 0, "Node \""+n1+"\" scheduling eligibility set: ineligible for scheduling\n", "")
	var body struct{ Eligibility string }
	decodeBody(t, f.only("PUT /v1/node/"+n1+"/eligibility"), &body)
	if body.Eligibility != "ineligible" {
		t.Errorf("body %+v", body)
	}
	r := runCLI(t, f, runOpts{}, "node", "eligibility", n1)
	if r.code != 1 || r.stderr[:len("Exactly one of -enable and -disable is required")] != "Exactly one of -enable and -disable is required" {
		t.Errorf("no flag: %+v", r)
	}

	failing := newFakeAPI(t)
	failing.on("GET", "/v1/nodes", reply(5, nodeStubs()[:1]))
	failing.on("PUT", "/v1/node/"+n1+"/eligibility", fail(http.StatusBadRequest, "Eligibility: node is draining"))
	runCLI(t, failing, runOpts{}, "node", "eligibility", "-enable", n1).
		check(t, 1, "", "Error updating scheduling eligibility: Unexpected response code: 400 (Eligibility: node is draining)\n")
}

func TestNodeDrain(t *testing.T) {
	type drainBody struct {
		DrainSpec    *api.DrainSpec
		MarkEligible bool
	}
	cases := []struct {
		name   string
		args   []string
		stdin  string
		stdout string
		want   *drainBody // nil: no request
	}{
		{"enable with default deadline", []string{"-enable", "-yes"}, "", "Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &api.DrainSpec{Deadline: time.Hour}}},
		{"deadline and ignore system", []string{"-enable", "-yes", "-deadline", "10m", "-ignore-system"}, "", "Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &api.DrainSpec{Deadline: 10 * time.Minute, IgnoreSystemJobs: true}}},
		{"force", []string{"-enable", "-yes", "-force"}, "", "Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &api.DrainSpec{Deadline: -1}}},
		{"no deadline, confirmed", []string{"-enable", "-no-deadline"}, "y\n",
			"Are you sure you want to enable drain mode for node \"" + n1 + "\"? [y/N] Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &api.DrainSpec{Deadline: 0}}},
		{"declined", []string{"-enable"}, "n\n",
			"Are you sure you want to enable drain mode for node \"" + n1 + "\"? [y/N] \nCancelling drain strategy change\n", nil},
		{"disable", []string{"-disable", "-yes"}, "", "Node \"" + n1 + "\" drain strategy unset\n", &drainBody{MarkEligible: true}},
		{"disable keeping ineligible", []string{"-disable", "-yes", "-keep-ineligible"}, "", "Node \"" + n1 + "\" drain strategy unset\n", &drainBody{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("GET", "/v1/nodes", reply(5, nodeStubs()[:1]))
			f.on("PUT", "/v1/node/"+n1+"/drain", reply(7, api.NodeUpdateResponse{Index: 7}))
			r := runCLI(t, f, runOpts{stdin: tc.stdin}, append(append([]string{"node", "drain"}, tc.args...), "11111111")...)
			r.check(t, 0, tc.stdout, "")
			reqs := f.requests("PUT /v1/node/" + n1 + "/drain")
			if tc.want == nil {
				if len(reqs) != 0 {
					t.Errorf("sent %d drain requests", len(reqs))
				}
				return
			}
			var got drainBody
			decodeBody(t, f.only("PUT /v1/node/"+n1+"/drain"), &got)
			if (got.DrainSpec == nil) != (tc.want.DrainSpec == nil) || (got.DrainSpec != nil && *got.DrainSpec != *tc.want.DrainSpec) ||
				got.MarkEligible != tc.want.MarkEligible {
				t.Errorf("body %+v %+v, want %+v %+v", got, got.DrainSpec, tc.want, tc.want.DrainSpec)
			}
		})
	}

	for _, args := range [][]string{
		{"-enable", "-disable"}, {}, {"-enable", "-force", "-no-deadline"}, {"-enable", "-deadline", "0s"},
		{"-disable", "-force"}, {"-enable", "-keep-ineligible"},
	} {
		f := newFakeAPI(t)
		r := runCLI(t, f, runOpts{}, append(append([]string{"node", "drain"}, args...), n1)...)
		if r.code != 1 || len(f.requests("")) != 0 {
			t.Errorf("%v: code %d, %d requests, stderr %q", args, r.code, len(f.requests("")), r.stderr)
		}
	}
}
