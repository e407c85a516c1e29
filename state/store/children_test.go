package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// stPeriodic is a batch job launched every minute.
func stPeriodic(id string) *state.Job {
	j := stJob(id)
	j.Type = state.JobTypeBatch
	j.Periodic = &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "* * * * *"}
	return j
}

// stParameterized is a batch job dispatched with one required meta key.
func stParameterized(id string) *state.Job {
	j := stJob(id)
	j.Type = state.JobTypeBatch
	j.ParameterizedJob = &state.ParameterizedJobConfig{Payload: state.DispatchPayloadOptional, MetaRequired: []string{"k"}}
	return j
}

func stLaunch(parent *state.Job, at time.Time, force bool) *PeriodicLaunchRequest {
	c := parent.NewChild(state.PeriodicChildID(parent.ID, at))
	return &PeriodicLaunchRequest{Child: c, Eval: stEval("ev-"+c.ID, c), Launch: at.UnixNano(), Force: force, Now: at.UnixNano()}
}

// stFillChildTables writes a periodic job and one launch (two indexes).
func stFillChildTables(t *testing.T, s *Store, index uint64) {
	t.Helper()
	p := stPeriodic("cron")
	stRegister(t, s, index, p, nil)
	stApply(t, s, index+1, PeriodicLaunchRequestType, stLaunch(p, time.Unix(1700000040, 0), false))
}

func TestPeriodicLaunchOncePerLaunchTime(t *testing.T) {
	s := stStore(t, Config{})
	p := stPeriodic("cron")
	stRegister(t, s, 10, p, nil)
	at := time.Unix(1700000040, 0)
	stApply(t, s, 11, PeriodicLaunchRequestType, stLaunch(p, at, false))
	// The same launch again (a new leader retrying it) and an earlier one
	// are refused, and change nothing.
	for i, again := range []time.Time{at, at.Add(-time.Minute)} {
		req := stLaunch(p, again, false)
		req.Child.ID += "-retry" // even under another ID
		if err, _ := stApplyErr(t, s, uint64(12+i), PeriodicLaunchRequestType, req).(error); !errors.Is(err, state.ErrConflict) {
			t.Fatalf("launch for %v again: %v, want ErrConflict", again, err)
		}
	}
	children := stMust[[]*state.Job](t)(s.Children(nil, state.DefaultNamespace, "cron"))
	if len(children) != 1 || children[0].ID != "cron/periodic-1700000040" || children[0].ParentID != "cron" || children[0].Periodic != nil {
		t.Fatalf("children = %+v", children)
	}
	last := stMust[*state.PeriodicLaunch](t)(s.PeriodicLaunchByID(nil, state.DefaultNamespace, "cron"))
	if last == nil || last.Launch != at.UnixNano() {
		t.Fatalf("last launch = %+v", last)
	}
	// Force launches now whatever the record; the record keeps the latest.
	stApply(t, s, 20, PeriodicLaunchRequestType, stLaunch(p, at.Add(-30*time.Second), true))
	if last := stMust[*state.PeriodicLaunch](t)(s.PeriodicLaunchByID(nil, state.DefaultNamespace, "cron")); last.Launch != at.UnixNano() {
		t.Errorf("a forced earlier launch moved the record back to %d", last.Launch)
	}
	sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "cron"))
	if c := sum.Children; c == nil || c.Pending+c.Running+c.Dead != 2 {
		t.Errorf("children summary = %+v, want 2 children", sum.Children)
	}
}

func TestPeriodicLaunchRefusesNonPeriodicOrStoppedParents(t *testing.T) {
	s := stStore(t, Config{})
	plain := stJob("plain")
	stRegister(t, s, 10, plain, stEval("e-plain", plain))
	if err, _ := stApplyErr(t, s, 11, PeriodicLaunchRequestType, stLaunch(plain, time.Unix(60, 0), true)).(error); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("launch of a non-periodic job: %v, want ErrInvalid", err)
	}
	p := stPeriodic("cron")
	stRegister(t, s, 12, p, nil)
	stApply(t, s, 13, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "cron", Now: 13})
	if err, _ := stApplyErr(t, s, 14, PeriodicLaunchRequestType, stLaunch(p, time.Unix(120, 0), false)).(error); !errors.Is(err, state.ErrConflict) {
		t.Errorf("launch of a stopped job: %v, want ErrConflict", err)
	}
}

