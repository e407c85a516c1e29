package leader

import (
	"context"
	"fmt"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// rtDrainFixture is a draining node with allocations, a ready node to move
// them to, and a drainer whose passes the test runs one by one.
type rtDrainFixture struct {
	t        *testing.T
	r        *memRaft
	d        *Drainer
	draining *state.Node
	spare    *state.Node
	now      time.Time
	ids      schedtest.IDs
}

func rtNewDrainFixture(t *testing.T) *rtDrainFixture {
	f := &rtDrainFixture{t: t, r: rtNewMemRaft(t), now: time.Unix(1_700_000_000, 0)}
	f.draining, f.spare = scheduler.MockNode("draining"), scheduler.MockNode("spare")
	f.r.registerNode(t, f.draining)
	f.r.registerNode(t, f.spare)
	f.d = NewDrainer(f.r.store, f.r, rtLog(), func() time.Time { return f.now }, f.ids.Next)
	return f
}

// job registers a job of type typ whose group migrates maxParallel at once.
func (f *rtDrainFixture) job(id, typ string, maxParallel int) *state.Job {
	j := scheduler.MockJob(id)
	j.Type = typ
	j.TaskGroups[0].Networks = nil
	if typ == state.JobTypeService {
		j.TaskGroups[0].Migrate.MaxParallel = maxParallel
	} else {
		j.TaskGroups[0].Migrate = nil
		j.TaskGroups[0].ReschedulePolicy = nil
		j.TaskGroups[0].Update = nil
	}
	f.r.registerJob(f.t, j)
	return j
}

// place puts n running allocations of job on node and returns their IDs.
func (f *rtDrainFixture) place(job *state.Job, node *state.Node, n int, prev ...string) []string {
	stored, _ := f.r.store.JobByID(nil, job.Namespace, job.ID)
	var ids []string
	for i := range n {
		a := rtAlloc(fmt.Sprintf("%s-%s-%s", job.ID, node.Name, f.ids.Next()), node.ID, 10, 10, 10)
		a.JobID = job.ID
		a.ClientStatus = state.AllocClientStatusRunning
		if i < len(prev) {
			a.PreviousAllocation = prev[i]
			a.ClientStatus = state.AllocClientStatusPending
		}
		f.r.must(f.t, store.PlanApplyRequestType, &store.PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{a}})
		ids = append(ids, a.ID)
	}
	return ids
}

func (f *rtDrainFixture) drain(ds state.DrainStrategy) {
	f.r.must(f.t, store.NodeUpdateDrainRequestType, &store.NodeUpdateDrainRequest{NodeID: f.draining.ID, DrainStrategy: &ds})
}

// pass runs one drainer pass.
func (f *rtDrainFixture) pass() {
	f.d.pass(context.Background(), memdb.NewWatchSet())
}

// marked lists the draining node's allocations marked for migration.
func (f *rtDrainFixture) marked() []string {
	allocs, _ := f.r.store.AllocsByNode(nil, f.draining.ID)
	var out []string
	for _, a := range allocs {
		if migrating(a) {
			out = append(out, a.ID)
		}
	}
	return out
}

// stopMarked does what the scheduler would: stops the marked allocations
// that are still live.
func (f *rtDrainFixture) stopMarked() []string {
	allocs, _ := f.r.store.AllocsByNode(nil, f.draining.ID)
	req := &store.PlanApplyRequest{}
	var ids []string
	for _, a := range allocs {
		if migrating(a) && !a.Terminal() {
			req.Stops = append(req.Stops, rtStop(a))
			ids = append(ids, a.ID)
		}
	}
	f.r.must(f.t, store.PlanApplyRequestType, req)
	return ids
}

func (f *rtDrainFixture) setRunning(ids []string) {
	var allocs []*state.Allocation
	for _, id := range ids {
		allocs = append(allocs, &state.Allocation{ID: id, ClientStatus: state.AllocClientStatusRunning})
	}
	f.r.must(f.t, store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{Allocs: allocs})
}

func (f *rtDrainFixture) node() *state.Node {
	n, _ := f.r.store.NodeByID(nil, f.draining.ID)
	return n
}

