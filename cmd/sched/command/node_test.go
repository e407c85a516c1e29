package command

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const (
	n1 = "11111111-aaaa-4000-8000-000000000001"
	n2 = "11112222-aaaa-4000-8000-000000000002"
)

func nodeStubs() []*state.NodeListStub {
	return []*state.NodeListStub{
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
	empty.on("GET", "/v1/nodes", reply(5, []*state.NodeListStub{}))
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
			Job: &state.Job{Type: "service", Version: 2}, CreateTime: testNow.Add(-time.Hour).UnixNano(), ModifyTime: testNow.Add(-time.Minute).UnixNano(),
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
	f.on("GET", "/v1/nodes", reply(5, nodeStubs()), reply(5, []*state.NodeListStub{}))
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
	f.on("PUT", "/v1/node/"+n1+"/eligibility", reply(7, state.NodeUpdateResponse{Index: 7}))
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
		DrainSpec    *state.DrainSpec
		MarkEligible bool
	}
	cases := []struct {
		name   string
		args   []string
		stdin  string
		stdout string
		want   *drainBody // nil: no request
	}{
		{"enable with default deadline", []string{"-enable", "-yes", "-detach"}, "", "Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &state.DrainSpec{Deadline: time.Hour}}},
		{"deadline and ignore system", []string{"-enable", "-yes", "-detach", "-deadline", "10m", "-ignore-system"}, "", "Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &state.DrainSpec{Deadline: 10 * time.Minute, IgnoreSystemJobs: true}}},
		{"force", []string{"-enable", "-yes", "-detach", "-force"}, "", "Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &state.DrainSpec{Deadline: -1}}},
		{"no deadline, confirmed", []string{"-enable", "-detach", "-no-deadline"}, "y\n",
			"Are you sure you want to enable drain mode for node \"" + n1 + "\"? [y/N] Node \"" + n1 + "\" drain strategy set\n",
			&drainBody{DrainSpec: &state.DrainSpec{Deadline: 0}}},
		{"declined", []string{"-enable"}, "n\n",
			"Are you sure you want to enable drain mode for node \"" + n1 + "\"? [y/N] \nCancelling drain strategy change\n", nil},
		{"disable", []string{"-disable", "-yes"}, "", "Node \"" + n1 + "\" drain strategy unset\n", &drainBody{MarkEligible: true}},
		{"disable, detach is a no-op", []string{"-disable", "-yes", "-detach"}, "", "Node \"" + n1 + "\" drain strategy unset\n", &drainBody{MarkEligible: true}},
		{"disable keeping ineligible", []string{"-disable", "-yes", "-keep-ineligible"}, "", "Node \"" + n1 + "\" drain strategy unset\n", &drainBody{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("GET", "/v1/nodes", reply(5, nodeStubs()[:1]))
			f.on("PUT", "/v1/node/"+n1+"/drain", reply(7, state.NodeUpdateResponse{Index: 7}))
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

	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"-enable", "-disable"}, "Exactly one of -enable, -disable and -monitor is required"},
		{[]string{}, "Exactly one of -enable, -disable and -monitor is required"},
		{[]string{"-detach"}, "Exactly one of -enable, -disable and -monitor is required"},
		{[]string{"-enable", "-force", "-no-deadline"}, "-force and -no-deadline cannot be combined"},
		{[]string{"-enable", "-deadline", "0s"}, "-deadline must be positive"},
		{[]string{"-disable", "-force"}, "apply only with -enable"},
		{[]string{"-disable", "-deadline", "5m"}, "apply only with -enable"},
		{[]string{"-enable", "-keep-ineligible"}, "-keep-ineligible applies only with -disable"},
		{[]string{"-monitor", "-enable"}, "-monitor cannot be combined"},
		{[]string{"-monitor", "-disable"}, "-monitor cannot be combined"},
		{[]string{"-monitor", "-detach"}, "-monitor cannot be combined"},
		{[]string{"-monitor", "-deadline", "1h"}, "-monitor cannot be combined"},
		{[]string{"-monitor", "-no-deadline"}, "-monitor cannot be combined"},
		{[]string{"-monitor", "-force"}, "-monitor cannot be combined"},
		{[]string{"-monitor", "-ignore-system"}, "-monitor cannot be combined"},
		{[]string{"-monitor", "-keep-ineligible"}, "-monitor cannot be combined"},
	} {
		f := newFakeAPI(t)
		r := runCLI(t, f, runOpts{}, append(append([]string{"node", "drain"}, tc.args...), n1)...)
		if r.code != 1 || len(f.requests("")) != 0 || !strings.Contains(strings.SplitN(r.stderr, "\n", 2)[0], tc.stderr) || !strings.Contains(r.stderr, "Usage: sched node drain") {
			t.Errorf("%v: code %d, %d requests, stderr %q", tc.args, r.code, len(f.requests("")), r.stderr)
		}
	}
}

// drainFake serves node n1 and its allocations as the server does: a read
// with ?index= blocks until its table's index passes it. Tests move a
// drain forward with setNode and setAlloc, and wait with settled until
// the monitor has taken the current state and blocks for the next, so
// each step is seen on its own and the output is deterministic.
type drainFake struct {
	t          *testing.T
	mu         sync.Mutex
	index      uint64 // of the last change
	node       *state.Node
	nodeIndex  uint64
	allocs     []*state.Allocation
	allocIndex uint64
	// changed is closed (and replaced) on every change, waking the
	// blocked reads.
	changed chan struct{}
	// parked holds the index each blocked read ("node", "allocs") waits
	// past; plainReads counts the reads without an index, by table.
	parked     map[string]uint64
	plainReads map[string]int
	// event is closed (and replaced) whenever parked or plainReads
	// change, waking waitFor.
	event chan struct{}
}

// newDrainFake serves node (ID n1) and allocs on f, with the node list
// and the drain write routed too: the write sets the node's
// DrainStrategy, as the server does.
func newDrainFake(t *testing.T, f *fakeAPI, node *state.Node, allocs ...*state.Allocation) *drainFake {
	d := &drainFake{
		t: t, index: 10, node: node, nodeIndex: 10, allocs: allocs, allocIndex: 10,
		changed: make(chan struct{}), parked: map[string]uint64{}, plainReads: map[string]int{}, event: make(chan struct{}),
	}
	f.on("GET", "/v1/nodes", reply(5, nodeStubs()[:1]))
	f.on("GET", "/v1/node/"+n1, func(w http.ResponseWriter, r *http.Request) {
		d.serve(w, r, "node", func() (uint64, any) { return d.nodeIndex, d.node })
	})
	f.on("GET", "/v1/node/"+n1+"/allocations", func(w http.ResponseWriter, r *http.Request) {
		d.serve(w, r, "allocs", func() (uint64, any) { return d.allocIndex, d.allocs })
	})
	f.on("PUT", "/v1/node/"+n1+"/drain", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ DrainSpec *state.DrainSpec }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.DrainSpec == nil {
			http.Error(w, "bad drain body", http.StatusBadRequest)
			return
		}
		d.setNode(func(n *state.Node) {
			n.Drain, n.SchedulingEligibility = true, state.NodeSchedulingIneligible
			n.DrainStrategy = &state.DrainStrategy{Deadline: int64(body.DrainSpec.Deadline), IgnoreSystemJobs: body.DrainSpec.IgnoreSystemJobs}
		})
		reply(d.index, state.NodeUpdateResponse{Index: d.index})(w, r)
	})
	return d
}

// serve answers a read of table: at once without ?index=, else once the
// table's index passes it.
func (d *drainFake) serve(w http.ResponseWriter, r *http.Request, table string, read func() (uint64, any)) {
	wait, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	d.mu.Lock()
	for {
		index, _ := read()
		if wait == 0 || index > wait {
			break
		}
		ch := d.changed
		d.parked[table] = wait
		d.notify()
		d.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
			d.mu.Lock()
			delete(d.parked, table)
			d.mu.Unlock()
			return
		}
		d.mu.Lock()
		delete(d.parked, table)
	}
	index, v := read()
	body, err := json.Marshal(v)
	if wait == 0 {
		d.plainReads[table]++
		d.notify()
	}
	d.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	w.Write(body)
}

