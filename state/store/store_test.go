package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// Test fixtures and helpers of the store tests. Names start with "st" so
// they do not collide with the helpers of the validation and diff tests in
// the same package.

func stStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := NewStore(cfg)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	return s
}

// stApply encodes req as a command of type mt, applies it at index and
// returns the response, failing the test on an error response.
func stApply(t testing.TB, s *Store, index uint64, mt MessageType, req any) any {
	t.Helper()
	resp := stApplyErr(t, s, index, mt, req)
	if err, ok := resp.(error); ok {
		t.Fatalf("apply %d at %d: %v", mt, index, err)
	}
	return resp
}

// stApplyErr is stApply returning the error response instead of failing.
func stApplyErr(t testing.TB, s *Store, index uint64, mt MessageType, req any) any {
	t.Helper()
	data, err := Encode(mt, req)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return s.Apply(index, data)
}

func stRegister(t testing.TB, s *Store, index uint64, job *state.Job, eval *state.Evaluation) *JobRegisterResponse {
	t.Helper()
	resp := stApply(t, s, index, JobRegisterRequestType, &JobRegisterRequest{Job: job, Eval: eval, Now: int64(index) * 1000})
	return resp.(*JobRegisterResponse)
}

// stJob is a small service job with one group "web" of two instances.
func stJob(id string) *state.Job {
	return &state.Job{
		ID:          id,
		Name:        id,
		Namespace:   state.DefaultNamespace,
		Region:      state.DefaultRegion,
		NodePool:    state.DefaultNodePool,
		Type:        state.JobTypeService,
		Priority:    50,
		Datacenters: []string{"dc1"},
		Meta:        map[string]string{"owner": "team-a"},
		TaskGroups: []*state.TaskGroup{{
			Name:  "web",
			Count: 2,
			Tasks: []*state.Task{{
				Name:   "server",
				Driver: "raw_exec",
				Config: map[string]any{
					"command": "/bin/sleep",
					"args":    []any{"1000"},
					"port":    int64(8080),
					"nested":  map[string]any{"key": "value"},
				},
				Resources:   &state.Resources{CPU: 100, MemoryMB: 64},
				KillTimeout: 5 * time.Second,
			}},
		}},
	}
}

// stEval is a pending evaluation of job.
func stEval(id string, job *state.Job) *state.Evaluation {
	return &state.Evaluation{
		ID:          id,
		Namespace:   job.Namespace,
		JobID:       job.ID,
		Type:        job.Type,
		Priority:    job.Priority,
		TriggeredBy: state.EvalTriggerJobRegister,
		Status:      state.EvalStatusPending,
	}
}

// stAlloc is a new allocation of job's first group on node.
func stAlloc(id string, job *state.Job, node string) *state.Allocation {
	return &state.Allocation{
		ID:            id,
		Namespace:     job.Namespace,
		EvalID:        "eval-" + id,
		Name:          fmt.Sprintf("%s.%s[0]", job.ID, job.TaskGroups[0].Name),
		NodeID:        node,
		JobID:         job.ID,
		TaskGroup:     job.TaskGroups[0].Name,
		DesiredStatus: state.AllocDesiredStatusRun,
		AllocatedResources: &state.AllocatedResources{
			Tasks: map[string]*state.AllocatedTaskResources{"server": {CPU: 100, MemoryMB: 64}},
		},
	}
}

func stNode(id string) *state.Node {
	return &state.Node{
		ID:         id,
		SecretID:   "secret-" + id,
		Name:       "node-" + id,
		Datacenter: "dc1",
		NodePool:   state.DefaultNodePool,
		Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &state.NodeResources{
			CPU: 4000, MemoryMB: 8192, DiskMB: 100000,
		},
		Drivers: map[string]*state.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		Status:  state.NodeStatusReady,
	}
}

// stDump reads every row of every table of the schema, keyed by table name.
func stDump(t testing.TB, s *Store) map[string][]any {
	t.Helper()
	txn := s.currentDB().Txn(false)
	out := map[string][]any{}
	for _, def := range tableDefs() {
		err := tableRows(txn, def.name, func(row any) error {
			if l, ok := row.(*allocList); ok {
				// Compared by content: how a row is cut in chunks
				// depends on the order of its writes.
				row = dumpedAllocList{Key: l.Key, IDs: l.ids()}
			}
			out[def.name] = append(out[def.name], row)
			return nil
		})
		if err != nil {
			t.Fatalf("dump %s: %v", def.name, err)
		}
	}
	return out
}

// dumpedAllocList is a row of the list tables in stDump.
type dumpedAllocList struct {
	Key string
	IDs []string
}

