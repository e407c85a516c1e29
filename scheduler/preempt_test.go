package scheduler_test

import (
	"slices"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// pjob is a service job of count allocations asking cpu MHz each, at
// priority prio, without ports.
func pjob(id string, prio, count, cpu int) *state.Job {
	j := MockJob(id)
	j.Priority = prio
	j.TaskGroups[0].Count = count
	j.TaskGroups[0].Networks = nil
	j.TaskGroups[0].Tasks[0].Resources.CPU = cpu
	j.Canonicalize()
	return j
}

// preemptHarness is one MockNode (3900 MHz to give) and a scheduler
// configuration enabling preemption for service jobs when enabled.
func preemptHarness(t *testing.T, enabled bool) (*schedtest.Harness, *state.Node) {
	h := schedtest.NewHarness(t)
	n := MockNode("n1")
	h.UpsertNodes(n)
	h.Apply(store.SchedulerConfigSetRequestType, &store.SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{
		PreemptionConfig: state.PreemptionConfig{SystemSchedulerEnabled: true, ServiceSchedulerEnabled: enabled, BatchSchedulerEnabled: enabled}}})
	return h, n
}

// place registers and schedules job, failing unless every allocation
// was placed.
func place(t *testing.T, h *schedtest.Harness, job *state.Job) {
	t.Helper()
	runEval(t, h, job)
	if got := len(h.LiveAllocs(job.Namespace, job.ID)); got != job.TaskGroups[0].Count {
		t.Fatalf("%s: %d allocations placed, want %d", job.ID, got, job.TaskGroups[0].Count)
	}
}

// evicted lists the job's allocations evicted, by ID.
func evicted(t *testing.T, h *schedtest.Harness, jobID string) []*state.Allocation {
	t.Helper()
	all, err := h.Store.AllocsByJob(nil, state.DefaultNamespace, jobID, true)
	if err != nil {
		t.Fatal(err)
	}
	var out []*state.Allocation
	for _, a := range all {
		if a.DesiredStatus == state.AllocDesiredStatusEvict {
			out = append(out, a)
		}
	}
	return out
}

func TestPreemptionEvictsLowestPriorityFirst(t *testing.T) {
	h, _ := preemptHarness(t, true)
	place(t, h, pjob("low", 20, 3, 500))
	place(t, h, pjob("mid", 40, 4, 500)) // 3500 of 3900 MHz taken
	high := pjob("high", 80, 1, 500)
	e := runEval(t, h, high)
	live := h.LiveAllocs(high.Namespace, high.ID)
	if len(live) != 1 || len(e.FailedTGAllocs) != 0 {
		t.Fatalf("high: %d placed, failed %v", len(live), e.FailedTGAllocs)
	}
	low, mid := evicted(t, h, "low"), evicted(t, h, "mid")
	if len(low) != 1 || len(mid) != 0 {
		t.Fatalf("evicted %d of low and %d of mid, want one of low", len(low), len(mid))
	}
	v := low[0]
	if v.PreemptedByAllocation != live[0].ID || !slices.Equal(live[0].PreemptedAllocations, []string{v.ID}) ||
		v.DesiredDescription != "Preempted by alloc ID "+live[0].ID {
		t.Fatalf("victim %+v / placed PreemptedAllocations %v", v, live[0].PreemptedAllocations)
	}
	// The victim's job gets an evaluation, written with the plan.
	var victimEval *state.Evaluation
	for _, ce := range h.CreatedEvals {
		if ce.JobID == "low" && ce.TriggeredBy == state.EvalTriggerPreemption {
			victimEval = ce
		}
	}
	if victimEval == nil {
		t.Fatalf("no preemption evaluation of the victim's job among %d created", len(h.CreatedEvals))
	}
	if stored, _ := h.Store.EvalByID(nil, victimEval.ID); stored == nil || stored.Priority != 20 || stored.Type != state.JobTypeService {
		t.Fatalf("victim eval stored as %+v", stored)
	}
	// Processing it finds no room: the victim's job blocks.
	if err := h.Process(NewServiceScheduler, victimEval); err != nil {
		t.Fatal(err)
	}
	if last := h.LastEval(); last.BlockedEval == "" || len(last.FailedTGAllocs) == 0 {
		t.Fatalf("victim job's eval closed %+v, want a blocked eval", last)
	}
	if got := len(h.LiveAllocs(state.DefaultNamespace, "low")); got != 2 {
		t.Fatalf("low has %d live allocations, want 2", got)
	}
}

