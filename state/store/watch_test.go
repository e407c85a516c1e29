package store

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// TestWatchSets checks that each read's watch set fires on a write that
// changes its result and stays quiet on one that does not.
func TestWatchSets(t *testing.T) {
	web, api := stJob("web"), stJob("api")
	setup := func(t *testing.T) *Store {
		s := stStore(t, Config{})
		stApply(t, s, 2, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
		stApply(t, s, 3, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n2")})
		stRegister(t, s, 4, web, stEval("e-web", web))
		stRegister(t, s, 5, api, stEval("e-api", api))
		stApply(t, s, 6, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{
			stAlloc("a-web", web, "n1"), stAlloc("a-api", api, "n2"),
		}})
		return s
	}
	changedWeb := func() *state.Job { j := stJob("web"); j.Priority = 90; return j }
	changedAPI := func() *state.Job { j := stJob("api"); j.Priority = 90; return j }
	type write func() (MessageType, any)
	register := func(j func() *state.Job) write {
		return func() (MessageType, any) { return JobRegisterRequestType, &JobRegisterRequest{Job: j()} }
	}
	nodeStatus := func(id string) write {
		return func() (MessageType, any) {
			return NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: id, Status: state.NodeStatusDown}
		}
	}
	type read func(s *Store, ws memdb.WatchSet) error
	jobByID := func(id string) read {
		return func(s *Store, ws memdb.WatchSet) error {
			_, err := s.JobByID(ws, state.DefaultNamespace, id)
			return err
		}
	}
	jobs := read(func(s *Store, ws memdb.WatchSet) error { _, err := s.Jobs(ws, state.DefaultNamespace, ""); return err })
	versions := read(func(s *Store, ws memdb.WatchSet) error {
		_, err := s.JobVersions(ws, state.DefaultNamespace, "web")
		return err
	})
	allocsByJob := read(func(s *Store, ws memdb.WatchSet) error {
		_, err := s.AllocsByJob(ws, state.DefaultNamespace, "web", false)
		return err
	})
	allocsByNode := read(func(s *Store, ws memdb.WatchSet) error { _, err := s.AllocsByNode(ws, "n1"); return err })
	summary := read(func(s *Store, ws memdb.WatchSet) error {
		_, err := s.JobSummaryByID(ws, state.DefaultNamespace, "web")
		return err
	})
	evalByID := read(func(s *Store, ws memdb.WatchSet) error { _, err := s.EvalByID(ws, "e-web"); return err })
	nodeByID := read(func(s *Store, ws memdb.WatchSet) error { _, err := s.NodeByID(ws, "n1"); return err })
	namespaces := read(func(s *Store, ws memdb.WatchSet) error { _, err := s.Namespaces(ws); return err })

	clientUpdate := func(id string) write {
		return func() (MessageType, any) {
			return AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: id, ClientStatus: state.AllocClientStatusRunning}}}
		}
	}
	place := func(id, node string) write {
		return func() (MessageType, any) {
			return AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc(id, web, node)}}
		}
	}
	collect := func(id string) write {
		return func() (MessageType, any) { return EvalDeleteRequestType, &EvalDeleteRequest{Allocs: []string{id}} }
	}
	allocsOn := func(node string) read {
		return func(s *Store, ws memdb.WatchSet) error { _, err := s.AllocsByNode(ws, node); return err }
	}
	completeWebEval := func() (MessageType, any) {
		e := stEval("e-web", web)
		e.Status = state.EvalStatusComplete
		return EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{e}}
	}
	otherEval := func() (MessageType, any) {
		return EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{stEval("e-other", api)}}
	}
	newNamespace := func() (MessageType, any) {
		return NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "x"}}}
	}
	newJob := register(func() *state.Job { return stJob("new") })

	tests := []struct {
		name     string
		read     read
		write    write
		wantFire bool
	}{
		{"job by id, job changed", jobByID("web"), register(changedWeb), true},
		{"job by id, other job changed", jobByID("web"), register(changedAPI), false},
		{"missing job, job created", jobByID("new"), newJob, true},
		{"job list, job created", jobs, newJob, true},
		{"job list, node changed", jobs, nodeStatus("n1"), false},
		{"versions, job changed", versions, register(changedWeb), true},
		{"versions, other job changed", versions, register(changedAPI), false},
		{"allocs by job, its alloc updated", allocsByJob, clientUpdate("a-web"), true},
		{"allocs by job, other job's alloc updated", allocsByJob, clientUpdate("a-api"), false},
		{"allocs by node, alloc on it updated", allocsByNode, clientUpdate("a-web"), true},
		{"allocs by node, alloc elsewhere updated", allocsByNode, clientUpdate("a-api"), false},
		{"allocs by node, alloc placed on it", allocsByNode, place("a-new", "n1"), true},
		{"allocs by node, alloc placed elsewhere", allocsByNode, place("a-new", "n2"), false},
		{"allocs by node, its alloc collected", allocsByNode, collect("a-web"), true},
		{"allocs by empty node, alloc placed on it", allocsOn("n3"), place("a-new", "n3"), true},
		{"summary, its alloc updated", summary, clientUpdate("a-web"), true},
		{"summary, other alloc updated", summary, clientUpdate("a-api"), false},
		{"eval by id, eval updated", evalByID, completeWebEval, true},
		{"eval by id, other eval created", evalByID, otherEval, false},
		{"node by id, node updated", nodeByID, nodeStatus("n1"), true},
		{"node by id, other node updated", nodeByID, nodeStatus("n2"), false},
		{"namespaces, namespace created", namespaces, newNamespace, true},
		{"namespaces, job changed", namespaces, register(changedWeb), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t)
			ws := memdb.NewWatchSet()
			if err := tc.read(s, ws); err != nil {
				t.Fatal(err)
			}
			if len(ws) == 0 {
				t.Fatal("read added no watch channel")
			}
			if stFired(ws) {
				t.Fatal("watch fired before any write")
			}
			mt, req := tc.write()
			stApply(t, s, 100, mt, req)
			if got := stFired(ws); got != tc.wantFire {
				t.Errorf("fired = %v, want %v", got, tc.wantFire)
			}
		})
	}
}

func TestAbandonChClosesOnRestore(t *testing.T) {
	s := stStore(t, Config{})
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	ch := s.AbandonCh()
	ws := memdb.NewWatchSet()
	if _, err := s.JobByID(ws, state.DefaultNamespace, "web"); err != nil {
		t.Fatal(err)
	}
	ws.Add(ch)
	if stFired(ws) {
		t.Fatal("fired before restore")
	}
	if err := s.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("AbandonCh not closed by Restore")
	}
	if s.AbandonCh() == ch {
		t.Error("AbandonCh not replaced after Restore")
	}
}
