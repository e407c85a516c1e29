package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

func TestAllocUpdateStampsAndKeepsClientFields(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a1", job, "n1")}, Now: 1100})
	a := stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	if a.CreateIndex != 11 || a.ModifyIndex != 11 || a.AllocModifyIndex != 11 || a.CreateTime != 1100 || a.ModifyTime != 1100 {
		t.Errorf("new alloc stamps = %d %d %d %d %d", a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex, a.CreateTime, a.ModifyTime)
	}
	if a.ClientStatus != state.AllocClientStatusPending {
		t.Errorf("new alloc client status = %q, want pending", a.ClientStatus)
	}
	if a.Job == nil || a.Job.CreateIndex != 10 {
		t.Errorf("alloc job = %+v, want the registered job attached", a.Job)
	}

	states := map[string]*state.TaskState{"server": {State: state.TaskStateRunning}}
	stApply(t, s, 12, AllocClientUpdateRequestType, &AllocClientUpdateRequest{
		Allocs: []*state.Allocation{
			{ID: "a1", ClientStatus: state.AllocClientStatusRunning, ClientDescription: "ok", TaskStates: states},
			{ID: "gone", ClientStatus: state.AllocClientStatusRunning},
		},
		Now: 1200,
	})
	a = stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	if a.ClientStatus != state.AllocClientStatusRunning || a.ModifyIndex != 12 || a.AllocModifyIndex != 11 || a.ModifyTime != 1200 {
		t.Errorf("client update = %s mi %d ami %d mt %d", a.ClientStatus, a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime)
	}
	if a.DesiredStatus != state.AllocDesiredStatusRun || a.AllocatedResources == nil {
		t.Error("client update lost server-side fields")
	}
	if g := stMust[*state.Allocation](t)(s.AllocByID(nil, "gone")); g != nil {
		t.Error("client update created an unknown allocation")
	}

	// A plan stopping the alloc keeps what the client reported.
	stop := stAlloc("a1", job, "n1")
	stop.DesiredStatus = state.AllocDesiredStatusStop
	stop.Job = nil
	stApply(t, s, 13, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stop}, Now: 1300})
	a = stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	if a.DesiredStatus != state.AllocDesiredStatusStop || a.ClientStatus != state.AllocClientStatusRunning ||
		!reflect.DeepEqual(a.TaskStates, states) || a.ClientDescription != "ok" {
		t.Errorf("stopped alloc = desired %s client %s states %v", a.DesiredStatus, a.ClientStatus, a.TaskStates)
	}
	if a.CreateIndex != 11 || a.CreateTime != 1100 || a.AllocModifyIndex != 13 || a.Job == nil {
		t.Errorf("stopped alloc stamps = ci %d ct %d ami %d job %v", a.CreateIndex, a.CreateTime, a.AllocModifyIndex, a.Job != nil)
	}
	if got := stMust[[]*state.Allocation](t)(s.AllocsByNode(nil, "n1")); len(got) != 1 {
		t.Errorf("AllocsByNode = %d allocs, want 1", len(got))
	}
	// Allocations are found by evaluation through the evaluation's job:
	// none while the evaluation is not stored.
	if got := stMust[[]*state.Allocation](t)(s.AllocsByEval(nil, "eval-a1")); len(got) != 0 {
		t.Errorf("AllocsByEval of an unknown evaluation = %d allocs, want 0", len(got))
	}
	stApply(t, s, 14, EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{stEval("eval-a1", job)}})
	if got := stMust[[]*state.Allocation](t)(s.AllocsByEval(nil, "eval-a1")); len(got) != 1 || got[0].ID != "a1" {
		t.Errorf("AllocsByEval = %d allocs, want a1", len(got))
	}
}

