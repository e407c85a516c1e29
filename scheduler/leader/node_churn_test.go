package leader

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// TestNodeChurnTwoEvalsPerJob scripts sched-bench's churn scenario on the
// heartbeater and the store, in fake time: 40 nodes heartbeat at half
// their TTL, 20 jobs of 5 allocations run on distinct nodes, then half
// the nodes stop heartbeating at once. They are marked down over the TTL
// spread (here about two seconds, far longer than ChurnWindow), so a job
// loses its nodes at several moments; it gets at most two node-update
// evaluations: one within ChurnWindow of its first lost node, one held to
// the end of the churn period, which every later loss joins.
func TestNodeChurnTwoEvalsPerJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rtNewMemRaft(t)
		const nodes, jobs, perJob = 40, 20, 5
		const churnWindow = 200 * time.Millisecond
		var all []*state.Node
		for i := range nodes {
			n := scheduler.MockNode(fmt.Sprintf("n%02d", i))
			r.registerNode(t, n)
			all = append(all, n)
		}
		for j := range jobs {
			job := scheduler.MockJob(fmt.Sprintf("job%02d", j))
			r.registerJob(t, job)
			for k := range perJob {
				rtPlaceOn(t, r, job, all[(j*7+k*3)%nodes], fmt.Sprintf("a-%02d-%d", j, k))
			}
		}
		// When each node was marked down, in fake time.
		downAt := map[string]time.Time{}
		r.after = func(typ store.MessageType, _ uint64) {
			if typ != store.NodeUpdateStatusRequestType {
				return
			}
			for _, n := range all {
				if _, ok := downAt[n.ID]; !ok && rtNodeStatus(t, r, n.ID) == state.NodeStatusDown {
					downAt[n.ID] = time.Now()
				}
			}
		}
		ids := &schedtest.IDs{}
		h := NewHeartbeater(HeartbeatConfig{MinTTL: time.Second, MaxHeartbeatsPerSecond: 1e6, Grace: 100 * time.Millisecond,
			FailoverTTL: time.Second, ChurnWindow: churnWindow}, r.store, r, rtLog(), nil, ids.Next)
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer h.Stop()

		// Simulated clients: each heartbeats at half its TTL until its
		// context ends.
		ctx, stopAll := context.WithCancel(context.Background())
		goneCtx, stopGone := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i, n := range all {
			c := ctx
			if i < nodes/2 {
				c = goneCtx
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ttl, err := h.Heartbeat(n.ID)
					if err != nil {
						t.Errorf("heartbeat %s: %v", n.Name, err)
						return
					}
					select {
					case <-c.Done():
						return
					case <-time.After(ttl / 2):
					}
				}
			}()
		}
		defer func() { stopAll(); wg.Wait() }()
		time.Sleep(5 * time.Second) // a few TTLs: every node has a TTL of its own
		synctest.Wait()

		stopGone()
		stopped := time.Now()
		time.Sleep(5 * time.Second) // past the longest TTL and grace
		synctest.Wait()

		gone := map[string]bool{}
		for i, n := range all {
			want := state.NodeStatusReady
			if i < nodes/2 {
				want = state.NodeStatusDown
				gone[n.ID] = true
			}
			if got := rtNodeStatus(t, r, n.ID); got != want {
				t.Fatalf("%s is %s, want %s", n.Name, got, want)
			}
		}
		affected, spread := 0, 0
		for j := range jobs {
			id := fmt.Sprintf("job%02d", j)
			allocs, _ := r.store.AllocsByJob(nil, state.DefaultNamespace, id, false)
			var first, last time.Time
			lost := 0
			for _, a := range allocs {
				if at, ok := downAt[a.NodeID]; ok {
					lost++
					if first.IsZero() || at.Before(first) {
						first = at
					}
					if at.After(last) {
						last = at
					}
				}
			}
			if lost == 0 {
				continue
			}
			affected++
			if last.Sub(first) > 2*churnWindow {
				spread++ // its nodes went down over more than two windows
			}
			evals, _ := r.store.EvalsByJob(nil, state.DefaultNamespace, id)
			var churn []*state.Evaluation
			for _, e := range evals {
				if e.TriggeredBy == state.EvalTriggerNodeUpdate && e.CreateTime >= stopped.UnixNano() {
					churn = append(churn, e)
				}
			}
			if len(churn) == 0 || len(churn) > 2 {
				t.Errorf("%s lost %d nodes over %v and got %d node-update evaluations, want 1 or 2", id, lost, last.Sub(first), len(churn))
			}
		}
		if affected < jobs/2 || spread < 3 {
			for id, at := range downAt {
				t.Logf("%s down at +%v", id[:8], at.Sub(stopped))
			}
			t.Fatalf("%d jobs affected, %d of them losing nodes over more than two windows: the script does not churn", affected, spread)
		}
	})
}
