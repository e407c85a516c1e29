package leader

import (
	"context"
	"testing"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// gcFixture builds state whose objects have known ages at gcNow.
type gcFixture struct {
	t   *testing.T
	r   *memRaft
	now time.Time
}

func (f *gcFixture) ago(d time.Duration) int64 { return f.now.Add(-d).UnixNano() }

// evalWithAlloc writes a terminal evaluation of job, modified age ago,
// with one allocation of it on node in client status status, as old.
func (f *gcFixture) evalWithAlloc(id string, job *state.Job, node *state.Node, age time.Duration, status string) {
	e := rtEval(id, job.ID, 50)
	e.Type = job.Type
	e.Status = state.EvalStatusComplete
	e.ModifyTime = f.ago(age)
	f.r.putEvals(f.t, e)
	stored, _ := f.r.store.JobByID(nil, job.Namespace, job.ID)
	a := rtAlloc("alloc-"+id, node.ID, 10, 10, 10)
	a.JobID, a.EvalID, a.ClientStatus = job.ID, id, status
	f.r.must(f.t, store.PlanApplyRequestType, &store.PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{a}, Now: f.ago(age)})
}

// registerAt registers a job at time at, with its eval completed then.
func (f *gcFixture) registerAt(job *state.Job, age time.Duration) {
	id := "reg-" + job.ID
	f.r.must(f.t, store.JobRegisterRequestType, &store.JobRegisterRequest{Job: job.Copy(), Now: f.ago(age),
		Eval: &state.Evaluation{ID: id, Priority: 50, Type: job.Type, TriggeredBy: state.EvalTriggerJobRegister, Status: state.EvalStatusPending}})
	e := rtMustEval(f.t, f.r, id)
	e.Status, e.ModifyTime = state.EvalStatusComplete, f.ago(age)
	f.r.putEvals(f.t, e)
}

// stopAt stops a job at time age ago, its eval completed then.
func (f *gcFixture) stopAt(job *state.Job, age time.Duration) {
	id := "stop-" + job.ID
	f.r.must(f.t, store.JobDeregisterRequestType, &store.JobDeregisterRequest{Namespace: job.Namespace, JobID: job.ID, Now: f.ago(age),
		Eval: &state.Evaluation{ID: id, Priority: 50, Type: job.Type, TriggeredBy: state.EvalTriggerJobDeregister, Status: state.EvalStatusPending}})
	e := rtMustEval(f.t, f.r, id)
	e.Status, e.ModifyTime = state.EvalStatusComplete, f.ago(age)
	f.r.putEvals(f.t, e)
}

func (f *gcFixture) exists(kind, id string) bool {
	switch kind {
	case "eval":
		e, _ := f.r.store.EvalByID(nil, id)
		return e != nil
	case "alloc":
		a, _ := f.r.store.AllocByID(nil, id)
		return a != nil
	case "job":
		j, _ := f.r.store.JobByID(nil, state.DefaultNamespace, id)
		return j != nil
	case "node":
		n, _ := f.r.store.NodeByID(nil, id)
		return n != nil
	}
	f.t.Fatalf("unknown kind %s", kind)
	return false
}

