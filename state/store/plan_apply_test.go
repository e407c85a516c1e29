package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// Tests of the plan and scheduler-runtime commands. Helpers come from
// store_test.go (the "st" fixtures).

func TestPlanApplySharesJobAndAppliesStopsAsChanges(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, nil)
	stored := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	a1, a2 := stAlloc("a1", job, "n1"), stAlloc("a2", job, "n1")
	stApply(t, s, 11, PlanApplyRequestType, &PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{a1, a2}, Now: 1100})
	got1 := stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	got2 := stMust[*state.Allocation](t)(s.AllocByID(nil, "a2"))
	if got1.Job == nil || got1.Job.ID != "web" || got1.Job != got2.Job {
		t.Fatalf("allocations of JobAllocs do not share the plan's job: %p %p", got1.Job, got2.Job)
	}
	if got1.CreateIndex != 11 || got1.CreateTime != 1100 || got1.ClientStatus != state.AllocClientStatusPending {
		t.Fatalf("new allocation stamps: %+v", got1)
	}

	// The client reports a1 running; a stop computed before that keeps the
	// client's status, and a stop of an allocation collected meanwhile is
	// skipped.
	stApply(t, s, 12, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: "a1", ClientStatus: state.AllocClientStatusRunning}}})
	stop := got1.Copy()
	stop.DesiredStatus, stop.DesiredDescription = state.AllocDesiredStatusStop, "alloc not needed"
	stop.ClientStatus = state.AllocClientStatusPending
	lost := got2.Copy()
	lost.DesiredStatus, lost.ClientStatus, lost.ClientDescription = state.AllocDesiredStatusStop, state.AllocClientStatusLost, "node down"
	gone := stAlloc("gone", job, "n1")
	gone.DesiredStatus = state.AllocDesiredStatusStop
	stApply(t, s, 13, PlanApplyRequestType, &PlanApplyRequest{Stops: []*state.Allocation{stop, lost, gone}, Now: 1300})
	got1 = stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	if got1.DesiredStatus != state.AllocDesiredStatusStop || got1.ClientStatus != state.AllocClientStatusRunning || got1.Job == nil || got1.ModifyTime != 1300 {
		t.Fatalf("stopped a1: desired %s client %s job %v time %d", got1.DesiredStatus, got1.ClientStatus, got1.Job != nil, got1.ModifyTime)
	}
	got2 = stMust[*state.Allocation](t)(s.AllocByID(nil, "a2"))
	if got2.ClientStatus != state.AllocClientStatusLost || got2.ClientDescription != "node down" {
		t.Fatalf("lost a2: %s %q", got2.ClientStatus, got2.ClientDescription)
	}
	if a := stMust[*state.Allocation](t)(s.AllocByID(nil, "gone")); a != nil {
		t.Fatal("a stop created an allocation that did not exist")
	}
	sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	if tg := sum.Summary["web"]; tg.Running != 1 || tg.Lost != 1 || tg.Starting != 0 {
		t.Fatalf("summary after stops = %+v, want 1 running (stopping) and 1 lost", tg)
	}
	if err := stApplyErr(t, s, 14, PlanApplyRequestType, &PlanApplyRequest{JobAllocs: []*state.Allocation{stAlloc("x", job, "n1")}}); err == nil {
		t.Fatal("JobAllocs without Job accepted")
	}
}

func TestEvalStatusUpdateSetsQueued(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, stEval("e1", job))
	e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1")).Copy()
	e.Status = state.EvalStatusComplete
	e.QueuedAllocations = map[string]int{"web": 2, "no-such-group": 5}
	stApply(t, s, 11, EvalStatusUpdateRequestType, &EvalStatusUpdateRequest{Evals: []*state.Evaluation{e}})
	if got := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1")); got.Status != state.EvalStatusComplete || got.ModifyIndex != 11 {
		t.Fatalf("eval = %s at %d", got.Status, got.ModifyIndex)
	}
	sum := stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	if sum.Summary["web"].Queued != 2 || len(sum.Summary) != 1 {
		t.Fatalf("summary = %+v, want web queued 2 and no other group", sum.Summary)
	}
}