// TestJobSummaryMatchesAllocs drives allocations of two jobs through random
// status changes, plans and garbage collection, several per command (a
// command counts a summary in place after copying it once), and checks
// after every command that each summary counts exactly the allocations
// present, and that a snapshot taken before the command still reads the
// summaries it read.
func TestJobSummaryMatchesAllocs(t *testing.T) {
	s := stStore(t, Config{})
	rng := rand.New(rand.NewPCG(1, 2))
	jobs := []*state.Job{stJob("a"), stJob("b")}
	second := stJob("b").TaskGroups[0]
	second.Name = "worker"
	jobs[1].TaskGroups = append(jobs[1].TaskGroups, second)
	index := uint64(10)
	for _, j := range jobs {
		stRegister(t, s, index, j, nil)
		index++
	}
	statuses := []string{state.AllocClientStatusPending, state.AllocClientStatusRunning, state.AllocClientStatusComplete,
		state.AllocClientStatusFailed, state.AllocClientStatusLost, state.AllocClientStatusUnknown}
	var ids []string
	summaries := func(r interface {
		JobSummaryByID(memdb.WatchSet, string, string) (*state.JobSummary, error)
	}) map[string]map[string]state.TaskGroupSummary {
		out := map[string]map[string]state.TaskGroupSummary{}
		for _, j := range jobs {
			out[j.ID] = maps.Clone(stMust[*state.JobSummary](t)(r.JobSummaryByID(nil, state.DefaultNamespace, j.ID)).Summary)
		}
		return out
	}
	for step := range 200 {
		index++
		snap := stMust[*StateSnapshot](t)(s.Snapshot())
		before := summaries(snap)
		switch op := rng.IntN(4); {
		case op == 0 || len(ids) == 0:
			var allocs []*state.Allocation
			for k := range 1 + rng.IntN(4) {
				j := jobs[rng.IntN(len(jobs))]
				a := stAlloc(fmt.Sprintf("alloc-%03d-%d", step, k), j, "n1")
				a.TaskGroup = j.TaskGroups[rng.IntN(len(j.TaskGroups))].Name
				ids = append(ids, a.ID)
				allocs = append(allocs, a)
			}
			stApply(t, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs})
		case op == 1 || op == 2:
			var reports []*state.Allocation
			for range 1 + rng.IntN(4) { // the same allocation may be reported twice
				reports = append(reports, &state.Allocation{ID: ids[rng.IntN(len(ids))], ClientStatus: statuses[rng.IntN(len(statuses))]})
			}
			stApply(t, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: reports})
		default:
			i := rng.IntN(len(ids))
			stApply(t, s, index, EvalDeleteRequestType, &EvalDeleteRequest{Allocs: []string{ids[i]}})
			ids = append(ids[:i], ids[i+1:]...)
		}
		for _, j := range jobs {
			want := map[string]state.TaskGroupSummary{}
			for _, tg := range j.TaskGroups {
				want[tg.Name] = state.TaskGroupSummary{}
			}
			for _, a := range stMust[[]*state.Allocation](t)(s.AllocsByJob(nil, state.DefaultNamespace, j.ID, false)) {
				c := want[a.TaskGroup]
				countAlloc(&c, a.ClientStatus, 1)
				want[a.TaskGroup] = c
			}
			got := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, j.ID))
			if !reflect.DeepEqual(got.Summary, want) {
				t.Fatalf("step %d job %s: summary %+v, allocations say %+v", step, j.ID, got.Summary, want)
			}
		}
		if after := summaries(snap); !reflect.DeepEqual(after, before) {
			t.Fatalf("step %d: a snapshot taken before the command reads %+v, read %+v", step, after, before)
		}
	}
}

