package scheduler_test

import (
	"fmt"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestDryRun(t *testing.T) {
	for _, c := range []struct {
		name      string
		existing  bool
		change    func(j *state.Job)
		want      state.DesiredUpdates
		wantFail  bool
		wantEvals int
	}{
		{"new job", false, nil, state.DesiredUpdates{Place: 4}, false, 0},
		{"unchanged job", true, nil, state.DesiredUpdates{Ignore: 4}, false, 0},
		{"count up", true, func(j *state.Job) { j.TaskGroups[0].Count = 6 }, state.DesiredUpdates{Place: 2, InPlaceUpdate: 4}, false, 0},
		{"destructive", true, func(j *state.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{"x": "y"} }, state.DesiredUpdates{DestructiveUpdate: 1, Ignore: 3}, false, 0},
		{"destructive max_parallel 4", true, func(j *state.Job) {
			j.TaskGroups[0].Tasks[0].Config = map[string]any{"x": "y"}
			j.TaskGroups[0].Update.MaxParallel = 4
		}, state.DesiredUpdates{DestructiveUpdate: 4}, false, 0},
		{"in place", true, func(j *state.Job) { j.TaskGroups[0].RestartPolicy.Attempts = 8 }, state.DesiredUpdates{InPlaceUpdate: 4}, false, 0},
		{"stop", true, func(j *state.Job) { j.Stop = true }, state.DesiredUpdates{Stop: 4}, false, 0},
		{"no room", false, func(j *state.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 100000 }, state.DesiredUpdates{Place: 4}, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			for i := range 3 {
				h.UpsertNodes(MockNode(fmt.Sprintf("n%d", i)))
			}
			job := MockJob("web")
			job.TaskGroups[0].Count = 4
			if c.existing {
				runEval(t, h, job)
			}
			index := h.Store.LatestIndex()
			proposed := job.Copy()
			if c.change != nil {
				c.change(proposed)
			}
			res, err := DryRun(h.Config(), h.Store, proposed)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Store.LatestIndex(); got != index {
				t.Fatalf("dry run wrote to the store: index %d -> %d", index, got)
			}
			du := res.Annotations.DesiredTGUpdates["web"]
			if du == nil || *du != c.want {
				t.Fatalf("annotations %+v, want %+v", du, c.want)
			}
			if res.Plan.Annotations != res.Annotations {
				t.Fatal("the plan must carry the annotations")
			}
			if (res.FailedTGAllocs["web"] != nil) != c.wantFail {
				t.Fatalf("failed allocs %+v, want failure %v", res.FailedTGAllocs, c.wantFail)
			}
			if len(res.CreatedEvals) != c.wantEvals {
				t.Fatalf("created evals %+v, want %d", res.CreatedEvals, c.wantEvals)
			}
			if c.wantEvals > 0 && res.CreatedEvals[0].Status != state.EvalStatusBlocked {
				t.Fatalf("created eval %+v, want a blocked eval", res.CreatedEvals[0])
			}
			placed := 0
			for _, list := range res.Plan.NodeAllocation {
				for _, a := range list {
					if a.ClientStatus == state.AllocClientStatusPending {
						placed++
					}
				}
			}
			if wantPlaced := int(c.want.Place + c.want.DestructiveUpdate); !c.wantFail && placed != wantPlaced {
				t.Fatalf("plan places %d, want %d", placed, wantPlaced)
			}
		})
	}
}

func TestDryRunIgnoresPurgedInstance(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(MockNode("n0"))
	job := MockJob("web")
	job.TaskGroups[0].Count = 2
	runEval(t, h, job)
	// Purge the job; its allocations stay until GC.
	h.Apply(store.JobDeregisterRequestType, &store.JobDeregisterRequest{Namespace: "default", JobID: "web", Purge: true})
	res, err := DryRun(h.Config(), h.Store, job.Copy())
	if err != nil {
		t.Fatal(err)
	}
	if du := res.Annotations.DesiredTGUpdates["web"]; *du != (state.DesiredUpdates{Place: 2}) {
		t.Fatalf("annotations %+v: a new instance owns none of the purged job's allocations", *du)
	}
}

func TestAnnotateDiff(t *testing.T) {
	old := MockJob("web")
	next := old.Copy()
	next.TaskGroups[0].Tasks[0].Env = map[string]string{"A": "1"}
	next.TaskGroups[0].Tasks = append(next.TaskGroups[0].Tasks, &state.Task{Name: "side", Driver: "mock"})
	inplace := next.Copy()
	inplace.TaskGroups[0].Tasks[0].Env = nil
	inplace.TaskGroups[0].Tasks[0].Services = []*state.Service{{Name: "s"}}
	for _, c := range []struct {
		name string
		next *state.Job
		want map[string]string
	}{
		{"destructive", next, map[string]string{"web": AnnotationForcesDestructiveUpdate, "side": AnnotationForcesCreate}},
		{"in place", inplace, map[string]string{"web": AnnotationForcesInplaceUpdate, "side": AnnotationForcesCreate}},
	} {
		t.Run(c.name, func(t *testing.T) {
			diff, err := old.Diff(c.next, false)
			if err != nil {
				t.Fatal(err)
			}
			ann := &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{"web": {Place: 2, DestructiveUpdate: 3}}}
			AnnotateDiff(diff, old, c.next, ann)
			tg := diff.TaskGroups[0]
			if len(tg.Updates) != 2 || tg.Updates[UpdateTypeCreate] != 2 || tg.Updates[UpdateTypeDestructiveUpdate] != 3 {
				t.Fatalf("updates %v", tg.Updates)
			}
			for _, td := range tg.Tasks {
				if want := c.want[td.Name]; len(td.Annotations) != 1 || td.Annotations[0] != want {
					t.Errorf("task %s annotations %v, want [%s]", td.Name, td.Annotations, want)
				}
			}
		})
	}
}
