package jobs

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestNodeRegisterNewNode(t *testing.T) {
	h, fl := newSchedHarness(t)
	n := apitest.TestNode(1)
	n.Name = ""
	// Fields the servers own are ignored when a client sends them.
	n.SchedulingEligibility = state.NodeSchedulingIneligible
	n.Drain = true
	n.ComputedClass = "forged"
	body := map[string]any{"Node": json.RawMessage(mustJSON(t, n, map[string]any{"SecretID": "5ec0e700-0000-4000-8000-000000000001"}))}
	var out state.NodeUpdateResponse
	rec := h.OK(http.MethodPost, "/v1/node/register", body, &out)

	if out.HeartbeatTTL != apitest.TTL {
		t.Errorf("HeartbeatTTL = %v, want %v", out.HeartbeatTTL, apitest.TTL)
	}
	if out.Index == 0 || out.NodeModifyIndex != out.Index || apitest.HeaderIndexOf(t, rec) != out.Index {
		t.Errorf("Index = %d, NodeModifyIndex = %d, header %s", out.Index, out.NodeModifyIndex, rec.Header().Get(schedhttp.HeaderIndex))
	}
	if out.EvalIDs == nil || len(out.EvalIDs) != 0 {
		t.Errorf("EvalIDs = %#v, want [] (no system jobs)", out.EvalIDs)
	}
	if got := fl.Beats(); !reflect.DeepEqual(got, []string{n.ID}) {
		t.Errorf("heartbeats = %v, want the new node's", got)
	}
	got := h.Node(n.ID)
	want := scheduler.ComputeClass(got)
	switch {
	case got.Status != state.NodeStatusReady:
		t.Errorf("Status = %q, want ready", got.Status)
	case got.SchedulingEligibility != state.NodeSchedulingEligible || got.Drain:
		t.Errorf("eligibility %q drain %v, want eligible and not draining", got.SchedulingEligibility, got.Drain)
	case got.NodePool != state.NodePoolDefault:
		t.Errorf("NodePool = %q, want default", got.NodePool)
	case got.Name != n.ID:
		t.Errorf("Name = %q, want the ID when none is given", got.Name)
	case got.ComputedClass == "" || got.ComputedClass == "forged" || got.ComputedClass != want:
		t.Errorf("ComputedClass = %q, want %q", got.ComputedClass, want)
	case got.SecretID != "" || !got.SecretMatches("5ec0e700-0000-4000-8000-000000000001"):
		t.Errorf("SecretID = %q, SecretHash = %q, want the hash of the one sent", got.SecretID, got.SecretHash)
	case got.StatusUpdatedAt != apitest.Now.Unix():
		t.Errorf("StatusUpdatedAt = %d, want %d", got.StatusUpdatedAt, apitest.Now.Unix())
	}

	// Reads never show the secret.
	read := h.OK(http.MethodGet, "/v1/node/"+n.ID, nil, nil)
	if strings.Contains(read.Body.String(), "5ec0e700") {
		t.Errorf("node read shows the secret: %s", read.Body.String())
	}
}

