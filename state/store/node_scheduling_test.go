package store

import (
	"errors"
	"testing"

	"github.com/schedhq/sched/state"
)

func TestNodeUpsertWithEvals(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("logs")
	job.Type = state.JobTypeSystem
	stRegister(t, s, 10, job, nil)

	n := stNode("n1")
	n.NodePool = "gpu"
	e := stEval("e1", job)
	e.NodeID = "n1"
	other := stEval("e2", job) // not about this node
	stApply(t, s, 11, NodeUpsertRequestType, &NodeUpsertRequest{Node: n, Evals: []*state.Evaluation{e, other}, UpdatedAt: 100})

	got := stMust[*state.Node](t)(s.NodeByID(nil, "n1"))
	if got.CreateIndex != 11 || got.SchedulingEligibility != state.NodeSchedulingEligible || got.StatusUpdatedAt != 100 {
		t.Errorf("node %+v", got)
	}
	if p := stMust[*state.NodePool](t)(s.NodePoolByName(nil, "gpu")); p == nil || p.CreateIndex != 11 {
		t.Errorf("pool of a new node: %+v", p)
	}
	if ev := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1")); ev == nil || ev.NodeModifyIndex != 11 || ev.CreateIndex != 11 {
		t.Errorf("node eval %+v", ev)
	}
	if ev := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e2")); ev == nil || ev.NodeModifyIndex != 0 {
		t.Errorf("other eval %+v", ev)
	}

	// Unchanged status keeps StatusUpdatedAt; the secret is checked.
	again := stNode("n1")
	again.NodePool = "gpu"
	again.SecretID = ""
	stApply(t, s, 12, NodeUpsertRequestType, &NodeUpsertRequest{Node: again, UpdatedAt: 200})
	got = stMust[*state.Node](t)(s.NodeByID(nil, "n1"))
	if got.StatusUpdatedAt != 100 || !got.SecretMatches("secret-n1") || got.CreateIndex != 11 || got.ModifyIndex != 12 {
		t.Errorf("re-registered node %+v", got)
	}
	thief := stNode("n1")
	thief.SecretID = "other"
	before := stDump(t, s)
	if err, _ := stApplyErr(t, s, 13, NodeUpsertRequestType, &NodeUpsertRequest{Node: thief}).(error); !errors.Is(err, state.ErrInvalid) {
		t.Fatalf("secret mismatch: %v", err)
	}
	stCompareDumps(t, before, stDump(t, s))
}

func TestNodeEligibilityAndDrain(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 10, NodeUpsertRequestType, &NodeUpsertRequest{Node: stNode("n1")})

	stApply(t, s, 11, NodeUpdateEligibilityRequestType, &NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: state.NodeSchedulingIneligible})
	if n := stMust[*state.Node](t)(s.NodeByID(nil, "n1")); n.SchedulingEligibility != state.NodeSchedulingIneligible || n.ModifyIndex != 11 {
		t.Errorf("ineligible: %+v", n)
	}
	ds := &state.DrainStrategy{Deadline: 60, ForceDeadline: 1060, StartedAt: 1000}
	stApply(t, s, 12, NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: ds})
	// A new strategy for a draining node keeps when the drain started.
	stApply(t, s, 13, NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: &state.DrainStrategy{Deadline: -1, ForceDeadline: 2000, StartedAt: 2000}})
	n := stMust[*state.Node](t)(s.NodeByID(nil, "n1"))
	if !n.Drain || n.DrainStrategy.StartedAt != 1000 || n.DrainStrategy.ForceDeadline != 2000 || n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Errorf("draining: %+v %+v", n, n.DrainStrategy)
	}

	cases := []struct {
		name string
		t    MessageType
		req  any
		is   error
	}{
		{"eligible while draining", NodeUpdateEligibilityRequestType, &NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: state.NodeSchedulingEligible}, state.ErrInvalid},
		{"bad eligibility", NodeUpdateEligibilityRequestType, &NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: "yes"}, state.ErrInvalid},
		{"unknown node", NodeUpdateEligibilityRequestType, &NodeUpdateEligibilityRequest{NodeID: "n9", Eligibility: state.NodeSchedulingIneligible}, state.ErrNotFound},
		{"drain unknown node", NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: "n9"}, state.ErrNotFound},
		{"drain no node", NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{}, state.ErrInvalid},
	}
	for _, tc := range cases {
		before := stDump(t, s)
		if err, _ := stApplyErr(t, s, 14, tc.t, tc.req).(error); !errors.Is(err, tc.is) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.is)
		}
		stCompareDumps(t, before, stDump(t, s))
	}

	// Ending the drain leaves the node ineligible unless asked.
	stApply(t, s, 15, NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: "n1"})
	if n := stMust[*state.Node](t)(s.NodeByID(nil, "n1")); n.Drain || n.DrainStrategy != nil || n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Errorf("drain done: %+v", n)
	}
	stApply(t, s, 16, NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: "n1", MarkEligible: true})
	if n := stMust[*state.Node](t)(s.NodeByID(nil, "n1")); n.SchedulingEligibility != state.NodeSchedulingEligible {
		t.Errorf("mark eligible: %+v", n)
	}
}