func TestGarbageCollectRechecksRules(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 2, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("up")})
	stApply(t, s, 3, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("down")})
	stApply(t, s, 4, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: "down", Status: state.NodeStatusDown})

	// "dead" is stopped and done; "again" was stopped, then registered
	// again after the leader chose it.
	dead, again := stJob("dead"), stJob("again")
	stRegister(t, s, 10, dead, stEval("dead-e", dead))
	stApply(t, s, 11, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "dead"})
	done := stMust[*state.Evaluation](t)(s.EvalByID(nil, "dead-e")).Copy()
	done.Status = state.EvalStatusComplete
	stApply(t, s, 12, EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{done}})
	deadJob := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "dead"))
	if deadJob.Status != state.JobStatusDead {
		t.Fatalf("fixture: job dead is %s", deadJob.Status)
	}
	stRegister(t, s, 13, again, nil)
	chosenAgain := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "again"))
	stRegister(t, s, 14, func() *state.Job { j := stJob("again"); j.Meta = map[string]string{"v": "2"}; return j }(), nil)

	stRegister(t, s, 20, stJob("live"), stEval("pending-e", stJob("live")))
	liveAlloc := stAlloc("live-a", stJob("live"), "up")
	stApply(t, s, 21, PlanApplyRequestType, &PlanApplyRequest{Allocs: []*state.Allocation{liveAlloc}})

	req := &GarbageCollectRequest{
		Evals:  []string{"pending-e", "missing"},
		Allocs: []string{"live-a"},
		Jobs: []GarbageCollectJob{
			{Namespace: state.DefaultNamespace, ID: "dead", JobModifyIndex: deadJob.JobModifyIndex},
			{Namespace: state.DefaultNamespace, ID: "again", JobModifyIndex: chosenAgain.JobModifyIndex},
		},
		Nodes: []string{"up", "down"},
	}
	ws := memdb.NewWatchSet()
	stMust[*state.Job](t)(s.JobByID(ws, state.DefaultNamespace, "dead"))
	stApply(t, s, 30, GarbageCollectRequestType, req)
	if !stFired(ws) {
		t.Fatal("collecting a job did not wake its readers")
	}
	for _, c := range []struct {
		what string
		gone bool
		got  bool
	}{
		{"job dead", true, stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "dead")) == nil},
		{"summary of dead", true, stMust[*state.JobSummary](t)(s.JobSummaryByID(nil, state.DefaultNamespace, "dead")) == nil},
		{"job again (registered since)", false, stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "again")) == nil},
		{"pending eval", false, stMust[*state.Evaluation](t)(s.EvalByID(nil, "pending-e")) == nil},
		{"live alloc", false, stMust[*state.Allocation](t)(s.AllocByID(nil, "live-a")) == nil},
		{"ready node", false, stMust[*state.Node](t)(s.NodeByID(nil, "up")) == nil},
		{"down node", true, stMust[*state.Node](t)(s.NodeByID(nil, "down")) == nil},
	} {
		if c.got != c.gone {
			t.Errorf("%s: deleted = %v, want %v", c.what, c.got, c.gone)
		}
	}
}

func TestWatchIndexFiresOnTableWrites(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 4, job, stEval("e1", job))
	evals, any := memdb.NewWatchSet(), memdb.NewWatchSet()
	if got := s.WatchIndex(evals, TableEvals); got != 4 {
		t.Fatalf("evals index = %d, want 4", got)
	}
	latest := s.WatchLatestIndex(any)
	stApply(t, s, 5, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	if stFired(evals) {
		t.Fatal("the evaluations watch fired on a node write")
	}
	if !stFired(any) || s.WatchLatestIndex(nil) != 5 || latest != 4 {
		t.Fatal("the latest-index watch did not fire on a write")
	}
	stApply(t, s, 6, EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{stEval("e2", job)}})
	if !stFired(evals) || s.WatchIndex(nil, TableEvals) != 6 {
		t.Fatalf("the evaluations watch did not fire (index %d)", s.WatchIndex(nil, TableEvals))
	}
}