// mustJSON encodes v, merged with the extra top-level fields.
func mustJSON(t *testing.T, v any, extra map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, x := range extra {
		m[k] = x
	}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNodeRegisterCreatesSystemJobEvals(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.register(apitest.SystemJob("logs"))
	h.register(apitest.TestJob("web")) // a service job gets no node eval
	gpu := apitest.SystemJob("gpu-agent")
	gpu.NodePool = "gpu"
	h.OK(http.MethodPut, "/v1/node/pool/gpu", map[string]any{"Description": "GPUs"}, nil)
	h.register(gpu) // in another pool
	everywhere := apitest.SystemJob("audit")
	everywhere.Type = state.JobTypeSysBatch
	everywhere.NodePool = state.NodePoolAll
	h.register(everywhere)
	stopped := apitest.SystemJob("old")
	h.register(stopped)
	h.OK(http.MethodDelete, "/v1/job/old", nil, nil)

	out := h.RegisterNode(apitest.TestNode(1))
	if len(out.EvalIDs) != 2 || out.EvalCreateIndex != out.Index {
		t.Fatalf("EvalIDs = %v (create index %d, index %d), want evals of audit and logs", out.EvalIDs, out.EvalCreateIndex, out.Index)
	}
	var jobs []string
	for _, id := range out.EvalIDs {
		e := h.Eval(id)
		jobs = append(jobs, e.JobID)
		if e.TriggeredBy != state.EvalTriggerNodeUpdate || e.NodeID != apitest.NodeID(1) || e.NodeModifyIndex != out.Index ||
			e.Status != state.EvalStatusPending || e.CreateIndex != out.Index || e.CreateTime != apitest.Now.UnixNano() {
			t.Errorf("eval %+v", e)
		}
		job := h.Registered(&state.Job{ID: e.JobID})
		if e.Type != job.Type || e.Priority != job.Priority || e.JobModifyIndex != job.JobModifyIndex {
			t.Errorf("eval of %s: type %q priority %d job modify index %d", e.JobID, e.Type, e.Priority, e.JobModifyIndex)
		}
	}
	if !reflect.DeepEqual(jobs, []string{"audit", "logs"}) {
		t.Errorf("evals for %v, want audit and logs, in order", jobs)
	}

	// Registering again unchanged creates none; a new class does.
	if again := h.RegisterNode(apitest.TestNode(1)); len(again.EvalIDs) != 0 {
		t.Errorf("unchanged re-register created evals %v", again.EvalIDs)
	}
	changed := apitest.TestNode(1)
	changed.NodeClass = "large"
	if again := h.RegisterNode(changed); len(again.EvalIDs) != 2 {
		t.Errorf("class change created evals %v, want 2", again.EvalIDs)
	}
	// An initializing node gets none until it is ready.
	init := apitest.TestNode(2)
	init.Status = state.NodeStatusInit
	if out := h.RegisterNode(init); len(out.EvalIDs) != 0 || h.Node(init.ID).Status != state.NodeStatusInit {
		t.Errorf("initializing node: evals %v, status %q", out.EvalIDs, h.Node(init.ID).Status)
	}
}

func TestNodeReRegisterKeepsServerFields(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	h.OK(http.MethodPut, "/v1/node/"+n.ID+"/drain", map[string]any{"DrainSpec": map[string]any{"Deadline": int64(time.Hour)}}, nil)
	h.RegisterNode(n) // the client restarted
	got := h.Node(n.ID)
	if !got.Drain || got.DrainStrategy == nil || got.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Errorf("re-register undid the drain: drain %v strategy %+v eligibility %q", got.Drain, got.DrainStrategy, got.SchedulingEligibility)
	}
}

func TestNodeRegisterBadInput(t *testing.T) {
	h, fl := newSchedHarness(t)
	bad := func(mutate func(n *state.Node)) any {
		n := apitest.TestNode(1)
		mutate(n)
		return map[string]any{"Node": n}
	}
	cases := []struct {
		name string
		body any
		want []string
	}{
		{"no body", "", []string{"request body is required"}},
		{"no node", map[string]any{}, []string{"Node: a node is required"}},
		{"malformed", `{"Node": {"ID": 7}}`, []string{"Node.ID", "at byte"}},
		{"missing ID", bad(func(n *state.Node) { n.ID = "" }), []string{"Node.ID: required"}},
		{"ID not a UUID", bad(func(n *state.Node) { n.ID = "node-1" }), []string{"Node.ID", "not a UUID"}},
		{"missing datacenter", bad(func(n *state.Node) { n.Datacenter = "" }), []string{"Node.Datacenter: required"}},
		{"pool all", bad(func(n *state.Node) { n.NodePool = "all" }), []string{"Node.NodePool", `"all"`}},
		{"bad pool name", bad(func(n *state.Node) { n.NodePool = "a b" }), []string{"Node.NodePool"}},
		{"down status", bad(func(n *state.Node) { n.Status = "down" }), []string{"Node.Status"}},
		{"negative cpu", bad(func(n *state.Node) { n.NodeResources.CPU = -1 }), []string{"Node.NodeResources.CPU"}},
		{"port range", bad(func(n *state.Node) { n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 30000, 20000 }),
			[]string{"Node.NodeResources.MinDynamicPort"}},
		{"reserved ports", bad(func(n *state.Node) {
			n.ReservedResources = &state.NodeReservedResources{ReservedPorts: "22,80-70"}
		}), []string{"Node.ReservedResources.ReservedPorts", "80-70"}},
		{"http addr", bad(func(n *state.Node) { n.HTTPAddr = "nohost" }), []string{"Node.HTTPAddr"}},
		{"null driver", bad(func(n *state.Node) { n.Drivers["docker"] = nil }), []string{"Node.Drivers[docker]"}},
		{"several", bad(func(n *state.Node) { n.Datacenter, n.NodeResources.MemoryMB = "", -5 }),
			[]string{"Node.Datacenter", "Node.NodeResources.MemoryMB"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := h.on(t)
			before := h.Writes()
			h.Fail(http.MethodPost, "/v1/node/register", tc.body, http.StatusBadRequest, tc.want...)
			if h.Writes() != before {
				t.Error("a refused register wrote something")
			}
		})
	}
	if len(fl.Beats()) != 0 {
		t.Errorf("refused registers reset timers: %v", fl.Beats())
	}
}