func TestDeploymentUpsertAndReads(t *testing.T) {
	s := stStore(t, Config{})
	stRegister(t, s, 10, stJob("web"), nil)
	d := &state.Deployment{ID: "d1", Namespace: state.DefaultNamespace, JobID: "web", JobCreateIndex: 10, Status: state.DeploymentStatusRunning,
		TaskGroups: map[string]*state.DeploymentState{"web": {DesiredTotal: 2}}}
	stApply(t, s, 11, DeploymentUpsertRequestType, &DeploymentUpsertRequest{Deployments: []*state.Deployment{d}, Now: 5})
	d2 := *d
	d2.Status = state.DeploymentStatusSuccessful
	stApply(t, s, 12, DeploymentUpsertRequestType, &DeploymentUpsertRequest{Deployments: []*state.Deployment{&d2},
		Evals: []*state.Evaluation{stEval("e1", stJob("web"))}, Now: 6})
	got := stMust[*state.Deployment](t)(s.DeploymentByID(nil, "d1"))
	if got.Status != state.DeploymentStatusSuccessful || got.CreateIndex != 11 || got.ModifyIndex != 12 || got.CreateTime != 5 || got.ModifyTime != 6 {
		t.Errorf("deployment = %+v", got)
	}
	if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1")); e == nil {
		t.Error("deployment eval not stored")
	}
	if ds := stMust[[]*state.Deployment](t)(s.Deployments(nil, "*", "d")); len(ds) != 1 {
		t.Errorf("Deployments = %d, want 1", len(ds))
	}
	if ds := stMust[[]*state.Deployment](t)(s.Deployments(nil, "other", "")); len(ds) != 0 {
		t.Errorf("Deployments(other) = %d, want 0", len(ds))
	}
}

func TestNodeCommands(t *testing.T) {
	s := stStore(t, Config{})
	n := stNode("n1")
	n.NodePool = "gpu"
	stApply(t, s, 10, NodeRegisterRequestType, &NodeRegisterRequest{Node: n})
	got := stMust[*state.Node](t)(s.NodeByID(nil, "n1"))
	if got.SchedulingEligibility != state.NodeSchedulingEligible || got.CreateIndex != 10 || got.SecretID != "" || !got.SecretMatches("secret-n1") {
		t.Errorf("registered node = %+v", got)
	}
	if p := stMust[*state.NodePool](t)(s.NodePoolByName(nil, "gpu")); p == nil || p.CreateIndex != 10 {
		t.Errorf("pool of a new node = %+v, want it created", p)
	}

	// Servers marked it ineligible; a client re-register must not undo it.
	inel := *got
	inel.SchedulingEligibility = state.NodeSchedulingIneligible
	txn := s.writeTxn(11)
	if err := txn.insert(TableNodes, &inel); err != nil {
		t.Fatal(err)
	}
	if err := txn.commit(); err != nil {
		t.Fatal(err)
	}
	again := stNode("n1")
	again.NodePool = "gpu"
	again.Name = "renamed"
	stApply(t, s, 12, NodeRegisterRequestType, &NodeRegisterRequest{Node: again})
	got = stMust[*state.Node](t)(s.NodeByID(nil, "n1"))
	if got.SchedulingEligibility != state.NodeSchedulingIneligible || got.Name != "renamed" || got.CreateIndex != 10 || got.ModifyIndex != 12 {
		t.Errorf("re-registered node = %+v", got)
	}

	stApply(t, s, 13, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "n1", Status: state.NodeStatusDown, UpdatedAt: 77,
		Evals: []*state.Evaluation{{ID: "ne", Namespace: state.DefaultNamespace, JobID: "x", TriggeredBy: state.EvalTriggerNodeUpdate, Status: state.EvalStatusPending}}})
	got = stMust[*state.Node](t)(s.NodeByID(nil, "n1"))
	if got.Status != state.NodeStatusDown || got.StatusUpdatedAt != 77 || got.ModifyIndex != 13 {
		t.Errorf("node after status update = %+v", got)
	}
	if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "ne")); e == nil {
		t.Error("node update eval not stored")
	}

	// A pool with a node cannot go; without it, it can.
	resp := stApplyErr(t, s, 14, NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"gpu"}})
	if _, ok := resp.(error); !ok {
		t.Error("deleted a pool that has a node")
	}
	stApply(t, s, 15, NodeDeregisterRequestType, &NodeDeregisterRequest{NodeIDs: []string{"n1"}})
	if got := stMust[[]*state.Node](t)(s.Nodes(nil, "")); len(got) != 0 {
		t.Errorf("nodes after deregister = %d", len(got))
	}
	stApply(t, s, 16, NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"gpu"}})
	if p := stMust[*state.NodePool](t)(s.NodePoolByName(nil, "gpu")); p != nil {
		t.Error("pool not deleted")
	}
	stApply(t, s, 17, NodePoolUpsertRequestType, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: state.NodePoolDefault, Description: "mine"}}})
	if p := stMust[*state.NodePool](t)(s.NodePoolByName(nil, state.NodePoolDefault)); p.Description != "mine" || p.CreateIndex != 1 || p.ModifyIndex != 17 {
		t.Errorf("updated default pool = %+v", p)
	}
}