func TestAllocDesiredTransition(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a1", job, "n1"), stAlloc("a2", job, "n1")}})
	yes, no := true, false
	stApply(t, s, 12, AllocUpdateDesiredTransitionRequestType, &AllocUpdateDesiredTransitionRequest{
		Allocs: map[string]*state.DesiredTransition{"a1": {Migrate: &yes}, "gone": {Migrate: &yes}},
		Evals:  []*state.Evaluation{stEval("e1", job)},
	})
	stApply(t, s, 13, AllocUpdateDesiredTransitionRequestType, &AllocUpdateDesiredTransitionRequest{
		Allocs: map[string]*state.DesiredTransition{"a1": {NoShutdownDelay: &no}},
	})
	a1 := stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	if a1.DesiredTransition.Migrate == nil || !*a1.DesiredTransition.Migrate || a1.DesiredTransition.NoShutdownDelay == nil ||
		*a1.DesiredTransition.NoShutdownDelay || a1.ModifyIndex != 13 {
		t.Errorf("a1 transition %+v at %d", a1.DesiredTransition, a1.ModifyIndex)
	}
	if a2 := stMust[*state.Allocation](t)(s.AllocByID(nil, "a2")); a2.DesiredTransition.Migrate != nil || a2.ModifyIndex != 11 {
		t.Errorf("a2 changed: %+v", a2)
	}
	if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1")); e == nil || e.CreateIndex != 12 {
		t.Errorf("eval %+v", e)
	}
}

func TestJobEvaluateCommand(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	reg := stRegister(t, s, 10, job, nil)
	failed := stAlloc("a1", job, "n1")
	failed.ClientStatus = state.AllocClientStatusFailed
	replaced := stAlloc("a2", job, "n1")
	replaced.ClientStatus, replaced.NextAllocation = state.AllocClientStatusFailed, "a9"
	running := stAlloc("a3", job, "n1")
	running.ClientStatus = state.AllocClientStatusRunning
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{failed, replaced, running}})

	resp := stApply(t, s, 12, JobEvaluateRequestType, &JobEvaluateRequest{
		Namespace: state.DefaultNamespace, JobID: "web", Eval: stEval("e1", job), ForceReschedule: true, Now: 500,
	}).(*JobEvaluateResponse)
	if resp.EvalID != "e1" || resp.EvalCreateIndex != 12 || resp.JobModifyIndex != reg.JobModifyIndex ||
		len(resp.ForcedAllocs) != 1 || resp.ForcedAllocs[0] != "a1" {
		t.Errorf("response %+v", resp)
	}
	e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1"))
	if !e.ForceReschedule || e.JobModifyIndex != reg.JobModifyIndex || e.CreateTime != 500 {
		t.Errorf("eval %+v", e)
	}
	for id, want := range map[string]bool{"a1": true, "a2": false, "a3": false} {
		a := stMust[*state.Allocation](t)(s.AllocByID(nil, id))
		if got := a.DesiredTransition.ForceReschedule != nil && *a.DesiredTransition.ForceReschedule; got != want {
			t.Errorf("%s ForceReschedule = %v, want %v", id, got, want)
		}
	}

	periodic := stJob("nightly")
	periodic.Type = state.JobTypeBatch
	periodic.Periodic = &state.PeriodicConfig{Enabled: true, Spec: "@daily"}
	stRegister(t, s, 13, periodic, nil)
	for _, tc := range []struct {
		req *JobEvaluateRequest
		is  error
	}{
		{&JobEvaluateRequest{Namespace: state.DefaultNamespace, JobID: "nope", Eval: stEval("e2", job)}, state.ErrNotFound},
		{&JobEvaluateRequest{Namespace: state.DefaultNamespace, JobID: "nightly", Eval: stEval("e2", periodic)}, state.ErrInvalid},
		{&JobEvaluateRequest{Namespace: state.DefaultNamespace, JobID: "web"}, state.ErrInvalid},
	} {
		before := stDump(t, s)
		if err, _ := stApplyErr(t, s, 14, JobEvaluateRequestType, tc.req).(error); !errors.Is(err, tc.is) {
			t.Errorf("%+v: %v, want %v", tc.req, err, tc.is)
		}
		stCompareDumps(t, before, stDump(t, s))
	}
}