func TestNodeRegisterSecretMismatch(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.OK(http.MethodPost, "/v1/node/register", map[string]any{"Node": json.RawMessage(mustJSON(t, n, map[string]any{"SecretID": "5ec0e700-0000-4000-8000-000000000001"}))}, nil)
	h.Fail(http.MethodPost, "/v1/node/register", map[string]any{"Node": json.RawMessage(mustJSON(t, n, map[string]any{"SecretID": "5ec0e700-0000-4000-8000-000000000002"}))},
		http.StatusBadRequest, "Node.SecretID")
	// Without a secret, the registered one is kept.
	h.RegisterNode(n)
	if got := h.Node(n.ID); !got.SecretMatches("5ec0e700-0000-4000-8000-000000000001") {
		t.Errorf("SecretHash = %q after a register without one", got.SecretHash)
	}
}

func TestNodeWritesWithoutLeaderServices(t *testing.T) {
	h := newHarness(t)
	before := h.Writes()
	h.Fail(http.MethodPost, "/v1/node/register", map[string]any{"Node": apitest.TestNode(1)}, http.StatusServiceUnavailable, "scheduler services")
	h.Fail(http.MethodPut, "/v1/node/"+apitest.NodeID(1)+"/heartbeat", nil, http.StatusServiceUnavailable)
	h.Fail(http.MethodPut, "/v1/system/gc", nil, http.StatusServiceUnavailable)
	if h.Writes() != before {
		t.Error("wrote without leader services")
	}
}

func TestNodeHeartbeat(t *testing.T) {
	h, fl := newSchedHarness(t)
	h.Fail(http.MethodPut, "/v1/node/"+apitest.NodeID(9)+"/heartbeat", nil, http.StatusNotFound, apitest.NodeID(9))

	n := apitest.TestNode(1)
	h.RegisterNode(n)
	before := h.Writes()
	var out state.NodeUpdateResponse
	h.OK(http.MethodPut, "/v1/node/"+n.ID+"/heartbeat", nil, &out)
	if out.HeartbeatTTL != apitest.TTL || len(out.EvalIDs) != 0 || h.Writes() != before {
		t.Errorf("heartbeat of a ready node: %+v, %d writes", out, h.Writes()-before)
	}
	if got := fl.Beats(); len(got) != 2 || got[1] != n.ID {
		t.Errorf("heartbeats = %v", got)
	}

	// A node marked down that heartbeats again is ready, with evals for
	// the system jobs and the jobs it runs.
	job := apitest.TestJob("web")
	h.register(job)
	h.register(apitest.SystemJob("logs"))
	h.PlaceAlloc(1, h.Registered(job), n.ID, state.AllocClientStatusRunning)
	h.Apply(store.NodeUpdateStatusRequestType, &store.NodeUpdateStatusRequest{NodeID: n.ID, Status: state.NodeStatusDown})
	h.OK(http.MethodPut, "/v1/node/"+n.ID+"/heartbeat", nil, &out)
	if got := h.Node(n.ID).Status; got != state.NodeStatusReady {
		t.Errorf("status after heartbeat = %q, want ready", got)
	}
	var jobs []string
	for _, id := range out.EvalIDs {
		jobs = append(jobs, h.Eval(id).JobID)
	}
	if !reflect.DeepEqual(jobs, []string{"logs", "web"}) || out.HeartbeatTTL != apitest.TTL {
		t.Errorf("evals for %v, ttl %v; want logs and web, %v", jobs, out.HeartbeatTTL, apitest.TTL)
	}
}