// A plan written packed (PlanApplyRequest.Packed) stores exactly what the
// same plan written as plain msgpack stores; the packed copy leaves the
// request as it was; a plan without JobAllocs is not packed; a corrupt
// packing is refused and changes nothing.
func TestPlanApplyPackedAppliesAlike(t *testing.T) {
	plain, packed := stStore(t, Config{}), stStore(t, Config{})
	job := stJob("web")
	for _, s := range []*Store{plain, packed} {
		stRegister(t, s, 10, job, nil)
	}
	stored := stMust[*state.Job](t)(plain.JobByID(nil, state.DefaultNamespace, "web"))
	var allocs []*state.Allocation
	for i := range 50 {
		a := stAlloc(fmt.Sprintf("a%02d", i), job, fmt.Sprintf("n%d", i%7))
		a.EvalID = "eval-1"
		a.Metrics = &state.AllocMetric{NodesEvaluated: 3, NodesInPool: 7, NodesAvailable: map[string]int{"dc1": 7},
			Scores: state.ScoresOf(map[string]float64{a.NodeID + ".binpack": 0.25 + float64(i)/100, a.NodeID + ".normalized-score": 0.5})}
		a.AllocatedResources.Shared.Ports = []state.AllocatedPort{{Label: "http", Value: 20000 + i, HostIP: "10.0.0.1"}}
		if i%2 == 0 {
			a.DesiredTransition.Migrate = new(bool)
		}
		allocs = append(allocs, a)
	}
	req := &PlanApplyRequest{EvalID: "eval-1", Job: stored, JobAllocs: allocs, Now: 1100}
	p, mt, err := req.Packed(nil)
	if err != nil || mt != PlanApplyPackedRequestType || p.JobAllocs != nil || len(p.PackedJobAllocs) == 0 {
		t.Fatalf("Packed: %v type %d JobAllocs %d packed %d bytes", err, mt, len(p.JobAllocs), len(p.PackedJobAllocs))
	}
	if len(req.JobAllocs) != 50 || req.PackedJobAllocs != nil {
		t.Fatal("Packed changed the request")
	}
	plainBytes, _ := Encode(PlanApplyRequestType, req)
	packedBytes, _ := Encode(mt, p)
	t.Logf("entry of 50 placements: %d bytes plain, %d packed", len(plainBytes), len(packedBytes))
	if len(packedBytes) >= len(plainBytes)*2/3 {
		t.Errorf("packed entry %d bytes, plain %d: packing saves less than a third", len(packedBytes), len(plainBytes))
	}
	stApply(t, plain, 11, PlanApplyRequestType, req)
	stApply(t, packed, 11, mt, p)
	for _, a := range allocs {
		want := stMust[*state.Allocation](t)(plain.AllocByID(nil, a.ID))
		got := stMust[*state.Allocation](t)(packed.AllocByID(nil, a.ID))
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if want == nil || string(wj) != string(gj) {
			t.Fatalf("allocation %s stored\n%s\npacked, want\n%s", a.ID, gj, wj)
		}
	}
	ws, _ := json.Marshal(stMust[*state.JobSummary](t)(plain.JobSummaryByID(nil, state.DefaultNamespace, "web")))
	gs, _ := json.Marshal(stMust[*state.JobSummary](t)(packed.JobSummaryByID(nil, state.DefaultNamespace, "web")))
	if string(ws) != string(gs) {
		t.Errorf("summary %s packed, want %s", gs, ws)
	}

	if q, mt, err := (&PlanApplyRequest{Stops: allocs[:1]}).Packed(nil); err != nil || mt != PlanApplyRequestType || q.PackedJobAllocs != nil {
		t.Errorf("a plan without placements: type %d, %v", mt, err)
	}
	if _, _, err := (&PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{nil}}).Packed(nil); err == nil {
		t.Error("a nil allocation packed")
	}

	before := packed.Index(TableAllocs)
	for name, b := range map[string][]byte{
		"truncated":  p.PackedJobAllocs[:len(p.PackedJobAllocs)/2],
		"trailing":   append(bytes.Clone(p.PackedJobAllocs), 0),
		"huge count": {0xff, 0xff, 0xff, 0xff, 0x0f},
		"count only": {3},
	} {
		bad := *p
		bad.PackedJobAllocs = b
		resp := stApplyErr(t, packed, 12, PlanApplyPackedRequestType, &bad)
		if err, ok := resp.(error); !ok || !errors.Is(err, state.ErrInvalid) {
			t.Errorf("%s: applied (%v), want a validation error", name, resp)
		}
	}
	if packed.Index(TableAllocs) != before || stMust[*state.Allocation](t)(packed.AllocByID(nil, "a00")).ModifyIndex != 11 {
		t.Error("a refused packed plan changed the allocations")
	}
}