func TestDispatchIdempotencyToken(t *testing.T) {
	s := stStore(t, Config{})
	p := stParameterized("tmpl")
	stRegister(t, s, 10, p, nil)
	dispatch := func(index uint64, id, token string) *JobDispatchResponse {
		req := &state.DispatchRequest{Meta: map[string]string{"k": "v"}, Payload: []byte("hi")}
		c := p.Dispatch(id, req, token)
		return stApply(t, s, index, JobDispatchRequestType, &JobDispatchRequest{Child: c, Eval: stEval("ev-"+id, c), Now: int64(index)}).(*JobDispatchResponse)
	}
	first := dispatch(11, "tmpl/dispatch-1-aaaaaaaa", "tok")
	again := dispatch(12, "tmpl/dispatch-2-bbbbbbbb", "tok")
	other := dispatch(13, "tmpl/dispatch-3-cccccccc", "")
	if first.Existing || first.EvalID == "" || first.JobCreateIndex != 11 {
		t.Errorf("first dispatch = %+v", first)
	}
	if !again.Existing || again.DispatchedJobID != first.DispatchedJobID || again.EvalID != "" {
		t.Errorf("same token = %+v, want the first child %s", again, first.DispatchedJobID)
	}
	if other.Existing || other.DispatchedJobID == first.DispatchedJobID {
		t.Errorf("no token = %+v, want a new child", other)
	}
	children := stMust[[]*state.Job](t)(s.Children(nil, state.DefaultNamespace, "tmpl"))
	if len(children) != 2 {
		t.Fatalf("%d children, want 2", len(children))
	}
	c := children[0]
	if !c.Dispatched || string(c.Payload) != "hi" || c.Meta["k"] != "v" || c.IsParameterized() {
		t.Errorf("child = %+v", c)
	}
}

func TestParentStopAndPurgeTakeTheChildren(t *testing.T) {
	s := stStore(t, Config{})
	p := stPeriodic("cron")
	stRegister(t, s, 10, p, nil)
	l1, l2 := stLaunch(p, time.Unix(60, 0), false), stLaunch(p, time.Unix(120, 0), false)
	stApply(t, s, 11, PeriodicLaunchRequestType, l1)
	stApply(t, s, 12, PeriodicLaunchRequestType, l2)
	childEval := stEval("stop-"+l1.Child.ID, l1.Child)
	stApply(t, s, 13, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "cron",
		ChildEvals: []*state.Evaluation{childEval}, Now: 13})
	for _, c := range stMust[[]*state.Job](t)(s.Children(nil, state.DefaultNamespace, "cron")) {
		if !c.Stop {
			t.Errorf("child %s not stopped with its parent", c.ID)
		}
	}
	if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, childEval.ID)); e == nil || e.JobID != l1.Child.ID {
		t.Errorf("child stop evaluation = %+v", e)
	}
	stApply(t, s, 14, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "cron", Purge: true, Now: 14})
	if c := stMust[[]*state.Job](t)(s.Children(nil, state.DefaultNamespace, "cron")); len(c) != 0 {
		t.Errorf("%d children left after the parent's purge", len(c))
	}
	if l := stMust[*state.PeriodicLaunch](t)(s.PeriodicLaunchByID(nil, state.DefaultNamespace, "cron")); l != nil {
		t.Errorf("launch record left after the purge: %+v", l)
	}
}

// TestChildrenSummaryInvariant: after any sequence of dispatches, child
// evaluations finishing, child stops and purges, and allocations placed
// and reported, the parent's children counts equal its children in state
// by status.
func TestChildrenSummaryInvariant(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		s := stStore(t, Config{})
		stApply(t, s, 5, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
		p := stParameterized("tmpl")
		p.ParameterizedJob.MetaRequired = nil
		stRegister(t, s, 10, p, nil)
		index := uint64(10)
		var ids []string
		for step := 0; step < 60; step++ {
			index++
			children := stMust[[]*state.Job](t)(s.Children(nil, state.DefaultNamespace, "tmpl"))
			var op string
			switch n := rng.IntN(6); {
			case n == 0 || len(children) == 0:
				op = "dispatch"
				c := p.Dispatch(fmt.Sprintf("tmpl/dispatch-%d-%08x", index, rng.Uint32()), &state.DispatchRequest{}, "")
				stApply(t, s, index, JobDispatchRequestType, &JobDispatchRequest{Child: c, Eval: stEval("ev-"+c.ID, c), Now: int64(index)})
				ids = append(ids, c.ID)
			default:
				c := children[rng.IntN(len(children))]
				switch n {
				case 1:
					op = "eval complete"
					e := stEval("ev-"+c.ID, c)
					e.Status = state.EvalStatusComplete
					stApply(t, s, index, EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{e}})
				case 2:
					op = "place"
					stApply(t, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc(fmt.Sprintf("a-%d", index), c, "n1")}, Now: int64(index)})
				case 3:
					op = "report"
					allocs := stMust[[]*state.Allocation](t)(s.AllocsByJob(nil, c.Namespace, c.ID, true))
					if len(allocs) == 0 {
						continue
					}
					status := []string{state.AllocClientStatusRunning, state.AllocClientStatusComplete, state.AllocClientStatusFailed}[rng.IntN(3)]
					stApply(t, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: allocs[0].ID, ClientStatus: status}}, Now: int64(index)})
				case 4:
					op = "stop"
					stApply(t, s, index, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: c.Namespace, JobID: c.ID, Now: int64(index)})
				case 5:
					op = "purge"
					stApply(t, s, index, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: c.Namespace, JobID: c.ID, Purge: true, Now: int64(index)})
				}
			}
			var want state.JobChildrenSummary
			for _, c := range stMust[[]*state.Job](t)(s.Children(nil, state.DefaultNamespace, "tmpl")) {
				countChild(&want, c.Status, 1)
			}
			sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "tmpl"))
			if sum.Children == nil || *sum.Children != want {
				t.Fatalf("seed %d step %d (%s): children summary %+v, children in state %+v", seed, step, op, sum.Children, want)
			}
		}
	}
}