func TestDrainerMigratesInBatchesOfMaxParallel(t *testing.T) {
	f := rtNewDrainFixture(t)
	web := f.job("web", state.JobTypeService, 2)
	f.place(web, f.draining, 4)
	f.drain(state.DrainStrategy{Deadline: int64(time.Hour), ForceDeadline: f.now.Add(time.Hour).UnixNano()})

	f.pass()
	if got := f.marked(); len(got) != 2 {
		t.Fatalf("first batch marked %d allocations, want MaxParallel = 2", len(got))
	}
	evals, _ := f.r.store.EvalsByJob(nil, web.Namespace, web.ID)
	drainEvals := 0
	for _, e := range evals {
		if e.TriggeredBy == state.EvalTriggerNodeDrain && e.NodeID == f.draining.ID {
			drainEvals++
		}
	}
	if drainEvals != 1 {
		t.Fatalf("%d node-drain evals, want 1 for the batch", drainEvals)
	}
	f.pass()
	if got := f.marked(); len(got) != 2 {
		t.Fatalf("a second pass marked more while the batch is in flight: %d", len(got))
	}
	// The scheduler stops the batch and places replacements, which are
	// not running yet: still in flight.
	moved := f.stopMarked()
	replacements := f.place(web, f.spare, 2, moved...)
	f.pass()
	if got := f.marked(); len(got) != 2 {
		t.Fatalf("marked %d while the replacements are pending, want still 2", len(got))
	}
	f.setRunning(replacements)
	f.pass()
	if got := f.marked(); len(got) != 4 {
		t.Fatalf("after the replacements run marked %d, want all 4", len(got))
	}
	f.stopMarked()
	f.pass()
	n := f.node()
	if n.DrainStrategy != nil || n.Drain || n.SchedulingEligibility != state.NodeSchedulingIneligible {
		t.Fatalf("drained node: strategy %v drain %v eligibility %s, want done and ineligible", n.DrainStrategy, n.Drain, n.SchedulingEligibility)
	}
}

func TestDrainerOrderAndDeadline(t *testing.T) {
	cases := []struct {
		name       string
		ignoreSys  bool
		pastDue    bool
		wantMarked map[string]bool // job ID → marked on the first pass
		wantDone   bool
	}{
		{name: "system and batch wait for the service allocations",
			wantMarked: map[string]bool{"svc": true, "bat": false, "sys": false}},
		{name: "deadline passed: everything at once", pastDue: true,
			wantMarked: map[string]bool{"svc": true, "bat": true, "sys": true}},
		{name: "ignore system jobs", ignoreSys: true, pastDue: true,
			wantMarked: map[string]bool{"svc": true, "bat": true, "sys": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := rtNewDrainFixture(t)
			svc, bat, sys := f.job("svc", state.JobTypeService, 1), f.job("bat", state.JobTypeBatch, 1), f.job("sys", state.JobTypeSystem, 1)
			for _, j := range []*state.Job{svc, bat, sys} {
				f.place(j, f.draining, 1)
			}
			deadline := f.now.Add(time.Hour)
			if tc.pastDue {
				deadline = f.now.Add(-time.Second)
			}
			f.drain(state.DrainStrategy{Deadline: int64(time.Hour), ForceDeadline: deadline.UnixNano(), IgnoreSystemJobs: tc.ignoreSys})
			f.pass()
			allocs, _ := f.r.store.AllocsByNode(nil, f.draining.ID)
			for _, a := range allocs {
				if got := migrating(a); got != tc.wantMarked[a.JobID] {
					t.Errorf("job %s marked = %v, want %v", a.JobID, got, tc.wantMarked[a.JobID])
				}
			}
		})
	}
}

func TestDrainerSystemLastThenComplete(t *testing.T) {
	f := rtNewDrainFixture(t)
	svc, sys := f.job("svc", state.JobTypeService, 1), f.job("sys", state.JobTypeSystem, 1)
	f.place(svc, f.draining, 1)
	f.place(sys, f.draining, 1)
	f.drain(state.DrainStrategy{})
	f.pass()
	f.stopMarked()
	f.pass()
	allocs, _ := f.r.store.AllocsByNode(nil, f.draining.ID)
	for _, a := range allocs {
		if a.JobID == "sys" && !migrating(a) {
			t.Fatal("system allocation not marked once the service allocation left")
		}
	}
	if f.node().DrainStrategy == nil {
		t.Fatal("drain completed with a system allocation still running")
	}
	f.stopMarked()
	f.pass()
	if f.node().DrainStrategy != nil {
		t.Fatal("drain not completed once every allocation stopped")
	}
}

func TestDrainerLoopFollowsState(t *testing.T) {
	f := rtNewDrainFixture(t)
	web := f.job("web", state.JobTypeService, 1)
	f.place(web, f.draining, 1)
	if err := f.d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.d.Stop()
	f.drain(state.DrainStrategy{Deadline: int64(time.Hour), ForceDeadline: f.now.Add(time.Hour).UnixNano()})
	rtWaitState(t, f.r.store, 5*time.Second, "allocation marked", func() bool { return len(f.marked()) == 1 })
	f.stopMarked()
	rtWaitState(t, f.r.store, 5*time.Second, "drain complete", func() bool { return f.node().DrainStrategy == nil })
}