func TestPreemptionFewestEvictions(t *testing.T) {
	h, _ := preemptHarness(t, true)
	place(t, h, pjob("big", 20, 1, 2000))
	place(t, h, pjob("small", 20, 3, 500)) // 3500 taken
	place(t, h, pjob("high", 80, 1, 1500))
	if b, s := evicted(t, h, "big"), evicted(t, h, "small"); len(b) != 1 || len(s) != 0 {
		t.Fatalf("evicted %d big and %d small, want the one big allocation", len(b), len(s))
	}
}

func TestPreemptionGivesBackUnneededVictims(t *testing.T) {
	h, _ := preemptHarness(t, true)
	place(t, h, pjob("low", 20, 7, 500)) // 3500 taken
	place(t, h, pjob("high", 80, 1, 1000))
	if got := len(evicted(t, h, "low")); got != 2 {
		t.Fatalf("evicted %d, want 2 (1000 - 400 free = 600 MHz short)", got)
	}
	if plan := h.LastPlan(); plan.Annotations != nil {
		t.Fatalf("an ordinary run annotated its plan: %+v", plan.Annotations)
	}
}

func TestPreemptionRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		enabled bool
		lowPrio int
		highID  string
	}{
		{"disabled for service", false, 20, "high"},
		{"priority difference below 10", true, 71, "high"},
		{"own job", true, 20, "low"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, _ := preemptHarness(t, c.enabled)
			place(t, h, pjob("low", c.lowPrio, 7, 500))
			job := pjob(c.highID, 80, 1, 1000)
			if c.highID == "low" {
				job = pjob("low", 80, 8, 500) // one more of its own
			}
			e := runEval(t, h, job)
			if len(e.FailedTGAllocs) == 0 || e.BlockedEval == "" {
				t.Fatalf("eval %+v: want failed placements and a blocked eval", e)
			}
			if got := len(evicted(t, h, "low")); got != 0 {
				t.Fatalf("%d allocations evicted", got)
			}
		})
	}
}

func TestPreemptionSystemJobDefault(t *testing.T) {
	h := schedtest.NewHarness(t) // default configuration: system preemption on
	h.UpsertNodes(MockNode("n1"))
	place(t, h, pjob("low", 20, 7, 500))
	sys := MockSystemJob("agent")
	sys.Priority = 90
	sys.TaskGroups[0].Tasks[0].Resources.CPU = 1000
	runEval(t, h, sys)
	if got := len(h.LiveAllocs(sys.Namespace, sys.ID)); got != 1 {
		t.Fatalf("system job placed %d, want 1 by preemption", got)
	}
	if got := len(evicted(t, h, "low")); got != 2 {
		t.Fatalf("evicted %d, want 2", got)
	}
}

func TestPreemptionDryRunAnnotations(t *testing.T) {
	h, _ := preemptHarness(t, true)
	place(t, h, pjob("low", 20, 7, 500))
	snap, err := h.Store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	job := pjob("high", 80, 1, 1000)
	res, err := DryRun(h.Config(), snap, job)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Annotations.PreemptedAllocs); n != 2 || res.Annotations.PreemptedAllocs[0].JobID != "low" {
		t.Fatalf("annotations list %d preemptions: %+v", n, res.Annotations.PreemptedAllocs)
	}
	if du := res.Annotations.DesiredTGUpdates["web"]; du == nil || du.Preemptions != 2 || du.Place != 1 {
		t.Fatalf("desired updates %+v", du)
	}
	if got := len(evicted(t, h, "low")); got != 0 {
		t.Fatal("a dry run evicted allocations")
	}
}

