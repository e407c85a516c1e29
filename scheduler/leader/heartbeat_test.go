package leader

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// rtPlaceOn commits a running allocation of job on node.
func rtPlaceOn(t *testing.T, r *memRaft, job *state.Job, node *state.Node, id string) {
	t.Helper()
	stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
	a := rtAlloc(id, node.ID, 100, 100, 100)
	a.JobID, a.Namespace = job.ID, job.Namespace
	a.ClientStatus = state.AllocClientStatusRunning
	r.must(t, store.PlanApplyRequestType, &store.PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{a}, Now: time.Now().UnixNano()})
}

func rtNodeStatus(t *testing.T, r *memRaft, id string) string {
	t.Helper()
	n, err := r.store.NodeByID(nil, id)
	if err != nil || n == nil {
		t.Fatalf("node %s: %v", id, err)
	}
	return n.Status
}

func TestHeartbeatExpiryMarksNodeDownWithEvals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		busy, idle := scheduler.MockNode("busy"), scheduler.MockNode("idle")
		r.registerNode(t, busy)
		r.registerNode(t, idle)
		job := scheduler.MockJob("web")
		r.registerJob(t, job)
		rtPlaceOn(t, r, job, busy, "a1")

		ids := &schedtest.IDs{}
		h := NewHeartbeater(HeartbeatConfig{MinTTL: 10 * time.Second, Grace: 10 * time.Second, FailoverTTL: time.Minute},
			r.store, r, rtLog(), nil, ids.Next)
		if _, err := h.Heartbeat(busy.ID); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("heartbeat before leadership = %v, want ErrNotLeader", err)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer h.Stop()
		if h.Tracked() != 2 {
			t.Fatalf("tracked %d nodes at leadership start, want 2", h.Tracked())
		}
		if _, err := h.Heartbeat("unknown"); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("heartbeat of an unknown node = %v, want ErrNotFound", err)
		}

		// A failover gives every node FailoverTTL: nobody is down before.
		time.Sleep(55 * time.Second)
		synctest.Wait()
		if rtNodeStatus(t, r, busy.ID) != state.NodeStatusReady {
			t.Fatal("node marked down before its failover TTL")
		}
		ttl, err := h.Heartbeat(idle.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ttl < 10*time.Second || ttl >= 20*time.Second {
			t.Fatalf("ttl = %s, want in [10s, 20s)", ttl)
		}
		time.Sleep(6 * time.Second) // busy's failover TTL passes
		synctest.Wait()
		if got := rtNodeStatus(t, r, busy.ID); got != state.NodeStatusDown {
			t.Fatalf("busy is %s after missing its TTL, want down", got)
		}
		if got := rtNodeStatus(t, r, idle.ID); got != state.NodeStatusReady {
			t.Fatalf("idle is %s although it heartbeat, want ready", got)
		}
		evals, _ := r.store.EvalsByJob(nil, job.Namespace, job.ID)
		var nodeEvals []*state.Evaluation
		for _, e := range evals {
			if e.TriggeredBy == state.EvalTriggerNodeUpdate {
				nodeEvals = append(nodeEvals, e)
			}
		}
		if len(nodeEvals) != 1 || nodeEvals[0].NodeID != busy.ID || nodeEvals[0].Status != state.EvalStatusPending {
			t.Fatalf("node-update evals = %+v, want one pending eval about busy", nodeEvals)
		}

		// idle's TTL + grace passes without a heartbeat.
		time.Sleep(ttl + 10*time.Second)
		synctest.Wait()
		if got := rtNodeStatus(t, r, idle.ID); got != state.NodeStatusDown {
			t.Fatalf("idle is %s after missing its TTL, want down", got)
		}
		if h.Tracked() != 0 {
			t.Fatalf("%d timers left for down nodes", h.Tracked())
		}

		// A node registered while leading gets a timer without a heartbeat.
		r.registerNode(t, scheduler.MockNode("late"))
		synctest.Wait()
		if h.Tracked() != 1 {
			t.Fatalf("tracked %d after a node registered, want 1", h.Tracked())
		}
	})
}

func TestHeartbeatTTLScalesWithNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		h := NewHeartbeater(HeartbeatConfig{MinTTL: 10 * time.Second, MaxHeartbeatsPerSecond: 10}, r.store, r, rtLog(), nil, nil)
		var last *state.Node
		for i := range 300 {
			last = scheduler.MockNode(fmt.Sprintf("n%d", i))
			r.registerNode(t, last)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer h.Stop()
		ttl, err := h.Heartbeat(last.ID)
		if err != nil {
			t.Fatal(err)
		}
		// 300 nodes at 10 heartbeats per second: at least 30 s.
		if ttl < 30*time.Second || ttl >= 60*time.Second {
			t.Fatalf("ttl = %s with 300 nodes at 10/s, want in [30s, 60s)", ttl)
		}
	})
}