func TestGarbageCollectionThresholds(t *testing.T) {
	f := &gcFixture{t: t, r: rtNewMemRaft(t), now: time.Unix(1_800_000_000, 0)}
	node := scheduler.MockNode("n1")
	f.r.registerNode(t, node)

	// A running service job: its old finished history goes, its recent
	// history stays.
	svc := scheduler.MockJob("svc")
	f.registerAt(svc, 3*time.Hour)
	f.evalWithAlloc("svc-old", svc, node, 2*time.Hour, state.AllocClientStatusComplete)
	f.evalWithAlloc("svc-recent", svc, node, 10*time.Minute, state.AllocClientStatusComplete)
	f.evalWithAlloc("svc-live", svc, node, 2*time.Hour, state.AllocClientStatusRunning)

	// Stopped jobs: purged after the job threshold.
	oldStop, newStop := scheduler.MockJob("old-stop"), scheduler.MockJob("new-stop")
	f.registerAt(oldStop, 6*time.Hour)
	f.stopAt(oldStop, 5*time.Hour)
	f.registerAt(newStop, 6*time.Hour)
	f.stopAt(newStop, time.Hour)

	// A finished batch job: its history stays with it until the job goes.
	bat := scheduler.MockBatchJob("bat")
	f.registerAt(bat, 2*time.Hour)
	f.evalWithAlloc("bat-done", bat, node, 2*time.Hour, state.AllocClientStatusComplete)

	// Down nodes.
	oldDown, newDown := scheduler.MockNode("old-down"), scheduler.MockNode("new-down")
	for _, n := range []*state.Node{oldDown, newDown} {
		f.r.registerNode(t, n)
	}
	f.r.must(t, store.NodeUpdateStatusRequestType, &store.NodeUpdateStatusRequest{NodeID: oldDown.ID, Status: state.NodeStatusDown,
		UpdatedAt: f.now.Add(-25 * time.Hour).Unix()})
	f.r.must(t, store.NodeUpdateStatusRequestType, &store.NodeUpdateStatusRequest{NodeID: newDown.ID, Status: state.NodeStatusDown,
		UpdatedAt: f.now.Add(-time.Hour).Unix()})

	gc := NewGarbageCollector(GCConfig{BatchSize: 2}, f.r.store, f.r, rtLog(), func() time.Time { return f.now })
	if err := gc.Collect(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind, id string
		kept     bool
	}{
		{"eval", "svc-old", false}, {"alloc", "alloc-svc-old", false},
		{"eval", "svc-recent", true}, {"alloc", "alloc-svc-recent", true},
		{"eval", "svc-live", true}, {"alloc", "alloc-svc-live", true},
		{"job", "svc", true},
		{"job", "old-stop", false}, {"eval", "reg-old-stop", false}, {"eval", "stop-old-stop", false},
		{"job", "new-stop", true}, {"eval", "stop-new-stop", true},
		{"job", "bat", true}, {"eval", "bat-done", true},
		{"node", oldDown.ID, false}, {"node", newDown.ID, true}, {"node", node.ID, true},
	}
	for _, w := range want {
		if got := f.exists(w.kind, w.id); got != w.kept {
			t.Errorf("%s %s kept = %v, want %v", w.kind, w.id, got, w.kept)
		}
	}
	if j, _ := f.r.store.JobByID(nil, state.DefaultNamespace, "bat"); j != nil && j.Status != state.JobStatusDead {
		t.Errorf("batch job status after collection = %s, want still dead", j.Status)
	}

	// Four hours on, the batch job and its history go together.
	f.now = f.now.Add(4 * time.Hour)
	if err := gc.Collect(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"bat-done", "reg-bat"} {
		if f.exists("eval", id) {
			t.Errorf("eval %s of the dead batch job kept", id)
		}
	}
	if f.exists("job", "bat") {
		t.Error("dead batch job kept past the job threshold")
	}
}