// TestPlanApplierChecksPreemptions: the applier's check counts the
// evictions as leaving the node, so a placement that fits only by them is
// accepted with them, refused without them, and the commit writes the
// evictions as stops (evict, PreemptedByAllocation) with the victim job's
// evaluation.
func TestPlanApplierChecksPreemptions(t *testing.T) {
	h, n := preemptHarness(t, true)
	place(t, h, pjob("low", 20, 7, 500)) // 3500 of 3900 taken
	low := h.LiveAllocs(state.DefaultNamespace, "low")
	high := h.UpsertJob(pjob("high", 80, 1, 1000))
	newAlloc := func() *state.Allocation {
		return &state.Allocation{ID: "00000000-0000-4000-8000-00000000beef", Namespace: high.Namespace, JobID: high.ID, Job: high,
			TaskGroup: "web", NodeID: n.ID, DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusPending,
			AllocatedResources: &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{"web": {CPU: 1000, MemoryMB: 256}}}}
	}
	victim := func(a *state.Allocation) *state.Allocation {
		c := a.CopySkipJob()
		c.DesiredStatus, c.PreemptedByAllocation = state.AllocDesiredStatusEvict, "00000000-0000-4000-8000-00000000beef"
		return c
	}
	plan := func(victims ...*state.Allocation) *Plan {
		p := &Plan{Job: high, NodeAllocation: map[string][]*state.Allocation{n.ID: {newAlloc()}}}
		if len(victims) > 0 {
			p.NodePreemptions = map[string][]*state.Allocation{n.ID: victims}
			p.PreemptionEvals = []*state.Evaluation{{ID: "00000000-0000-4000-8000-00000000e0a1", Namespace: "default", JobID: "low"},
				{ID: "00000000-0000-4000-8000-00000000e0a2", Namespace: "default", JobID: "unrelated"}}
		}
		return p
	}

	if _, rejected, err := EvaluatePlan(h.Store, nil, plan()); err != nil || len(rejected) != 1 {
		t.Fatalf("without evictions: rejected %v, err %v; want the node refused", rejected, err)
	}
	if _, rejected, err := EvaluatePlan(h.Store, nil, plan(victim(low[0]))); err != nil || len(rejected) != 1 {
		t.Fatalf("one eviction of the two needed: rejected %v, err %v; want the node refused", rejected, err)
	}
	p := plan(victim(low[0]), victim(low[1]))
	res, rejected, err := EvaluatePlan(h.Store, nil, p)
	if err != nil || len(rejected) != 0 || len(res.NodePreemptions[n.ID]) != 2 {
		t.Fatalf("with evictions: result %+v, rejected %v, err %v", res, rejected, err)
	}
	c := CommitOf(p, res)
	if len(c.Stops) != 2 || c.Stops[0].DesiredStatus != state.AllocDesiredStatusEvict || c.Stops[0].PreemptedByAllocation == "" {
		t.Fatalf("commit stops %+v", c.Stops)
	}
	if len(c.Evals) != 1 || c.Evals[0].JobID != "low" {
		t.Fatalf("commit evals %+v, want only the victim job's", c.Evals)
	}
	// Written through the store, the victims are evicted and name the
	// allocation that took their room.
	h.Apply(store.PlanApplyRequestType, &store.PlanApplyRequest{Job: c.Job, JobAllocs: c.JobAllocs, Allocs: c.Allocs, Stops: c.Stops, Evals: c.Evals})
	for _, v := range low[:2] {
		got, _ := h.Store.AllocByID(nil, v.ID)
		if got.DesiredStatus != state.AllocDesiredStatusEvict || got.PreemptedByAllocation != "00000000-0000-4000-8000-00000000beef" {
			t.Fatalf("victim stored as %s / %q", got.DesiredStatus, got.PreemptedByAllocation)
		}
	}
	if got, _ := h.Store.AllocByID(nil, "00000000-0000-4000-8000-00000000beef"); got == nil || len(got.PreemptedAllocations) != 0 {
		// newAlloc carries no PreemptedAllocations: the store keeps what
		// the scheduler wrote, nothing more.
		t.Fatalf("placed allocation stored as %+v", got)
	}
}