// notify wakes waitFor; d.mu is held.
func (d *drainFake) notify() {
	close(d.event)
	d.event = make(chan struct{})
}

// setNode changes the node as the servers would, waking its readers.
func (d *drainFake) setNode(change func(n *state.Node)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := *d.node
	change(&n)
	d.index++
	d.node, d.nodeIndex = &n, d.index
	close(d.changed)
	d.changed = make(chan struct{})
}

// setAlloc changes allocation id, waking the allocation readers.
func (d *drainFake) setAlloc(id string, change func(a *state.Allocation)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	next := make([]*state.Allocation, len(d.allocs))
	for i, a := range d.allocs {
		c := *a
		if c.ID == id {
			change(&c)
		}
		next[i] = &c
	}
	d.index++
	d.allocs, d.allocIndex = next, d.index
	close(d.changed)
	d.changed = make(chan struct{})
}

// waitFor waits until cond (called with d.mu held) holds, failing the test
// after a deadline.
func (d *drainFake) waitFor(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		ok, ch := cond(), d.event
		d.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			d.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// settled waits until the monitor's watches of tables have taken the
// latest state and block for the next change. A watch hands its answer
// to the monitor before it asks again, so the monitor has it.
func (d *drainFake) settled(tables ...string) {
	d.t.Helper()
	d.waitFor("the monitor to catch up", func() bool {
		for _, table := range tables {
			want := d.nodeIndex
			if table == "allocs" {
				want = d.allocIndex
			}
			if wait, ok := d.parked[table]; !ok || wait != want {
				return false
			}
		}
		return true
	})
}

// drainNode is node n1, ready and not draining.
func drainNode() *state.Node {
	return &state.Node{ID: n1, Name: "node-1", Datacenter: "dc1", NodePool: "default", Status: "ready", SchedulingEligibility: "eligible"}
}

// drainAlloc is an allocation of job type typ on n1 with the given client
// status, wanted running.
func drainAlloc(id, typ, clientStatus string) *state.Allocation {
	return &state.Allocation{ID: id, NodeID: n1, JobID: typ + "-job", TaskGroup: "g", Job: &state.Job{ID: typ + "-job", Type: typ},
		DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: clientStatus}
}

// markMigrate marks a for migration, as the drainer does.
func markMigrate(a *state.Allocation) {
	yes := true
	a.DesiredTransition.Migrate = &yes
}

// runAsync runs the CLI in the background; wait returns its result.
func runAsync(t *testing.T, f *fakeAPI, o runOpts, args ...string) (wait func() result) {
	done := make(chan result, 1)
	go func() { done <- runCLI(t, f, o, args...) }()
	return func() result {
		t.Helper()
		select {
		case r := <-done:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("the command did not return")
			return result{}
		}
	}
}

// drainTS is testNow as the drain monitor prints it.
const drainTS = "2025-03-01T12:00:00Z"

// TestNodeDrainMonitorsToCompletion follows a drain the way the leader
// runs it: the service allocation is marked, stopped and completes, then
// the system one; the leader ends the drain once both are told to stop,
// and the monitor returns once the last one has stopped on the client.
// An allocation that had finished before the drain says nothing.
func TestNodeDrainMonitorsToCompletion(t *testing.T) {
	f := newFakeAPI(t)
	const web, sys, old = "a1a1a1a1-full", "5y5y5y5y-full", "a0a0a0a0-full"
	d := newDrainFake(t, f, drainNode(),
		drainAlloc(old, state.JobTypeService, state.AllocClientStatusComplete),
		drainAlloc(web, state.JobTypeService, state.AllocClientStatusRunning),
		drainAlloc(sys, state.JobTypeSystem, state.AllocClientStatusRunning))
	wait := runAsync(t, f, runOpts{}, "node", "drain", "-enable", "-yes", "-deadline", "30m", n1)

	d.settled("node", "allocs")
	steps := []struct {
		id     string
		change func(a *state.Allocation)
	}{
		{web, markMigrate},
		{web, func(a *state.Allocation) { a.DesiredStatus = state.AllocDesiredStatusStop }},
		{web, func(a *state.Allocation) { a.ClientStatus = state.AllocClientStatusComplete }},
		{sys, markMigrate},
		{sys, func(a *state.Allocation) { a.DesiredStatus = state.AllocDesiredStatusStop }},
	}
	for _, s := range steps {
		d.setAlloc(s.id, s.change)
		d.settled("node", "allocs")
	}
	// The leader ends the drain: everything it moves is terminal, though
	// the system allocation still runs on the client.
	d.setNode(func(n *state.Node) { n.Drain, n.DrainStrategy = false, nil })
	d.waitFor("the read that confirms the end", func() bool { return d.plainReads["allocs"] == 2 })
	d.settled("allocs")
	d.setAlloc(sys, func(a *state.Allocation) { a.ClientStatus = state.AllocClientStatusComplete })

	wait().check(t, 0, lines(
		drainTS+": Ctrl-C to stop monitoring: will not cancel the node drain",
		drainTS+`: Node "`+n1+`" drain strategy set`,
		drainTS+`: Alloc "a1a1a1a1" marked for migration`,
		drainTS+`: Alloc "a1a1a1a1" draining`,
		drainTS+`: Alloc "a1a1a1a1" status running -> complete`,
		drainTS+`: Alloc "5y5y5y5y" marked for migration`,
		drainTS+`: Node "`+n1+`" has marked all allocations for migration`,
		drainTS+`: Alloc "5y5y5y5y" draining`,
		drainTS+": Drain complete for node "+n1,
		drainTS+`: Alloc "5y5y5y5y" status running -> complete`,
		drainTS+`: All allocations on node "`+n1+`" have stopped`,
	), "")

	var body struct{ DrainSpec *state.DrainSpec }
	decodeBody(t, f.only("PUT /v1/node/"+n1+"/drain"), &body)
	if body.DrainSpec == nil || body.DrainSpec.Deadline != 30*time.Minute {
		t.Errorf("drain spec %+v", body.DrainSpec)
	}
	// Blocking queries, not polling: after its first read, each watch
	// always asks for changes past what it has.
	for _, key := range []string{"GET /v1/node/" + n1, "GET /v1/node/" + n1 + "/allocations"} {
		var plain int
		for _, r := range f.requests(key) {
			if r.Query.Get("index") == "" {
				plain++
			}
		}
		if want := map[bool]int{true: 1, false: 2}[key == "GET /v1/node/"+n1]; plain != want {
			t.Errorf("%s: %d reads without an index, want %d (all: %v)", key, plain, want, f.keys())
		}
	}
}

// TestNodeDrainEmptyNodeCompletesAtOnce: the leader may end the drain of
// a node with nothing to move before the monitor first reads it.
func TestNodeDrainEmptyNodeCompletesAtOnce(t *testing.T) {
	f := newFakeAPI(t)
	d := newDrainFake(t, f, drainNode())
	reroute(f, "PUT /v1/node/"+n1+"/drain", func(w http.ResponseWriter, r *http.Request) {
		d.setNode(func(n *state.Node) { n.SchedulingEligibility = state.NodeSchedulingIneligible })
		reply(11, state.NodeUpdateResponse{Index: 11})(w, r)
	})
	runCLI(t, f, runOpts{}, "node", "drain", "-enable", "-yes", n1).check(t, 0, lines(
		drainTS+": Ctrl-C to stop monitoring: will not cancel the node drain",
		drainTS+`: Node "`+n1+`" drain strategy set`,
		drainTS+`: Node "`+n1+`" has marked all allocations for migration`,
		drainTS+": Drain complete for node "+n1,
	), "")
}

// TestNodeDrainIgnoreSystemLeavesSystemAllocs: with -ignore-system the
// system allocation neither holds back "all marked" nor the end.
func TestNodeDrainIgnoreSystemLeavesSystemAllocs(t *testing.T) {
	f := newFakeAPI(t)
	const web, sys = "a1a1a1a1-full", "5y5y5y5y-full"
	d := newDrainFake(t, f, drainNode(),
		drainAlloc(web, state.JobTypeService, state.AllocClientStatusRunning),
		drainAlloc(sys, state.JobTypeSystem, state.AllocClientStatusRunning))
	wait := runAsync(t, f, runOpts{}, "node", "drain", "-enable", "-yes", "-ignore-system", n1)
	d.settled("node", "allocs")
	d.setAlloc(web, markMigrate)
	d.settled("node", "allocs")
	d.setAlloc(web, func(a *state.Allocation) {
		a.DesiredStatus, a.ClientStatus = state.AllocDesiredStatusStop, state.AllocClientStatusComplete
	})
	d.settled("node", "allocs")
	d.setNode(func(n *state.Node) { n.Drain, n.DrainStrategy = false, nil })
	wait().check(t, 0, lines(
		drainTS+": Ctrl-C to stop monitoring: will not cancel the node drain",
		drainTS+`: Node "`+n1+`" drain strategy set`,
		drainTS+`: Alloc "a1a1a1a1" marked for migration`,
		drainTS+`: Node "`+n1+`" has marked all allocations for migration`,
		drainTS+`: Alloc "a1a1a1a1" draining`,
		drainTS+`: Alloc "a1a1a1a1" status running -> complete`,
		drainTS+": Drain complete for node "+n1,
	), "")
}

// TestNodeDrainMonitorFlag follows a drain that is already under way
// without writing anything; an operator changes the deadline, then
// cancels the drain, which the monitor tells from a completion.
func TestNodeDrainMonitorFlag(t *testing.T) {
	f := newFakeAPI(t)
	const web = "a1a1a1a1-full"
	node := drainNode()
	node.Drain, node.DrainStrategy = true, &state.DrainStrategy{Deadline: int64(time.Hour)}
	running := drainAlloc(web, state.JobTypeService, state.AllocClientStatusRunning)
	markMigrate(running)
	d := newDrainFake(t, f, node, running)
	wait := runAsync(t, f, runOpts{}, "node", "drain", "-monitor", n1)
	d.settled("node", "allocs")
	d.setNode(func(n *state.Node) { n.DrainStrategy = &state.DrainStrategy{Deadline: int64(2 * time.Hour)} })
	d.settled("node", "allocs")
	d.setNode(func(n *state.Node) { n.Drain, n.DrainStrategy = false, nil })
	wait().check(t, 1, lines(
		drainTS+": Ctrl-C to stop monitoring: will not cancel the node drain",
		drainTS+`: Alloc "a1a1a1a1" marked for migration`,
		drainTS+`: Node "`+n1+`" has marked all allocations for migration`,
		drainTS+`: Node "`+n1+`" drain strategy updated`,
		drainTS+": Drain cancelled for node "+n1,
	), "")
	if n := len(f.requests("PUT /v1/node/" + n1 + "/drain")); n != 0 {
		t.Errorf("-monitor sent %d drain writes", n)
	}
}

func TestNodeDrainMonitorNotDraining(t *testing.T) {
	f := newFakeAPI(t)
	newDrainFake(t, f, drainNode())
	runCLI(t, f, runOpts{}, "node", "drain", "-monitor", n1).check(t, 0, "No drain strategy set for node \""+n1+"\"\n", "")
	if n := len(f.requests("GET /v1/node/" + n1 + "/allocations")); n != 0 {
		t.Errorf("%d allocation reads for a node that is not draining", n)
	}
}

// TestNodeDrainDetachReturnsAtOnce: with -detach nothing is read after
// the write, though the drain is far from over.
func TestNodeDrainDetachReturnsAtOnce(t *testing.T) {
	f := newFakeAPI(t)
	newDrainFake(t, f, drainNode(), drainAlloc("a1a1a1a1-full", state.JobTypeService, state.AllocClientStatusRunning))
	runCLI(t, f, runOpts{}, "node", "drain", "-enable", "-yes", "-detach", n1).check(t, 0, "Node \""+n1+"\" drain strategy set\n", "")
	if got := f.keys(); len(got) != 2 {
		t.Errorf("requests %v, want the lookup and the write", got)
	}
}

// TestNodeDrainInterrupted: Ctrl-C stops following and leaves the drain
// alone.
func TestNodeDrainInterrupted(t *testing.T) {
	f := newFakeAPI(t)
	d := newDrainFake(t, f, drainNode(), drainAlloc("a1a1a1a1-full", state.JobTypeService, state.AllocClientStatusRunning))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wait := runAsync(t, f, runOpts{ctx: ctx}, "node", "drain", "-enable", "-yes", n1)
	d.settled("node", "allocs")
	cancel()
	r := wait()
	r.check(t, 0, lines(
		drainTS+": Ctrl-C to stop monitoring: will not cancel the node drain",
		drainTS+`: Node "`+n1+`" drain strategy set`,
	), "Monitoring stopped; the drain of node \""+n1+"\" is not cancelled (see `sched node status "+n1+"`)\n")
	if n := len(f.requests("PUT /v1/node/" + n1 + "/drain")); n != 1 {
		t.Errorf("%d drain writes, want only the one that started it", n)
	}
}

// reroute replaces the handlers of "METHOD /path" on f.
func reroute(f *fakeAPI, key string, hs ...http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[key] = hs
}

// fastRetry makes the drain monitor's retries quick for a test.
func fastRetry(t *testing.T, giveUp time.Duration) {
	saved := drainRetry
	drainRetry = retryPolicy{first: time.Millisecond, max: 2 * time.Millisecond, giveUp: giveUp}
	t.Cleanup(func() { drainRetry = saved })
}

// TestNodeDrainRetriesTransientErrors: a watch that fails with a 5xx
// tries again and the monitor carries on; a 403 ends it at once; errors
// that go on give up with the last one.
func TestNodeDrainRetriesTransientErrors(t *testing.T) {
	fastRetry(t, time.Hour)
	f := newFakeAPI(t)
	node := drainNode()
	node.Drain, node.DrainStrategy = true, &state.DrainStrategy{Deadline: int64(time.Hour)}
	d := newDrainFake(t, f, node)
	allocs := "GET /v1/node/" + n1 + "/allocations"
	f.mu.Lock()
	watch := f.routes[allocs]
	f.mu.Unlock()
	reroute(f, allocs, append([]http.HandlerFunc{
		fail(http.StatusInternalServerError, "No cluster leader"), fail(http.StatusServiceUnavailable, "restarting"),
	}, watch...)...)
	wait := runAsync(t, f, runOpts{}, "node", "drain", "-monitor", n1)
	d.settled("node", "allocs")
	d.setNode(func(n *state.Node) { n.Drain, n.DrainStrategy = false, nil })
	wait().check(t, 0, lines(
		drainTS+": Ctrl-C to stop monitoring: will not cancel the node drain",
		drainTS+`: Node "`+n1+`" has marked all allocations for migration`,
		drainTS+": Drain complete for node "+n1,
	), "")
	if n := len(f.requests(allocs)); n < 4 {
		t.Errorf("%d allocation reads, want the 2 failures, the retry and the final read at least", n)
	}

	denied := newFakeAPI(t)
	newDrainFake(t, denied, node)
	reroute(denied, allocs, fail(http.StatusForbidden, "Permission denied"))
	runCLI(t, denied, runOpts{}, "node", "drain", "-monitor", n1).check(t, 1,
		drainTS+": Ctrl-C to stop monitoring: will not cancel the node drain\n",
		"Error reading node allocations: Unexpected response code: 403 (Permission denied)\n")
	if n := len(denied.requests(allocs)); n != 1 {
		t.Errorf("a 403 was tried %d times", n)
	}

	fastRetry(t, 10*time.Millisecond)
	down := newFakeAPI(t)
	newDrainFake(t, down, node)
	reroute(down, allocs, fail(http.StatusBadGateway, "upstream down"))
	r := runCLI(t, down, runOpts{}, "node", "drain", "-monitor", n1)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "Error reading node allocations: gave up after ") ||
		!strings.HasSuffix(r.stderr, "failed attempts in a row: Unexpected response code: 502 (upstream down)\n") {
		t.Errorf("persistent failure: %+v", r)
	}
	if n := len(down.requests(allocs)); n < 3 {
		t.Errorf("gave up after %d attempts", n)
	}
}