func TestLeaderErrorsMapToStatus(t *testing.T) {
	h, fl := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	fl.Fail(errors.New("not the leader"))
	h.Fail(http.MethodPut, "/v1/node/"+apitest.NodeID(1)+"/heartbeat", nil, http.StatusServiceUnavailable, "not the leader")
	h.Fail(http.MethodPut, "/v1/system/gc", nil, http.StatusServiceUnavailable, "not the leader")
	fl.Fail(state.NotFoundf("node %q", apitest.NodeID(1)))
	h.Fail(http.MethodPut, "/v1/node/"+apitest.NodeID(1)+"/heartbeat", nil, http.StatusNotFound)
}

func TestNodeUpdateStatus(t *testing.T) {
	h, fl := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	job := apitest.TestJob("web")
	h.register(job)
	h.register(apitest.SystemJob("logs"))
	h.PlaceAlloc(1, h.Registered(job), n.ID, state.AllocClientStatusRunning)
	url := "/v1/node/" + n.ID + "/status"

	before := h.Writes()
	h.Fail(http.MethodPut, url, map[string]any{}, http.StatusBadRequest, "Status: required")
	h.Fail(http.MethodPut, url, map[string]any{"Status": "gone"}, http.StatusBadRequest, `Status: "gone"`)
	h.Fail(http.MethodPut, "/v1/node/"+apitest.NodeID(9)+"/status", map[string]any{"Status": "down"}, http.StatusNotFound)
	if h.Writes() != before {
		t.Fatal("refused status updates wrote")
	}

	beats := len(fl.Beats())
	var out state.NodeUpdateResponse
	h.OK(http.MethodPut, url, map[string]any{"Status": "down", "StatusDescription": "maintenance"}, &out)
	got := h.Node(n.ID)
	if got.Status != state.NodeStatusDown || got.StatusDescription != "maintenance" {
		t.Errorf("node %q %q", got.Status, got.StatusDescription)
	}
	// Going down evaluates only the jobs it ran, and is no heartbeat.
	if len(out.EvalIDs) != 1 || h.Eval(out.EvalIDs[0]).JobID != "web" || out.HeartbeatTTL != 0 || len(fl.Beats()) != beats {
		t.Errorf("down: %+v, heartbeats %v", out, fl.Beats())
	}
	h.OK(http.MethodPut, url, map[string]any{"Status": "ready"}, &out)
	if len(out.EvalIDs) != 2 || out.HeartbeatTTL != apitest.TTL {
		t.Errorf("ready: %+v", out)
	}
	// Unchanged status: a heartbeat, no evals, no write.
	before = h.Writes()
	beats = len(fl.Beats())
	h.OK(http.MethodPut, url, map[string]any{"Status": "ready"}, &out)
	if len(out.EvalIDs) != 0 || h.Writes() != before || len(fl.Beats()) != beats+1 || out.NodeModifyIndex != h.Node(n.ID).ModifyIndex {
		t.Errorf("unchanged status: %+v, %d writes, heartbeats %v", out, h.Writes()-before, fl.Beats())
	}
}

func TestNodeUpdateEligibility(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	h.register(apitest.SystemJob("logs"))
	url := "/v1/node/" + n.ID + "/eligibility"

	before := h.Writes()
	h.Fail(http.MethodPut, url, map[string]any{}, http.StatusBadRequest, "Eligibility: required")
	h.Fail(http.MethodPut, url, map[string]any{"Eligibility": "maybe"}, http.StatusBadRequest, `Eligibility: "maybe"`)
	h.Fail(http.MethodPut, "/v1/node/"+apitest.NodeID(9)+"/eligibility", map[string]any{"Eligibility": "eligible"}, http.StatusNotFound)
	if h.Writes() != before {
		t.Fatal("refused updates wrote")
	}

	var out state.NodeUpdateResponse
	h.OK(http.MethodPut, url, map[string]any{"Eligibility": "ineligible"}, &out)
	if got := h.Node(n.ID); got.SchedulingEligibility != state.NodeSchedulingIneligible || got.ModifyIndex != out.Index || len(out.EvalIDs) != 0 {
		t.Errorf("ineligible: node %q at %d, answer %+v", got.SchedulingEligibility, got.ModifyIndex, out)
	}
	h.OK(http.MethodPut, url, map[string]any{"Eligibility": "eligible"}, &out)
	if got := h.Node(n.ID); got.SchedulingEligibility != state.NodeSchedulingEligible || len(out.EvalIDs) != 1 {
		t.Errorf("eligible: node %q, answer %+v (want one eval for the system job)", got.SchedulingEligibility, out)
	}

	// A draining node cannot be made eligible.
	h.OK(http.MethodPut, "/v1/node/"+n.ID+"/drain", map[string]any{"DrainSpec": map[string]any{"Deadline": 0}}, nil)
	before = h.Writes()
	h.Fail(http.MethodPut, url, map[string]any{"Eligibility": "eligible"}, http.StatusBadRequest, "draining")
	if h.Writes() != before {
		t.Error("refused update wrote")
	}
}