// stCompareDumps reports every table whose rows differ.
func stCompareDumps(t testing.TB, want, got map[string][]any) {
	t.Helper()
	for _, def := range tableDefs() {
		w, g := want[def.name], got[def.name]
		if len(w) != len(g) {
			t.Errorf("table %s: %d rows, want %d", def.name, len(g), len(w))
			continue
		}
		for i := range w {
			if !reflect.DeepEqual(w[i], g[i]) {
				t.Errorf("table %s row %d:\n got %#v\nwant %#v", def.name, i, g[i], w[i])
			}
		}
	}
}

// stFired reports whether any channel of ws is closed. Apply closes the
// channels of what it changed before it returns, so no waiting is needed.
func stFired(ws memdb.WatchSet) bool {
	for ch := range ws {
		select {
		case <-ch:
			return true
		default:
		}
	}
	return false
}

func stMust[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return v
	}
}

func TestNewStoreHasBuiltins(t *testing.T) {
	s := stStore(t, Config{})
	if got := s.Config(); got.JobVersionsRetained != 6 || got.JobSubmissionsRetained != 6 {
		t.Errorf("Config() = %+v, want both retentions 6", got)
	}
	ns := stMust[*state.Namespace](t)(s.NamespaceByName(nil, state.DefaultNamespace))
	if ns == nil || ns.CreateIndex != 1 {
		t.Fatalf("default namespace = %+v, want it at index 1", ns)
	}
	pools := stMust[[]*state.NodePool](t)(s.NodePools(nil))
	if len(pools) != 2 || pools[0].Name != state.NodePoolAll || pools[1].Name != state.NodePoolDefault {
		t.Fatalf("node pools = %+v, want all and default", pools)
	}
	if got := s.LatestIndex(); got != 1 {
		t.Errorf("LatestIndex() = %d, want 1", got)
	}
	if got := s.Index(TableNamespaces); got != 1 {
		t.Errorf("Index(namespaces) = %d, want 1", got)
	}
	if got := s.Index(TableJobs); got != 0 {
		t.Errorf("Index(jobs) = %d, want 0", got)
	}
}

func TestStoreConfigKeepsExplicitValues(t *testing.T) {
	s := stStore(t, Config{JobVersionsRetained: 2, JobSubmissionsRetained: 3})
	if got := s.Config(); got.JobVersionsRetained != 2 || got.JobSubmissionsRetained != 3 {
		t.Errorf("Config() = %+v", got)
	}
}

