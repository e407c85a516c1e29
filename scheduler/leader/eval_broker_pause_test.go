package leader

import (
	"context"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// TestBrokerPauseHoldsDeliveries: a paused broker keeps its evaluation
// ready and hands it out only once resumed, to a Dequeue already waiting.
func TestBrokerPauseHoldsDeliveries(t *testing.T) {
	b := NewEvalBroker(BrokerConfig{}, nil, rtLog(), nil, nil)
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	b.SetPaused(true)
	b.Enqueue(&state.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Type: state.JobTypeService, Priority: 50, Status: state.EvalStatusPending})
	if e, _, err := b.Dequeue(context.Background(), []string{state.JobTypeService}, 20*time.Millisecond); err != nil || e != nil {
		t.Fatalf("paused broker delivered %v (err %v)", e, err)
	}
	st, _ := b.Stats()
	if st.TotalReady != 1 {
		t.Fatalf("paused broker ready = %d, want 1", st.TotalReady)
	}
	got := make(chan *state.Evaluation, 1)
	go func() {
		e, _, _ := b.Dequeue(context.Background(), []string{state.JobTypeService}, 10*time.Second)
		got <- e
	}()
	b.SetPaused(false)
	if e := <-got; e == nil || e.ID != "e1" {
		t.Fatalf("resumed broker delivered %v, want e1", e)
	}
}

// TestRuntimeFollowsPauseEvalBroker: the runtime pauses its broker when
// the scheduler configuration says so, a job registered meanwhile stays
// pending, and it is placed once the configuration is unset.
func TestRuntimeFollowsPauseEvalBroker(t *testing.T) {
	r := rtNewMemRaft(t)
	r.registerNode(t, scheduler.MockNode("n1"))
	rt := startRuntime(t, r)
	r.must(t, store.SchedulerConfigSetRequestType, &store.SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{PauseEvalBroker: true}})
	testutil.WaitFor(t, 15*time.Second, "broker paused", rt.Broker.Paused)

	web := scheduler.MockJob("web")
	web.TaskGroups[0].Count = 1
	evalID := r.registerJob(t, web)
	testutil.WaitFor(t, 15*time.Second, "eval ready in the broker", func() bool {
		st, _ := rt.Broker.Stats()
		return st.TotalReady == 1
	})
	if e, _ := r.store.EvalByID(nil, evalID); e.Status != state.EvalStatusPending || len(liveAllocs(r.store, "web")) != 0 {
		t.Fatalf("while paused: eval %s, %d allocations", e.Status, len(liveAllocs(r.store, "web")))
	}

	r.must(t, store.SchedulerConfigSetRequestType, &store.SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{}})
	rtWaitState(t, r.store, 10*time.Second, "web placed after resume", func() bool {
		e, _ := r.store.EvalByID(nil, evalID)
		return e.Status == state.EvalStatusComplete && len(liveAllocs(r.store, "web")) == 1
	})
	if rt.Broker.Paused() {
		t.Error("broker still paused")
	}
}