func TestForceGCIgnoresAgesNotRules(t *testing.T) {
	f := &gcFixture{t: t, r: rtNewMemRaft(t), now: time.Unix(1_800_000_000, 0)}
	node := scheduler.MockNode("n1")
	f.r.registerNode(t, node)
	svc := scheduler.MockJob("svc")
	f.registerAt(svc, time.Minute)
	f.evalWithAlloc("done", svc, node, time.Minute, state.AllocClientStatusComplete)
	f.evalWithAlloc("live", svc, node, time.Minute, state.AllocClientStatusRunning)
	stopped := scheduler.MockJob("stopped")
	f.registerAt(stopped, time.Minute)
	f.stopAt(stopped, time.Second)

	rt, err := NewRuntime(RuntimeConfig{Store: f.r.store, Raft: f.r, Logger: rtLog(), Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.ForceGC(context.Background()); err != ErrNotLeader {
		t.Fatalf("ForceGC while stopped = %v, want ErrNotLeader", err)
	}
	if err := rt.GC.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer rt.GC.Stop()
	if err := rt.ForceGC(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, id string
		kept     bool
	}{
		{"eval", "done", false}, {"alloc", "alloc-done", false},
		{"eval", "live", true}, {"alloc", "alloc-live", true},
		{"job", "stopped", false}, {"job", "svc", true},
	} {
		if got := f.exists(c.kind, c.id); got != c.kept {
			t.Errorf("%s %s kept = %v, want %v", c.kind, c.id, got, c.kept)
		}
	}
}

// putToken writes a management token that expires at exp (never when nil).
func (f *gcFixture) putToken(accessor string, exp *time.Time) {
	f.t.Helper()
	f.r.must(f.t, store.ACLTokenUpsertRequestType, &store.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{{
		AccessorID: accessor, SecretHash: state.HashSecret("secret-" + accessor), Type: state.ACLTokenTypeManagement,
		ExpirationTime: exp, CreateTime: f.now.Add(-24 * time.Hour)}}})
}

func (f *gcFixture) tokenKept(accessor string) bool {
	f.t.Helper()
	tok, err := f.r.store.ACLTokenByAccessorID(nil, accessor)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok != nil
}

func (f *gcFixture) checkTokens(step string, want map[string]bool) {
	f.t.Helper()
	for id, kept := range want {
		if got := f.tokenKept(id); got != kept {
			f.t.Errorf("%s: token %s kept = %v, want %v", step, id, got, kept)
		}
	}
}

func TestGarbageCollectionExpiredACLTokens(t *testing.T) {
	f := &gcFixture{t: t, r: rtNewMemRaft(t), now: time.Unix(1_800_000_000, 0).UTC()}
	at := func(d time.Duration) *time.Time { x := f.now.Add(d); return &x }
	f.putToken("expired-2h", at(-2*time.Hour))
	f.putToken("expired-3h", at(-3*time.Hour))
	f.putToken("expired-10m", at(-10*time.Minute))
	f.putToken("expires-1h", at(time.Hour))
	f.putToken("never", nil)

	deletes := 0
	f.r.fail = func(typ store.MessageType) error {
		if typ == store.ACLTokenDeleteRequestType {
			deletes++
		}
		return nil
	}
	gc := NewGarbageCollector(GCConfig{BatchSize: 1}, f.r.store, f.r, rtLog(), func() time.Time { return f.now })
	if err := gc.Collect(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	f.checkTokens("periodic", map[string]bool{"expired-2h": false, "expired-3h": false, "expired-10m": true, "expires-1h": true, "never": true})
	if deletes != 2 {
		t.Errorf("periodic collection of 2 tokens with BatchSize 1 used %d delete commands, want 2", deletes)
	}

	// A forced collection, as PUT /v1/system/gc runs it, ignores the
	// threshold but not the expiry.
	if err := gc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer gc.Stop()
	if err := gc.Force(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.checkTokens("forced", map[string]bool{"expired-10m": false, "expires-1h": true, "never": true})

	// Two hours on, the token that was live has been expired for an hour.
	f.now = f.now.Add(2 * time.Hour)
	if err := gc.Force(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.checkTokens("forced, later", map[string]bool{"expires-1h": false, "never": true})
}

func TestGarbageCollectionACLTokenThreshold(t *testing.T) {
	f := &gcFixture{t: t, r: rtNewMemRaft(t), now: time.Unix(1_800_000_000, 0).UTC()}
	exp := f.now.Add(time.Minute)
	f.putToken("tok", &exp)
	gc := NewGarbageCollector(GCConfig{ACLTokenThreshold: 30 * time.Minute}, f.r.store, f.r, rtLog(), func() time.Time { return f.now })
	for _, step := range []struct {
		after time.Duration
		kept  bool
	}{
		{0, true},                // not expired yet
		{30 * time.Minute, true}, // expired 29m ago
		{time.Minute, false},     // expired 30m ago: the threshold is reached
	} {
		f.now = f.now.Add(step.after)
		if err := gc.Collect(context.Background(), false); err != nil {
			t.Fatal(err)
		}
		f.checkTokens(f.now.Sub(exp).String()+" after expiry", map[string]bool{"tok": step.kept})
	}
}

func TestGarbageCollectionACLTokenDeletedMeanwhile(t *testing.T) {
	f := &gcFixture{t: t, r: rtNewMemRaft(t), now: time.Unix(1_800_000_000, 0).UTC()}
	exp := f.now.Add(-2 * time.Hour)
	for _, id := range []string{"a", "b", "c"} {
		f.putToken(id, &exp)
	}
	// A user deletes "b" after the collector took its snapshot and before
	// its delete commits: the first delete fails as not found.
	deletes := 0
	f.r.fail = func(typ store.MessageType) error {
		if typ != store.ACLTokenDeleteRequestType {
			return nil
		}
		deletes++
		if deletes == 1 {
			data, err := store.Encode(typ, &store.ACLTokenDeleteRequest{AccessorIDs: []string{"b"}})
			if err != nil {
				t.Fatal(err)
			}
			f.r.index++
			if resp, ok := f.r.store.Apply(f.r.index, data).(error); ok {
				t.Fatal(resp)
			}
		}
		return nil
	}
	gc := NewGarbageCollector(GCConfig{}, f.r.store, f.r, rtLog(), func() time.Time { return f.now })
	if err := gc.Collect(context.Background(), false); err != nil {
		t.Fatalf("collection with a token deleted meanwhile: %v", err)
	}
	f.checkTokens("after", map[string]bool{"a": false, "b": false, "c": false})
	if deletes != 2 {
		t.Errorf("delete commands = %d, want 2 (the batch, then its retry without the missing token)", deletes)
	}
}

// A dead child of a periodic job goes like any dead job, and its parent's
// children counts follow; the parent stays.
func TestGarbageCollectionDeadChildren(t *testing.T) {
	f := &gcFixture{t: t, r: rtNewMemRaft(t), now: time.Unix(1_800_000_000, 0)}
	parent := scheduler.MockBatchJob("cron")
	parent.Periodic = &state.PeriodicConfig{Enabled: true, SpecType: state.PeriodicSpecCron, Spec: "0 * * * *"}
	f.r.must(t, store.JobRegisterRequestType, &store.JobRegisterRequest{Job: parent.Copy(), Now: f.ago(8 * time.Hour)})
	child := parent.NewChild(state.PeriodicChildID("cron", f.now.Add(-7*time.Hour)))
	f.r.must(t, store.PeriodicLaunchRequestType, &store.PeriodicLaunchRequest{Child: child, Launch: f.ago(7 * time.Hour), Now: f.ago(7 * time.Hour),
		Eval: &state.Evaluation{ID: "reg-" + child.ID, Priority: 50, Type: child.Type, TriggeredBy: state.EvalTriggerPeriodicJob, Status: state.EvalStatusPending}})
	e := rtMustEval(t, f.r, "reg-"+child.ID)
	e.Status, e.ModifyTime = state.EvalStatusComplete, f.ago(7*time.Hour)
	f.r.putEvals(t, e)
	if c, _ := f.r.store.JobByID(nil, state.DefaultNamespace, child.ID); c == nil || c.Status != state.JobStatusDead {
		t.Fatalf("child before GC: %+v", c)
	}
	gc := NewGarbageCollector(GCConfig{}, f.r.store, f.r, rtLog(), func() time.Time { return f.now })
	if err := gc.Collect(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if f.exists("job", child.ID) || !f.exists("job", "cron") {
		t.Errorf("after GC: child kept %v, parent kept %v; want the child gone, the parent kept", f.exists("job", child.ID), f.exists("job", "cron"))
	}
	sum, _ := f.r.store.JobSummaryByID(nil, state.DefaultNamespace, "cron")
	if sum == nil || sum.Children == nil || *sum.Children != (state.JobChildrenSummary{}) {
		t.Errorf("parent's children after GC = %+v, want none", sum)
	}
}