func TestNodeDrain(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	h.register(apitest.SystemJob("logs"))
	url := "/v1/node/" + n.ID + "/drain"

	cases := []struct {
		deadline  time.Duration
		wantForce int64
	}{
		{time.Hour, apitest.Now.Add(time.Hour).UnixNano()},
		{-1, apitest.Now.UnixNano()},
		{0, 0},
	}
	for _, tc := range cases {
		var out state.NodeUpdateResponse
		h.OK(http.MethodPut, url, map[string]any{"DrainSpec": map[string]any{"Deadline": int64(tc.deadline), "IgnoreSystemJobs": true}}, &out)
		got := h.Node(n.ID)
		ds := got.DrainStrategy
		if !got.Drain || ds == nil || got.SchedulingEligibility != state.NodeSchedulingIneligible {
			t.Fatalf("deadline %v: drain %v strategy %+v eligibility %q", tc.deadline, got.Drain, ds, got.SchedulingEligibility)
		}
		if ds.Deadline != int64(tc.deadline) || ds.ForceDeadline != tc.wantForce || !ds.IgnoreSystemJobs || ds.StartedAt != apitest.Now.UnixNano() {
			t.Errorf("deadline %v: strategy %+v, want force deadline %d", tc.deadline, ds, tc.wantForce)
		}
		if out.NodeModifyIndex != got.ModifyIndex || len(out.EvalIDs) != 0 {
			t.Errorf("deadline %v: answer %+v", tc.deadline, out)
		}
	}

	before := h.Writes()
	h.Fail(http.MethodPut, url, map[string]any{"DrainSpec": map[string]any{"Deadline": -2}}, http.StatusBadRequest, "DrainSpec.Deadline")
	h.Fail(http.MethodPut, url, map[string]any{"DrainSpec": map[string]any{}, "MarkEligible": true}, http.StatusBadRequest, "MarkEligible")
	h.Fail(http.MethodPut, url, `{"DrainSpec": {"Deadline": "1h"}}`, http.StatusBadRequest, "DrainSpec.Deadline")
	h.Fail(http.MethodPut, "/v1/node/"+apitest.NodeID(9)+"/drain", map[string]any{"DrainSpec": nil}, http.StatusNotFound)
	if h.Writes() != before {
		t.Fatal("refused drains wrote")
	}

	// Cancelling keeps the node ineligible unless MarkEligible.
	h.OK(http.MethodPut, url, map[string]any{"DrainSpec": nil}, nil)
	if got := h.Node(n.ID); got.Drain || got.DrainStrategy != nil || got.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Errorf("cancelled drain: drain %v strategy %+v eligibility %q", got.Drain, got.DrainStrategy, got.SchedulingEligibility)
	}
	h.OK(http.MethodPut, url, map[string]any{"DrainSpec": map[string]any{"Deadline": 0}}, nil)
	var out state.NodeUpdateResponse
	h.OK(http.MethodPut, url, map[string]any{"DrainSpec": nil, "MarkEligible": true}, &out)
	if got := h.Node(n.ID); got.Drain || got.SchedulingEligibility != state.NodeSchedulingEligible || len(out.EvalIDs) != 1 {
		t.Errorf("cancelled with MarkEligible: drain %v eligibility %q evals %v", got.Drain, got.SchedulingEligibility, out.EvalIDs)
	}
}