// A plan whose job the store holds travels with a JobRef (type
// PlanApplyRefRequestType): its allocations then share the stored version
// row, and are stored as the plan carrying the job stores them. A copy of
// the job is not held (it travels whole); a plan without placements
// carries no job; a reference to a version no longer stored (here: the
// job purged and registered again) is refused and changes nothing.
func TestPlanApplyByJobRef(t *testing.T) {
	whole, byRef := stStore(t, Config{}), stStore(t, Config{})
	job := stJob("web")
	for _, s := range []*Store{whole, byRef} {
		stRegister(t, s, 10, job, nil)
	}
	stored := stMust[*state.Job](t)(byRef.JobByID(nil, state.DefaultNamespace, "web"))
	if !byRef.HoldsJob(stored) || byRef.HoldsJob(stored.Copy()) || byRef.HoldsJob(nil) {
		t.Fatal("HoldsJob: want true for the stored row only")
	}
	placements := func() []*state.Allocation {
		return []*state.Allocation{stAlloc("a1", job, "n1"), stAlloc("a2", job, "n2")}
	}
	req := &PlanApplyRequest{EvalID: "e1", Job: stored, JobAllocs: placements(), Now: 1100}
	p, mt, err := req.Packed(byRef.HoldsJob)
	if err != nil || mt != PlanApplyRefRequestType || p.Job != nil || p.JobRef == nil || *p.JobRef != (JobRef{JobVersionRef{"default", "web", 0}, 10, 10}) {
		t.Fatalf("Packed: %v type %d job %v ref %+v", err, mt, p.Job, p.JobRef)
	}
	if req.Job != stored || req.JobRef != nil {
		t.Fatal("Packed changed the request")
	}
	if _, mt, _ := (&PlanApplyRequest{Job: stored.Copy(), JobAllocs: placements()}).Packed(byRef.HoldsJob); mt != PlanApplyPackedRequestType {
		t.Errorf("a copy of the job: type %d, want it carried whole (%d)", mt, PlanApplyPackedRequestType)
	}
	if q, mt, _ := (&PlanApplyRequest{Job: stored, Stops: placements()[:1]}).Packed(byRef.HoldsJob); mt != PlanApplyRequestType || q.Job != nil || q.JobRef != nil {
		t.Errorf("a plan without placements: type %d, job %v ref %v", mt, q.Job, q.JobRef)
	}

	stApply(t, whole, 11, PlanApplyRequestType, &PlanApplyRequest{EvalID: "e1", Job: stored, JobAllocs: placements(), Now: 1100})
	stApply(t, byRef, 11, mt, p)
	for _, id := range []string{"a1", "a2"} {
		want := stMust[*state.Allocation](t)(whole.AllocByID(nil, id))
		got := stMust[*state.Allocation](t)(byRef.AllocByID(nil, id))
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Fatalf("allocation %s stored\n%s\nby reference, want\n%s", id, gj, wj)
		}
		if got.Job != stored { // the row as the plan found it (the plan's write then refreshed the job's status)
			t.Errorf("allocation %s: its job is not the stored version row", id)
		}
	}

	// Purged and registered again: version 0 again, another CreateIndex.
	stApply(t, byRef, 12, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: state.DefaultNamespace, JobID: "web", Purge: true})
	stRegister(t, byRef, 13, job, nil)
	before := byRef.Index(TableAllocs)
	stale := *p
	stale.PackedJobAllocs = bytes.Clone(p.PackedJobAllocs)
	resp := stApplyErr(t, byRef, 14, PlanApplyRefRequestType, &stale)
	if err, ok := resp.(error); !ok || !errors.Is(err, state.ErrConflict) {
		t.Errorf("a plan naming a purged version: %v, want a conflict", resp)
	}
	if byRef.Index(TableAllocs) != before {
		t.Error("a refused plan changed the allocations")
	}
	if resp := stApplyErr(t, byRef, 15, PlanApplyRefRequestType, &PlanApplyRequest{PackedJobAllocs: p.PackedJobAllocs}); resp == nil {
		t.Error("a plan of type 24 without a JobRef applied")
	}
}