func TestNamespaceCommands(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 10, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod"}, {Name: "dev"}}})
	stApply(t, s, 11, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod", Description: "p"}}})
	prod := stMust[*state.Namespace](t)(s.NamespaceByName(nil, "prod"))
	if prod.Description != "p" || prod.CreateIndex != 10 || prod.ModifyIndex != 11 {
		t.Errorf("prod = %+v", prod)
	}
	// A namespace whose jobs are all dead may go.
	job := stJob("old")
	job.Namespace = "dev"
	job.Stop = true
	stRegister(t, s, 12, job, nil)
	if j := stMust[*state.Job](t)(s.JobByID(nil, "dev", "old")); j.Status != state.JobStatusDead {
		t.Fatalf("stopped job status = %s", j.Status)
	}
	stApply(t, s, 13, NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"prod", "dev"}})
	var names []string
	for _, ns := range stMust[[]*state.Namespace](t)(s.Namespaces(nil)) {
		names = append(names, ns.Name)
	}
	if !reflect.DeepEqual(names, []string{state.DefaultNamespace}) {
		t.Errorf("namespaces = %v, want only default", names)
	}
}

func TestServiceCommands(t *testing.T) {
	s := stStore(t, Config{})
	reg := func(id, name, alloc string) *state.ServiceRegistration {
		return &state.ServiceRegistration{ID: id, ServiceName: name, Namespace: state.DefaultNamespace, JobID: "web", AllocID: alloc, NodeID: "n1", Port: 80}
	}
	stApply(t, s, 10, ServiceUpsertRequestType, &ServiceUpsertRequest{Services: []*state.ServiceRegistration{
		reg("s1", "web", "a1"), reg("s2", "web", "a2"), reg("s3", "db", "a2"),
	}})
	other := reg("s4", "web", "a9")
	other.Namespace, other.JobID = "prod", "x"
	stApply(t, s, 11, ServiceUpsertRequestType, &ServiceUpsertRequest{Services: []*state.ServiceRegistration{other}})
	ids := func(regs []*state.ServiceRegistration, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range regs {
			out = append(out, r.ID)
		}
		return out
	}
	tests := []struct {
		name      string
		got, want []string
	}{
		{"by job", ids(s.ServicesByJob(nil, state.DefaultNamespace, "web")), []string{"s1", "s2", "s3"}},
		{"by name", ids(s.ServicesByName(nil, state.DefaultNamespace, "web")), []string{"s1", "s2"}},
		{"by alloc", ids(s.ServicesByAlloc(nil, "a2")), []string{"s2", "s3"}},
		{"by node", ids(s.ServicesByNode(nil, "n1")), []string{"s1", "s2", "s3", "s4"}},
		{"namespace", ids(s.Services(nil, state.DefaultNamespace)), []string{"s3", "s1", "s2"}},
		{"all", ids(s.Services(nil, "*")), []string{"s3", "s1", "s2", "s4"}},
	}
	for _, tc := range tests {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	stApply(t, s, 12, ServiceDeleteRequestType, &ServiceDeleteRequest{IDs: []string{"s1", "missing"}, AllocIDs: []string{"a2"}})
	if got := ids(s.Services(nil, "*")); !reflect.DeepEqual(got, []string{"s4"}) {
		t.Errorf("after delete = %v, want [s4]", got)
	}
}
