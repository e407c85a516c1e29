package scheduler_test

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// closeRun is what one run of an evaluation left in the store.
type closeRun struct {
	evals   []*state.Evaluation
	summary map[string]state.TaskGroupSummary
	status  string
	// entries counts the commands written while the eval was processed.
	entries uint64
	updated int
}

// runClosing registers job on three nodes (7 MockJob allocations each),
// processes its eval, and reads back its evals (indexes cleared: they
// depend on how many entries were written; and the wall-clock time of
// failed placements), its summary and status.
func runClosing(t *testing.T, job *state.Job, separately bool, filter func(*Plan) *PlanResult) closeRun {
	t.Helper()
	h := schedtest.NewHarness(t)
	h.CloseSeparately = separately
	h.PlanFilter = filter
	h.UpsertNodes(MockNode("n1"), MockNode("n2"), MockNode("n3"))
	stored := h.UpsertJob(job)
	e := h.NewEval(stored, state.EvalTriggerJobRegister)
	before := h.Store.LatestIndex()
	if err := h.Process(BuiltinSchedulers[stored.Type], e); err != nil {
		t.Fatalf("process: %v", err)
	}
	out := closeRun{entries: h.Store.LatestIndex() - before, updated: len(h.UpdatedEvals)}
	evals, err := h.Store.EvalsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evals {
		c := e.Copy()
		c.CreateIndex, c.ModifyIndex = 0, 0
		for _, m := range c.FailedTGAllocs {
			m.AllocationTime = 0 // measured on the wall clock
		}
		out.evals = append(out.evals, c)
	}
	sum, err := h.Store.JobSummaryByID(nil, job.Namespace, job.ID)
	if err != nil || sum == nil {
		t.Fatalf("summary: %v", err)
	}
	out.summary = sum.Summary
	j, _ := h.Store.JobByID(nil, job.Namespace, job.ID)
	out.status = j.Status
	return out
}

// TestEvalClosedWithPlanOrAlone processes the same evaluations with their
// closing (final status, blocked eval, queued counts) written in the
// plan's own entry and, as planners did before, in entries of their own:
// what is stored must be the same, and a plan committed whole must cost
// one entry.
func TestEvalClosedWithPlanOrAlone(t *testing.T) {
	big := MockJob("big")
	big.TaskGroups[0].Count = 30 // 21 fit: a blocked eval for 9
	sys := MockSystemJob("sys")
	cases := []struct {
		name    string
		job     *state.Job
		entries uint64 // written with the closing in the plan
	}{
		{"all placed", MockJob("web"), 1},
		{"some placements failed", big, 1},
		{"system job", sys, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			alone := runClosing(t, tc.job.Copy(), true, nil)
			with := runClosing(t, tc.job.Copy(), false, nil)
			if with.entries != tc.entries || alone.entries <= with.entries {
				t.Fatalf("entries written: %d with the plan, %d alone; want %d with the plan and more alone",
					with.entries, alone.entries, tc.entries)
			}
			if !reflect.DeepEqual(alone.evals, with.evals) {
				for i := range with.evals {
					t.Errorf("eval %d written with the plan:\n got %+v\nwant %+v", i, *with.evals[i], *alone.evals[i])
				}
				t.FailNow()
			}
			if !reflect.DeepEqual(alone.summary, with.summary) || alone.status != with.status {
				t.Fatalf("summary %+v status %s with the plan, want %+v %s", with.summary, with.status, alone.summary, alone.status)
			}
			for _, e := range with.evals {
				if e.TriggeredBy == state.EvalTriggerJobRegister && e.Status != state.EvalStatusComplete {
					t.Fatalf("eval %s is %s", e.ID, e.Status)
				}
			}
		})
	}
}

// TestEvalNotClosedByPartialPlan: a plan with a node left out does not
// close its eval; the scheduler retries, and the retry, committed whole,
// closes it once.
func TestEvalNotClosedByPartialPlan(t *testing.T) {
	attempts := 0
	var firstUpdate *state.Evaluation
	dropFirstNode := func(p *Plan) *PlanResult {
		attempts++
		r := &PlanResult{NodeUpdate: p.NodeUpdate, NodeAllocation: map[string][]*state.Allocation{}, Deployment: p.Deployment}
		skipped := false
		for _, node := range slices.Sorted(maps.Keys(p.NodeAllocation)) {
			if attempts == 1 && !skipped {
				skipped = true
				firstUpdate = p.EvalUpdate
				continue
			}
			r.NodeAllocation[node] = p.NodeAllocation[node]
		}
		return r
	}
	with := runClosing(t, MockJob("web"), false, dropFirstNode)
	if attempts != 2 || firstUpdate == nil {
		t.Fatalf("%d attempts (first carried %v), want a partial one then a full one", attempts, firstUpdate)
	}
	// Two plan entries, the second closing the eval; nothing else.
	if with.entries != 2 || with.updated != 1 {
		t.Fatalf("%d entries and %d eval updates, want 2 plans and one update", with.entries, with.updated)
	}
	if e := with.evals[0]; e.Status != state.EvalStatusComplete || len(e.FailedTGAllocs) != 0 {
		t.Fatalf("eval = %s %v", e.Status, e.FailedTGAllocs)
	}
	attempts = 0
	alone := runClosing(t, MockJob("web"), true, dropFirstNode)
	if !reflect.DeepEqual(alone.evals, with.evals) || !reflect.DeepEqual(alone.summary, with.summary) {
		t.Fatalf("after a partial commit, evals %+v summary %+v; alone %+v %+v", with.evals, with.summary, alone.evals, alone.summary)
	}
}
