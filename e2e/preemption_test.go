package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// sleepJob is a service job of count raw_exec sleeps asking cpu MHz each,
// at priority prio.
func sleepJob(id string, prio, count, cpu int) *state.Job {
	return &state.Job{
		ID: id, Type: state.JobTypeService, Priority: prio, Datacenters: []string{"*"},
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: count,
			Tasks: []*state.Task{{
				Name: "sleep", Driver: "raw_exec",
				Config:      map[string]any{"command": "/bin/sleep", "args": []any{"3600"}},
				KillTimeout: time.Second,
				Resources:   &state.Resources{CPU: cpu, MemoryMB: 16},
			}},
		}},
	}
}

// evalDone waits until the evaluation is complete and returns it.
func evalDone(t *testing.T, c *api.Client, id string) *state.Evaluation {
	t.Helper()
	var out *state.Evaluation
	testutil.WaitForErr(t, 60*time.Second, "evaluation "+id+" complete", func() error {
		e, _, err := c.Evaluations().Info(context.Background(), id, nil)
		if err != nil {
			return err
		}
		if e.Status != state.EvalStatusComplete {
			return fmt.Errorf("status %s", e.Status)
		}
		out = e
		return nil
	})
	return out
}

// TestPreemptionOnRealAgent fills the dev agent's node with four
// priority-20 allocations, then registers a priority-80 one of the same
// size: with service preemption off (the default) it is blocked on CPU and
// nothing is evicted; with it on, it runs, one victim is evicted naming it,
// and the victim's job is left blocked until room frees.
func TestPreemptionOnRealAgent(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	ctx := context.Background()

	nodes, _, err := c.Nodes().List(ctx, nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes %v, err %v", nodes, err)
	}
	node, _, err := c.Nodes().Info(ctx, nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	capa := node.NodeResources.CPU
	if node.ReservedResources != nil {
		capa -= node.ReservedResources.CPU
	}
	slot := capa / 4
	if slot < 10 {
		t.Skipf("node offers %d MHz: too little to split", capa)
	}
	if _, _, err := c.Jobs().Register(ctx, sleepJob("low", 20, 4, slot), nil, nil); err != nil {
		t.Fatal(err)
	}
	runningAllocs(t, c, "low", 4)

	// Preemption off for service jobs (the default): blocked on CPU.
	resp, _, err := c.Jobs().Register(ctx, sleepJob("high", 80, 1, slot), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := evalDone(t, c, resp.EvalID)
	if m := e.FailedTGAllocs["g"]; m == nil || m.DimensionExhausted["cpu"] == 0 || e.BlockedEval == "" {
		t.Fatalf("with preemption off: eval %+v, failed %+v; want blocked on cpu", e, e.FailedTGAllocs["g"])
	}
	assertEvicted(t, c, "low", 0)
	if _, _, err := c.Jobs().Deregister(ctx, "high", true, nil, nil); err != nil {
		t.Fatal(err)
	}

	cur, _, err := c.Operator().SchedulerGetConfiguration(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cur.SchedulerConfig
	cfg.PreemptionConfig.ServiceSchedulerEnabled = true
	if out, err := c.Operator().SchedulerCASConfiguration(ctx, cfg, nil); err != nil || !out.Updated {
		t.Fatalf("enable service preemption: %+v, %v", out, err)
	}

	if _, _, err := c.Jobs().Register(ctx, sleepJob("high", 80, 1, slot), nil, nil); err != nil {
		t.Fatal(err)
	}
	high := runningAllocs(t, c, "high", 1)[0]
	victims := assertEvicted(t, c, "low", 1)
	if victims[0].PreemptedByAllocation != high.ID || len(high.PreemptedAllocations) != 1 || high.PreemptedAllocations[0] != victims[0].ID {
		t.Fatalf("victim %s preempted by %q; high %s lists %v", victims[0].ID, victims[0].PreemptedByAllocation, high.ID, high.PreemptedAllocations)
	}
	// The victim's job was evaluated again and waits, blocked, for room.
	testutil.WaitForErr(t, 60*time.Second, "a blocked evaluation of low", func() error {
		evals, _, err := c.Jobs().Evaluations(ctx, "low", nil)
		if err != nil {
			return err
		}
		for _, e := range evals {
			if e.Status == state.EvalStatusBlocked {
				return nil
			}
		}
		return fmt.Errorf("%d evaluations, none blocked", len(evals))
	})
	runningAllocs(t, c, "low", 3)
}

// assertEvicted checks that want of the job's allocations were evicted
// and returns them in full.
func assertEvicted(t *testing.T, c *api.Client, job string, want int) []*state.Allocation {
	t.Helper()
	stubs, _, err := c.Jobs().Allocations(context.Background(), job, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var evicted []*state.AllocListStub
	for _, s := range stubs {
		if s.DesiredStatus == state.AllocDesiredStatusEvict {
			evicted = append(evicted, s)
		}
	}
	if len(evicted) != want {
		t.Fatalf("%d allocations of %s evicted, want %d", len(evicted), job, want)
	}
	return fullAllocs(t, c, evicted)
}