func TestReadsFilterByNamespaceAndPrefix(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 10, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod"}}})
	for i, id := range []string{"web", "web-2", "api", "w"} {
		stRegister(t, s, uint64(20+i), stJob(id), stEval(fmt.Sprintf("e%d", i), stJob(id)))
	}
	prodJob := stJob("web")
	prodJob.Namespace = "prod"
	stRegister(t, s, 30, prodJob, stEval("e-prod", prodJob))

	ids := func(jobs []*state.Job) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, j.Namespace+"/"+j.ID)
		}
		return out
	}
	evalIDs := func(evals []*state.Evaluation) []string {
		var out []string
		for _, e := range evals {
			out = append(out, e.ID)
		}
		return out
	}
	jobs := stMust[[]*state.Job](t)
	evals := stMust[[]*state.Evaluation](t)
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"jobs default all", ids(jobs(s.Jobs(nil, state.DefaultNamespace, ""))), []string{"default/api", "default/w", "default/web", "default/web-2"}},
		{"jobs default web", ids(jobs(s.Jobs(nil, state.DefaultNamespace, "web"))), []string{"default/web", "default/web-2"}},
		{"jobs every namespace", ids(jobs(s.Jobs(nil, "*", "web"))), []string{"default/web", "default/web-2", "prod/web"}},
		{"jobs prod", ids(jobs(s.Jobs(nil, "prod", ""))), []string{"prod/web"}},
		{"jobs unknown namespace", ids(jobs(s.Jobs(nil, "nope", ""))), nil},
		{"evals prod", evalIDs(evals(s.Evals(nil, "prod", ""))), []string{"e-prod"}},
		{"evals prefix", evalIDs(evals(s.Evals(nil, "*", "e-"))), []string{"e-prod"}},
		{"evals by job", evalIDs(evals(s.EvalsByJob(nil, state.DefaultNamespace, "web"))), []string{"e0"}},
	}
	for _, tc := range tests {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestApplyFailuresWriteNothing(t *testing.T) {
	base := func(t *testing.T) *Store {
		s := stStore(t, Config{})
		stApply(t, s, 5, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
		stApply(t, s, 6, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "busy"}, {Name: "empty"}}})
		busy := stJob("busy-job")
		busy.Namespace = "busy"
		stRegister(t, s, 7, busy, stEval("busy-eval", busy))
		stRegister(t, s, 8, stJob("web"), stEval("e1", stJob("web")))
		return s
	}
	tests := []struct {
		name    string
		mt      MessageType
		req     any
		wantErr error
	}{
		{"register in unknown namespace", JobRegisterRequestType,
			&JobRegisterRequest{Job: func() *state.Job { j := stJob("x"); j.Namespace = "nope"; return j }(), Eval: stEval("e2", stJob("x"))}, state.ErrNotFound},
		{"register without job", JobRegisterRequestType, &JobRegisterRequest{}, state.ErrInvalid},
		{"enforce index 0 on existing job", JobRegisterRequestType,
			&JobRegisterRequest{Job: stJob("web"), Eval: stEval("e2", stJob("web")), EnforceIndex: true}, state.ErrConflict},
		{"enforce wrong index", JobRegisterRequestType,
			&JobRegisterRequest{Job: stJob("web"), Eval: stEval("e2", stJob("web")), EnforceIndex: true, JobModifyIndex: 7}, state.ErrConflict},
		{"enforce index on missing job", JobRegisterRequestType,
			&JobRegisterRequest{Job: stJob("new"), Eval: stEval("e2", stJob("new")), EnforceIndex: true, JobModifyIndex: 8}, state.ErrConflict},
		{"register with eval lacking ID", JobRegisterRequestType,
			&JobRegisterRequest{Job: stJob("new"), Eval: &state.Evaluation{}}, state.ErrInvalid},
		{"deregister unknown job", JobDeregisterRequestType,
			&JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "nope", Eval: stEval("e2", stJob("nope"))}, state.ErrNotFound},
		{"delete default namespace", NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"empty", state.DefaultNamespace}}, state.ErrInvalid},
		{"delete unknown namespace", NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"empty", "nope"}}, state.ErrNotFound},
		{"delete namespace with live job", NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"empty", "busy"}}, state.ErrConflict},
		{"namespace without name", NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "ok"}, {}}}, state.ErrInvalid},
		{"eval list with a bad eval", EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{stEval("e9", stJob("web")), {}}}, state.ErrInvalid},
		{"alloc of missing job", AllocUpdateRequestType,
			&AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a1", stJob("web"), "n1"), stAlloc("a2", stJob("ghost"), "n1")}}, state.ErrInvalid},
		{"node deregister unknown", NodeDeregisterRequestType, &NodeDeregisterRequest{NodeIDs: []string{"n1", "nope"}}, state.ErrNotFound},
		{"node status unknown node", NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "nope", Status: state.NodeStatusDown}, state.ErrNotFound},
		{"node status bad status", NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "n1", Status: "sleepy"}, state.ErrInvalid},
		{"node into pool all", NodeRegisterRequestType, &NodeRegisterRequest{Node: func() *state.Node { n := stNode("n2"); n.NodePool = state.NodePoolAll; return n }()}, state.ErrInvalid},
		{"change pool all", NodePoolUpsertRequestType, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "gpu"}, {Name: state.NodePoolAll}}}, state.ErrInvalid},
		{"delete pool default", NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{state.NodePoolDefault}}, state.ErrInvalid},
		{"delete pool all", NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{state.NodePoolAll}}, state.ErrInvalid},
		{"delete unknown pool", NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"nope"}}, state.ErrNotFound},
		{"summary of unknown group", JobSummaryUpsertRequestType,
			&JobSummaryUpsertRequest{Namespace: state.DefaultNamespace, JobID: "web", Queued: map[string]int{"web": 1, "nope": 2}}, state.ErrInvalid},
		{"summary of unknown job", JobSummaryUpsertRequestType,
			&JobSummaryUpsertRequest{Namespace: state.DefaultNamespace, JobID: "nope", Queued: map[string]int{"web": 1}}, state.ErrNotFound},
		{"service without name", ServiceUpsertRequestType,
			&ServiceUpsertRequest{Services: []*state.ServiceRegistration{{ID: "s1", Namespace: state.DefaultNamespace}}}, state.ErrInvalid},
		{"deployment without ID", DeploymentUpsertRequestType, &DeploymentUpsertRequest{Deployments: []*state.Deployment{{JobID: "web"}}}, state.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base(t)
			before, beforeIndex := stDump(t, s), s.LatestIndex()
			resp := stApplyErr(t, s, 100, tc.mt, tc.req)
			err, ok := resp.(error)
			if !ok {
				t.Fatalf("Apply returned %#v, want an error", resp)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %q does not match %v", err, tc.wantErr)
			}
			if got := s.LatestIndex(); got != beforeIndex {
				t.Errorf("LatestIndex() = %d after a failed command, want %d", got, beforeIndex)
			}
			stCompareDumps(t, before, stDump(t, s))
		})
	}
}

// Here rather than in state, beside the fixture it copies.
func TestMutatingCopyLeavesOriginal(t *testing.T) {
	orig := stJob("web")
	c := orig.Copy()
	c.TaskGroups[0].Tasks[0].Config["nested"].(map[string]any)["key"] = "changed"
	c.TaskGroups[0].Count = 99
	c.Meta["owner"] = "someone"
	c.Datacenters[0] = "dc9"
	if !reflect.DeepEqual(orig, stJob("web")) {
		t.Errorf("original changed through its copy: %+v", orig)
	}
}
