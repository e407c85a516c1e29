package store

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// scAll is every registration of the services clean-up fixture; scA2 is
// what is left once a1's go.
var (
	scAll = []string{"s1-admin", "s1-http", "s2-http"}
	scA2  = []string{"s2-http"}
)

// scStore returns a store with nodes n1 and n2, job web with allocation a1
// on n1 and a2 on n2, all running, and their service registrations: a1's
// s1-http and s1-admin, a2's s2-http, written at index 20.
func scStore(t *testing.T) *Store {
	t.Helper()
	s := stStore(t, Config{})
	stApply(t, s, 10, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	stApply(t, s, 11, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n2")})
	job := stJob("web")
	stRegister(t, s, 12, job, nil)
	stApply(t, s, 13, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a1", job, "n1"), stAlloc("a2", job, "n2")}})
	stApply(t, s, 14, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{
		{ID: "a1", ClientStatus: state.AllocClientStatusRunning},
		{ID: "a2", ClientStatus: state.AllocClientStatusRunning},
	}})
	scRegister(t, s, 20, "a1")
	scRegister(t, s, 21, "a2")
	if got := scIDs(t, s); !reflect.DeepEqual(got, scAll) {
		t.Fatalf("fixture: registrations %v, want %v", got, scAll)
	}
	return s
}

// scRegister writes, at index, the registrations of allocation a1 (on n1)
// or a2 (on n2), as their client does.
func scRegister(t *testing.T, s *Store, index uint64, alloc string) {
	t.Helper()
	reg := func(id, name, node string) *state.ServiceRegistration {
		return &state.ServiceRegistration{ID: id, ServiceName: name, Namespace: state.DefaultNamespace,
			NodeID: node, JobID: "web", AllocID: alloc, Address: "10.0.0.1", Port: 8080}
	}
	regs := []*state.ServiceRegistration{reg("s1-http", "http", "n1"), reg("s1-admin", "admin", "n1")}
	if alloc == "a2" {
		regs = []*state.ServiceRegistration{reg("s2-http", "http", "n2")}
	}
	stApply(t, s, index, ServiceUpsertRequestType, &ServiceUpsertRequest{Services: regs})
}

// scIDs lists the IDs of the job's registrations, in order.
func scIDs(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, r := range stMust[[]*state.ServiceRegistration](t)(s.ServicesByJob(nil, state.DefaultNamespace, "web")) {
		out = append(out, r.ID)
	}
	return out
}

// scDesiredStop has a plan stop a1 at index without marking it lost.
func scDesiredStop(t *testing.T, s *Store, index uint64) {
	t.Helper()
	stApply(t, s, index, PlanApplyRequestType, &PlanApplyRequest{Stops: []*state.Allocation{
		{ID: "a1", DesiredStatus: state.AllocDesiredStatusStop, DesiredDescription: "alloc not needed"},
	}})
}

func TestServerCleansUpStaleServices(t *testing.T) {
	down := func() *state.Node { n := stNode("n1"); n.Status = state.NodeStatusDown; return n }
	clientReport := func(status string) func() any {
		return func() any {
			return &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: "a1", ClientStatus: status}}}
		}
	}
	tests := []struct {
		name string
		// prep, when set, runs on the fixture at indexes 30-99.
		prep func(t *testing.T, s *Store)
		mt   MessageType
		req  func() any
		want []string
	}{
		// A node going down or away takes its registrations with it.
		{name: "node status down", mt: NodeUpdateStatusRequestType, want: scA2,
			req: func() any { return &NodeUpdateStatusRequest{NodeID: "n1", Status: state.NodeStatusDown, UpdatedAt: 5} }},
		{name: "node status disconnected", mt: NodeUpdateStatusRequestType, want: scAll,
			req: func() any { return &NodeUpdateStatusRequest{NodeID: "n1", Status: state.NodeStatusDisconnected} }},
		{name: "node upsert down", mt: NodeUpsertRequestType, want: scA2,
			req: func() any { return &NodeUpsertRequest{Node: down(), UpdatedAt: 5} }},
		{name: "node register down", mt: NodeRegisterRequestType, want: scA2,
			req: func() any { return &NodeRegisterRequest{Node: down()} }},
		{name: "node re-register ready", mt: NodeRegisterRequestType, want: scAll,
			req: func() any { return &NodeRegisterRequest{Node: stNode("n1")} }},
		{name: "node deregister", mt: NodeDeregisterRequestType, want: scA2,
			req: func() any { return &NodeDeregisterRequest{NodeIDs: []string{"n1"}} }},
		{name: "node garbage collected", mt: GarbageCollectRequestType, want: scA2,
			// A registration that reached the servers after its node
			// went down.
			prep: func(t *testing.T, s *Store) {
				scDesiredStop(t, s, 30)
				stApply(t, s, 31, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "n1", Status: state.NodeStatusDown})
				scRegister(t, s, 32, "a1")
			},
			req: func() any { return &GarbageCollectRequest{Nodes: []string{"n1"}} }},

		// An allocation its client is done with loses its registrations.
		{name: "client reports complete", mt: AllocClientUpdateRequestType, req: clientReport(state.AllocClientStatusComplete), want: scA2},
		{name: "client reports failed", mt: AllocClientUpdateRequestType, req: clientReport(state.AllocClientStatusFailed), want: scA2},
		{name: "client reports lost", mt: AllocClientUpdateRequestType, req: clientReport(state.AllocClientStatusLost), want: scA2},
		{name: "client reports running", mt: AllocClientUpdateRequestType, req: clientReport(state.AllocClientStatusRunning), want: scAll},
		{name: "plan stop marks lost", mt: PlanApplyRequestType, want: scA2,
			req: func() any {
				return &PlanApplyRequest{Stops: []*state.Allocation{{ID: "a1", DesiredStatus: state.AllocDesiredStatusStop,
					ClientStatus: state.AllocClientStatusLost, ClientDescription: "node is down"}}}
			}},
		{name: "alloc update marks lost", mt: AllocUpdateRequestType, want: scA2,
			req: func() any {
				a := stAlloc("a1", stJob("web"), "n1")
				a.Job, a.DesiredStatus, a.ClientStatus = nil, state.AllocDesiredStatusStop, state.AllocClientStatusLost
				return &AllocUpdateRequest{Allocs: []*state.Allocation{a}}
			}},

		// A stop alone keeps them: the tasks may still be shutting down.
		{name: "plan desired stop", mt: PlanApplyRequestType, want: scAll,
			req: func() any {
				return &PlanApplyRequest{Stops: []*state.Allocation{{ID: "a1", DesiredStatus: state.AllocDesiredStatusStop}}}
			}},
		{name: "alloc update desired stop", mt: AllocUpdateRequestType, want: scAll,
			req: func() any {
				a := stAlloc("a1", stJob("web"), "n1")
				a.Job, a.DesiredStatus = nil, state.AllocDesiredStatusStop
				return &AllocUpdateRequest{Allocs: []*state.Allocation{a}}
			}},

		// Deleting an allocation deletes its registrations.
		{name: "eval delete", mt: EvalDeleteRequestType, want: scA2,
			req: func() any { return &EvalDeleteRequest{Allocs: []string{"a1", "missing"}} }},
		{name: "alloc garbage collected", mt: GarbageCollectRequestType, want: scA2,
			prep: func(t *testing.T, s *Store) { scDesiredStop(t, s, 30) },
			req:  func() any { return &GarbageCollectRequest{Allocs: []string{"a1"}} }},
		{name: "live alloc not collected", mt: GarbageCollectRequestType, want: scAll,
			req: func() any { return &GarbageCollectRequest{Allocs: []string{"a1"}} }},
		{name: "job garbage collected with its allocs", mt: GarbageCollectRequestType, want: scA2,
			prep: func(t *testing.T, s *Store) {
				stApply(t, s, 30, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web"})
				scDesiredStop(t, s, 31)
				stApply(t, s, 32, PlanApplyRequestType, &PlanApplyRequest{Stops: []*state.Allocation{{ID: "a2", DesiredStatus: state.AllocDesiredStatusStop}}})
				if j := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web")); j.Status != state.JobStatusDead || j.JobModifyIndex != 30 {
					t.Fatalf("fixture: job %s at %d, want dead at 30", j.Status, j.JobModifyIndex)
				}
			},
			req: func() any {
				return &GarbageCollectRequest{Jobs: []GarbageCollectJob{{Namespace: state.DefaultNamespace, ID: "web", JobModifyIndex: 30}},
					Allocs: []string{"a1"}}
			}},
		// A purge deletes no allocation: they may still run, and keep
		// their registrations until they end or are collected.
		{name: "job purge", mt: JobDeregisterRequestType, want: scAll,
			req: func() any { return &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web", Purge: true} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scStore(t)
			if tc.prep != nil {
				tc.prep(t, s)
				if got := scIDs(t, s); !reflect.DeepEqual(got, scAll) {
					t.Fatalf("after prep: registrations %v, want %v", got, scAll)
				}
			}
			before := s.Index(TableServiceRegistrations)
			ws := memdb.NewWatchSet()
			stMust[[]*state.ServiceRegistration](t)(s.ServicesByName(ws, state.DefaultNamespace, "http"))

			stApply(t, s, 100, tc.mt, tc.req())

			if got := scIDs(t, s); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("registrations = %v, want %v", got, tc.want)
			}
			deleted := len(tc.want) < len(scAll)
			wantIndex := before
			if deleted {
				wantIndex = 100
			}
			if got := s.Index(TableServiceRegistrations); got != wantIndex {
				t.Errorf("services table index = %d, want %d", got, wantIndex)
			}
			if fired := stFired(ws); fired != deleted {
				t.Errorf("service readers woken = %v, want %v", fired, deleted)
			}
			if byNode := stMust[[]*state.ServiceRegistration](t)(s.ServicesByNode(nil, "n2")); len(byNode) != 1 {
				t.Errorf("n2 has %d registrations, want 1", len(byNode))
			}
		})
	}
}