func TestNodeListAndRead(t *testing.T) {
	h, _ := newSchedHarness(t)
	const odd = "3ab00000-0000-4000-8000-000000000003"
	for i := 1; i <= 4; i++ {
		n := apitest.TestNode(i)
		if i == 3 {
			n.ID, n.Datacenter = odd, "dc2"
		}
		h.RegisterNode(n)
	}
	h.OK(http.MethodPut, "/v1/node/"+apitest.NodeID(2)+"/eligibility", map[string]any{"Eligibility": "ineligible"}, nil)

	var all []*state.NodeListStub
	rec := h.OK(http.MethodGet, "/v1/nodes", nil, &all)
	if len(all) != 4 || apitest.HeaderIndexOf(t, rec) != h.Store.Index(store.TableNodes) {
		t.Fatalf("%d nodes, index %s", len(all), rec.Header().Get(schedhttp.HeaderIndex))
	}
	s := all[0]
	if s.ID != apitest.NodeID(1) || s.Name != "node-1" || s.Address != "10.0.0.1" || s.Datacenter != "dc1" || s.Status != "ready" ||
		s.SchedulingEligibility != "eligible" || s.NodePool != "default" || s.Drivers["raw_exec"] == nil || s.NodeResources != nil || s.Attributes != nil {
		t.Errorf("stub %+v", s)
	}
	var withRes []*state.NodeListStub
	h.OK(http.MethodGet, "/v1/nodes?resources=true&os=true", nil, &withRes)
	if withRes[0].NodeResources == nil || withRes[0].NodeResources.CPU != 4000 || withRes[0].Attributes["kernel.name"] != "linux" {
		t.Errorf("resources=true stub %+v", withRes[0])
	}

	var filtered []*state.NodeListStub
	h.OK(http.MethodGet, "/v1/nodes?filter="+urlEscape(`Datacenter == "dc1" and SchedulingEligibility == "eligible"`), nil, &filtered)
	if ids := stubIDs(filtered); !reflect.DeepEqual(ids, []string{apitest.NodeID(1), apitest.NodeID(4)}) {
		t.Errorf("filtered = %v", ids)
	}
	var prefixed []*state.NodeListStub
	h.OK(http.MethodGet, "/v1/nodes?prefix=3a", nil, &prefixed)
	if ids := stubIDs(prefixed); !reflect.DeepEqual(ids, []string{odd}) {
		t.Errorf("prefix = %v", ids)
	}
	var page1, page2 []*state.NodeListStub
	rec = h.OK(http.MethodGet, "/v1/nodes?per_page=3", nil, &page1)
	next := rec.Header().Get(schedhttp.HeaderNextToken)
	h.OK(http.MethodGet, "/v1/nodes?per_page=3&next_token="+next, nil, &page2)
	if len(page1) != 3 || page1[2].ID != apitest.NodeID(4) || next != odd || len(page2) != 1 || page2[0].ID != odd {
		t.Errorf("pages %v / %v, next %q", stubIDs(page1), stubIDs(page2), next)
	}
	h.Fail(http.MethodGet, "/v1/nodes?filter="+urlEscape("Datacenter =="), nil, http.StatusBadRequest, "filter")
	h.Fail(http.MethodGet, "/v1/nodes?per_page=-1", nil, http.StatusBadRequest, "per_page")

	// Reads take a unique prefix.
	var n state.Node
	h.OK(http.MethodGet, "/v1/node/3ab", nil, &n)
	if n.ID != odd || n.Datacenter != "dc2" {
		t.Errorf("prefix read = %s in %s", n.ID, n.Datacenter)
	}
	h.Fail(http.MethodGet, "/v1/node/10000000", nil, http.StatusBadRequest, "matches 3 nodes")
	h.Fail(http.MethodGet, "/v1/node/ffff", nil, http.StatusNotFound, "ffff")
}

func stubIDs(stubs []*state.NodeListStub) []string {
	var out []string
	for _, s := range stubs {
		out = append(out, s.ID)
	}
	return out
}

func TestRouterPrefersStaticSegments(t *testing.T) {
	h, _ := newSchedHarness(t)
	h.RegisterNode(apitest.TestNode(1))
	// /v1/node/pools and /v1/node/:node_id share a position.
	var pools []*state.NodePool
	h.OK(http.MethodGet, "/v1/node/pools", nil, &pools)
	if len(pools) != 2 {
		t.Errorf("pools = %d, want the two built-in", len(pools))
	}
	var n state.Node
	h.OK(http.MethodGet, "/v1/node/"+apitest.NodeID(1), nil, &n)
	if n.ID != apitest.NodeID(1) {
		t.Errorf("node read = %q", n.ID)
	}
	rec := h.Do(http.MethodGet, "/v1/node/register", nil)
	if rec.Code != http.StatusMethodNotAllowed || !slices.Contains(strings.Split(rec.Header().Get("Allow"), ", "), "PUT") {
		t.Errorf("GET /v1/node/register: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}