// TestPlanApplyClosesEvalAsStatusUpdate writes an evaluation's closing
// (a blocked eval and the eval's final status) two ways: after the plan,
// in EvalStatusUpdateRequests of their own, and in the plan's entry
// (PlanApplyRequest.EvalStatus). The evaluations, the job summary's queued
// counts, the job's status and the evaluation events must be the same.
func TestPlanApplyClosesEvalAsStatusUpdate(t *testing.T) {
	job := stJob("web")
	closing := func(s *Store) (*PlanApplyRequest, *state.Evaluation, *state.Evaluation) {
		stored := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
		plan := &PlanApplyRequest{EvalID: "e1", Job: stored, JobAllocs: []*state.Allocation{stAlloc("a1", job, "n1")}, Now: 1100}
		blocked := stEval("b1", job)
		blocked.Status, blocked.TriggeredBy, blocked.PreviousEval = state.EvalStatusBlocked, state.EvalTriggerQueuedAllocs, "e1"
		blocked.QueuedAllocations = map[string]int{"web": 1}
		blocked.CreateTime, blocked.ModifyTime, blocked.SnapshotIndex = 1100, 1100, 10
		done := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1")).Copy()
		done.Status, done.BlockedEval, done.SnapshotIndex, done.ModifyTime = state.EvalStatusComplete, "b1", 10, 1100
		done.QueuedAllocations = map[string]int{"web": 1}
		done.FailedTGAllocs = map[string]*state.AllocMetric{"web": {NodesEvaluated: 1, CoalescedFailures: 0}}
		return plan, blocked, done
	}

	separate := stStore(t, Config{})
	stRegister(t, separate, 10, job, stEval("e1", job))
	plan, blocked, done := closing(separate)
	stApply(t, separate, 11, PlanApplyRequestType, plan)
	stApply(t, separate, 12, EvalStatusUpdateRequestType, &EvalStatusUpdateRequest{Evals: []*state.Evaluation{blocked}})
	stApply(t, separate, 13, EvalStatusUpdateRequestType, &EvalStatusUpdateRequest{Evals: []*state.Evaluation{done}})

	combined := stStore(t, Config{})
	stRegister(t, combined, 10, job, stEval("e1", job))
	plan, blocked, done = closing(combined)
	plan.EvalStatus = []*state.Evaluation{blocked, done}
	stApply(t, combined, 13, PlanApplyRequestType, plan)

	// Only the index each was written at may differ.
	atIndex := func(e *state.Evaluation) *state.Evaluation {
		c := e.Copy()
		if c.CreateIndex > 10 {
			c.CreateIndex = 0
		}
		c.ModifyIndex = 0
		return c
	}
	for _, id := range []string{"e1", "b1"} {
		want := stMust[*state.Evaluation](t)(separate.EvalByID(nil, id))
		got := stMust[*state.Evaluation](t)(combined.EvalByID(nil, id))
		if !reflect.DeepEqual(atIndex(want), atIndex(got)) {
			t.Fatalf("eval %s written with the plan:\n got %#v\nwant %#v", id, got, want)
		}
	}
	if e := stMust[*state.Evaluation](t)(combined.EvalByID(nil, "e1")); e.Status != state.EvalStatusComplete || e.ModifyIndex != 13 {
		t.Fatalf("e1 = %s at %d, want complete at 13", e.Status, e.ModifyIndex)
	}
	wantSum := stMust[*state.JobSummary](t)(separate.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	gotSum := stMust[*state.JobSummary](t)(combined.JobSummaryByID(nil, state.DefaultNamespace, "web"))
	if !reflect.DeepEqual(wantSum.Summary, gotSum.Summary) || gotSum.Summary["web"].Queued != 1 {
		t.Fatalf("summary written with the plan = %+v, want %+v (1 queued)", gotSum.Summary, wantSum.Summary)
	}
	wantJob := stMust[*state.Job](t)(separate.JobByID(nil, state.DefaultNamespace, "web"))
	gotJob := stMust[*state.Job](t)(combined.JobByID(nil, state.DefaultNamespace, "web"))
	if wantJob.Status != gotJob.Status {
		t.Fatalf("job status %q, want %q", gotJob.Status, wantJob.Status)
	}
	evalEvents := func(s *Store) []state.Event {
		batches, _ := s.Events().After(11, 0)
		var out []state.Event
		for _, b := range batches {
			for _, ev := range b.Events {
				if e, ok := ev.Object.(*state.Evaluation); ok {
					ev.Index, ev.Object = 0, atIndex(e)
					out = append(out, ev)
				}
			}
		}
		return out
	}
	if want, got := evalEvents(separate), evalEvents(combined); len(got) != 2 || !reflect.DeepEqual(want, got) {
		t.Fatalf("evaluation events written with the plan:\n got %+v\nwant %+v", got, want)
	}
}

// TestPlanApplyOldEntryDecodes applies a plan entry as servers wrote it
// before PlanApplyRequest had EvalStatus: it decodes and leaves the
// evaluation alone.
func TestPlanApplyOldEntryDecodes(t *testing.T) {
	type oldPlanApplyRequest struct {
		EvalID     string
		Job        *state.Job
		JobAllocs  []*state.Allocation
		Allocs     []*state.Allocation
		Stops      []*state.Allocation
		Deployment *state.Deployment
		Evals      []*state.Evaluation
		Now        int64
	}
	s := stStore(t, Config{})
	job := stJob("web")
	stRegister(t, s, 10, job, stEval("e1", job))
	stored := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	data, err := Encode(PlanApplyRequestType, &oldPlanApplyRequest{EvalID: "e1", Job: stored,
		JobAllocs: []*state.Allocation{stAlloc("a1", job, "n1")}, Now: 1100})
	if err != nil {
		t.Fatal(err)
	}
	_, req, err := DecodeCommand(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.(*PlanApplyRequest); got.EvalStatus != nil || len(got.JobAllocs) != 1 {
		t.Fatalf("old entry decoded as %+v", got)
	}
	if err, ok := s.Apply(11, data).(error); ok {
		t.Fatal(err)
	}
	if a := stMust[*state.Allocation](t)(s.AllocByID(nil, "a1")); a == nil || a.CreateIndex != 11 {
		t.Fatalf("allocation of the old entry = %+v", a)
	}
	if e := stMust[*state.Evaluation](t)(s.EvalByID(nil, "e1")); e.Status != state.EvalStatusPending || e.ModifyIndex != 10 {
		t.Fatalf("eval after an old plan entry = %s at %d, want pending at 10", e.Status, e.ModifyIndex)
	}
}

// TestPackedPlanReadersKeepNothing: the pooled readers and writers of
// packed plans carry nothing from one plan to the next, even from one
// that failed half-way: after every truncation of an entry fails to
// unpack, the whole entry still unpacks to what was packed.
func TestPackedPlanReadersKeepNothing(t *testing.T) {
	job := stJob("web")
	var allocs []*state.Allocation
	for i := range 4 {
		a := stAlloc(fmt.Sprintf("a%02d", i), job, fmt.Sprintf("n%d", i))
		a.Metrics = &state.AllocMetric{NodesAvailable: map[string]int{"dc1": 4},
			Scores: state.ScoresOf(map[string]float64{a.NodeID + ".binpack": float64(i) / 10, "n9.binpack": 0.5, "n9.custom": 1})}
		allocs = append(allocs, a)
	}
	p, _, err := (&PlanApplyRequest{Job: job, JobAllocs: allocs}).Packed(nil)
	if err != nil {
		t.Fatal(err)
	}
	full := p.PackedJobAllocs
	packer := packed.New(logCodec{})
	want := func() []byte {
		q := &PlanApplyRequest{PackedJobAllocs: full}
		if err := q.unpack(packer); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(q.JobAllocs)
		return b
	}()
	for cut := 1; cut < len(full); cut++ {
		bad := &PlanApplyRequest{PackedJobAllocs: bytes.Clone(full[:cut])}
		if err := bad.unpack(packer); err == nil {
			continue
		}
		q := &PlanApplyRequest{PackedJobAllocs: full}
		if err := q.unpack(packer); err != nil {
			t.Fatalf("after a failed unpack cut at %d: %v", cut, err)
		}
		if got, _ := json.Marshal(q.JobAllocs); !bytes.Equal(got, want) {
			t.Fatalf("after a failed unpack cut at %d, the entry unpacks as\n%s\nwant\n%s", cut, got, want)
		}
	}
	// Packing again (a pooled writer) gives the same bytes.
	again, _, err := (&PlanApplyRequest{Job: job, JobAllocs: allocs}).Packed(nil)
	if err != nil || !bytes.Equal(again.PackedJobAllocs, full) {
		t.Fatalf("packed again: %v, %d bytes against %d, or different", err, len(again.PackedJobAllocs), len(full))
	}
}