func TestRejectedCommandKeepsServices(t *testing.T) {
	tests := []struct {
		name    string
		mt      MessageType
		req     any
		wantErr error
		// field is the field a validation error must name.
		field string
	}{
		{"node down with a bad eval", NodeUpdateStatusRequestType,
			&NodeUpdateStatusRequest{NodeID: "n1", Status: state.NodeStatusDown, Evals: []*state.Evaluation{nil}}, state.ErrInvalid, "Evals[0].ID"},
		{"node upsert down with a bad eval", NodeUpsertRequestType,
			&NodeUpsertRequest{Node: func() *state.Node { n := stNode("n1"); n.Status = state.NodeStatusDown; return n }(), Evals: []*state.Evaluation{nil}},
			state.ErrInvalid, "Evals[0].ID"},
		{"deregister with an unknown node", NodeDeregisterRequestType,
			&NodeDeregisterRequest{NodeIDs: []string{"n1", "nope"}}, state.ErrNotFound, ""},
		{"client update with a missing ID", AllocClientUpdateRequestType,
			&AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: "a1", ClientStatus: state.AllocClientStatusComplete}, {}}}, state.ErrInvalid, "Allocs[1].ID"},
		{"plan with a bad stop", PlanApplyRequestType,
			&PlanApplyRequest{Stops: []*state.Allocation{{ID: "a1", DesiredStatus: state.AllocDesiredStatusStop, ClientStatus: state.AllocClientStatusLost}, nil}},
			state.ErrInvalid, "Stops[1].ID"},
		{"alloc update with an alloc of no job", AllocUpdateRequestType,
			&AllocUpdateRequest{Allocs: []*state.Allocation{
				func() *state.Allocation {
					a := stAlloc("a1", stJob("web"), "n1")
					a.ClientStatus = state.AllocClientStatusLost
					return a
				}(),
				stAlloc("a3", stJob("ghost"), "n1"),
			}}, state.ErrInvalid, "Allocs[1].Job"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scStore(t)
			before, beforeIndex := stDump(t, s), s.Index(TableServiceRegistrations)
			resp := stApplyErr(t, s, 100, tc.mt, tc.req)
			err, ok := resp.(error)
			if !ok {
				t.Fatalf("Apply returned %#v, want an error", resp)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %q does not match %v", err, tc.wantErr)
			}
			if tc.field != "" {
				var v *state.ValidationError
				if !errors.As(err, &v) || len(v.Errors) != 1 || v.Errors[0].Field != tc.field {
					t.Errorf("error %q does not name field %s", err, tc.field)
				}
			}
			if got := scIDs(t, s); !reflect.DeepEqual(got, scAll) {
				t.Errorf("registrations = %v after a rejected command, want %v", got, scAll)
			}
			if got := s.Index(TableServiceRegistrations); got != beforeIndex {
				t.Errorf("services table index = %d after a rejected command, want %d", got, beforeIndex)
			}
			stCompareDumps(t, before, stDump(t, s))
		})
	}
}
