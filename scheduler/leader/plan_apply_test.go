package leader

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// rtSmallNode is a node with little room: 1000 MHz, 1000 MiB, 1000 MB of
// disk, nothing reserved.
func rtSmallNode(name string) *state.Node {
	n := scheduler.MockNode(name)
	n.NodeResources = &state.NodeResources{CPU: 1000, MemoryMB: 1000, DiskMB: 1000}
	n.ReservedResources = nil
	return n
}

// rtAlloc returns a pending allocation of job web on node asking cpu MHz,
// mem MiB, disk MB and the given host ports.
func rtAlloc(id, node string, cpu, mem, disk int, ports ...int) *state.Allocation {
	res := &state.AllocatedResources{
		Tasks:  map[string]*state.AllocatedTaskResources{"web": {CPU: cpu, MemoryMB: mem}},
		Shared: state.AllocatedSharedResources{DiskMB: disk},
	}
	for _, p := range ports {
		res.Shared.Ports = append(res.Shared.Ports, state.AllocatedPort{Label: fmt.Sprintf("p%d", p), Value: p})
	}
	return &state.Allocation{ID: id, Namespace: state.DefaultNamespace, JobID: "web", TaskGroup: "web", NodeID: node,
		Name: "web.web[0]", EvalID: "seed", AllocatedResources: res, DesiredStatus: state.AllocDesiredStatusRun,
		ClientStatus: state.AllocClientStatusPending}
}

// rtStop returns a stop of a.
func rtStop(a *state.Allocation) *state.Allocation {
	c := a.CopySkipJob()
	c.DesiredStatus = state.AllocDesiredStatusStop
	return c
}

func TestEvaluatePlan(t *testing.T) {
	r := rtNewMemRaft(t)
	job := scheduler.MockJob("web")
	r.registerJob(t, job)
	stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
	ready, down, draining := rtSmallNode("ready"), rtSmallNode("down"), rtSmallNode("draining")
	down.Status = state.NodeStatusDown
	draining.Drain = true
	draining.SchedulingEligibility = state.NodeSchedulingIneligible
	for _, n := range []*state.Node{ready, down, draining} {
		r.registerNode(t, n)
	}
	existing := rtAlloc("existing", ready.ID, 600, 600, 600, 20000)
	onDraining := rtAlloc("on-draining", draining.ID, 100, 100, 100)
	r.must(t, store.PlanApplyRequestType, &store.PlanApplyRequest{Job: stored, JobAllocs: []*state.Allocation{existing, onDraining}})
	existing, _ = r.store.AllocByID(nil, "existing")
	onDraining, _ = r.store.AllocByID(nil, "on-draining")

	place := func(node string, allocs ...*state.Allocation) map[string][]*state.Allocation {
		return map[string][]*state.Allocation{node: allocs}
	}
	cases := []struct {
		name     string
		plan     *scheduler.Plan
		overlay  map[string][]*state.Allocation
		accepted []string // nodes committed
		refresh  bool
	}{
		{"fits beside what is there", &scheduler.Plan{NodeAllocation: place(ready.ID, rtAlloc("n1", ready.ID, 400, 400, 400, 20001))},
			nil, []string{ready.ID}, false},
		{"over cpu", &scheduler.Plan{NodeAllocation: place(ready.ID, rtAlloc("n1", ready.ID, 401, 1, 1))},
			nil, nil, true},
		{"port taken", &scheduler.Plan{NodeAllocation: place(ready.ID, rtAlloc("n1", ready.ID, 1, 1, 1, 20000))},
			nil, nil, true},
		{"two new allocations on one port", &scheduler.Plan{NodeAllocation: place(ready.ID, rtAlloc("n1", ready.ID, 1, 1, 1, 20005), rtAlloc("n2", ready.ID, 1, 1, 1, 20005))},
			nil, nil, true},
		{"a stop in the same plan frees room", &scheduler.Plan{
			NodeUpdate:     place(ready.ID, rtStop(existing)),
			NodeAllocation: place(ready.ID, rtAlloc("n1", ready.ID, 1000, 1000, 1000, 20000)),
		}, nil, []string{ready.ID}, false},
		{"in-place update replaces the old version", &scheduler.Plan{NodeAllocation: place(ready.ID, rtAlloc("existing", ready.ID, 1000, 1000, 1000))},
			nil, []string{ready.ID}, false},
		{"node down", &scheduler.Plan{NodeAllocation: place(down.ID, rtAlloc("n1", down.ID, 1, 1, 1))}, nil, nil, true},
		{"node unknown", &scheduler.Plan{NodeAllocation: place("nope", rtAlloc("n1", "nope", 1, 1, 1))}, nil, nil, true},
		{"new placement on a draining node", &scheduler.Plan{NodeAllocation: place(draining.ID, rtAlloc("n1", draining.ID, 1, 1, 1))}, nil, nil, true},
		{"in-place update on a draining node", &scheduler.Plan{NodeAllocation: place(draining.ID, rtAlloc("on-draining", draining.ID, 200, 200, 200))},
			nil, []string{draining.ID}, false},
		{"stops always fit, even on a down node", &scheduler.Plan{NodeUpdate: place(down.ID, rtStop(rtAlloc("gone", down.ID, 1, 1, 1)))},
			nil, []string{down.ID}, false},
		{"partial: the node that fits commits", &scheduler.Plan{NodeAllocation: map[string][]*state.Allocation{
			ready.ID: {rtAlloc("n1", ready.ID, 100, 100, 100)},
			down.ID:  {rtAlloc("n2", down.ID, 1, 1, 1)},
		}}, nil, []string{ready.ID}, true},
		{"all at once: nothing commits", &scheduler.Plan{AllAtOnce: true, NodeAllocation: map[string][]*state.Allocation{
			ready.ID: {rtAlloc("n1", ready.ID, 100, 100, 100)},
			down.ID:  {rtAlloc("n2", down.ID, 1, 1, 1)},
		}}, nil, nil, true},
		{"in-flight allocations count", &scheduler.Plan{NodeAllocation: place(ready.ID, rtAlloc("n1", ready.ID, 300, 300, 300))},
			map[string][]*state.Allocation{ready.ID: {rtAlloc("inflight", ready.ID, 200, 200, 200)}}, nil, true},
		{"in-flight stops free room", &scheduler.Plan{NodeAllocation: place(ready.ID, rtAlloc("n1", ready.ID, 1000, 1000, 1000))},
			map[string][]*state.Allocation{ready.ID: {rtStop(existing)}}, []string{ready.ID}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, _ := r.store.Snapshot()
			tc.plan.Job = stored
			result, _, err := scheduler.EvaluatePlan(snap, tc.overlay, tc.plan)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for node := range result.NodeAllocation {
				got = append(got, node)
			}
			for node := range result.NodeUpdate {
				if _, ok := result.NodeAllocation[node]; !ok {
					got = append(got, node)
				}
			}
			if strings.Join(rtSorted(got), ",") != strings.Join(rtSorted(tc.accepted), ",") {
				t.Fatalf("accepted nodes %v, want %v", got, tc.accepted)
			}
			if (result.RefreshIndex != 0) != tc.refresh {
				t.Fatalf("RefreshIndex = %d, want set = %v", result.RefreshIndex, tc.refresh)
			}
		})
	}
	_ = onDraining
}

func TestPlanApplierRefusesStaleToken(t *testing.T) {
	r := rtNewMemRaft(t)
	rt := rtStartApplier(t, r)
	rt.Broker.Enqueue(rtEval("e1", "web", 50))
	e, tok := rtDequeueNow(t, rt.Broker)
	pending, err := rt.Plans.Enqueue(&scheduler.Plan{EvalID: e.ID, EvalToken: tok + "-stale", NodeUpdate: map[string][]*state.Allocation{"n": {{ID: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pending.Wait(context.Background()); !errors.Is(err, ErrPlanTokenMismatch) {
		t.Fatalf("stale token answered %v, want ErrPlanTokenMismatch", err)
	}
	if st := rt.Applier.Stats(); st.Refused != 1 || st.Committed != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

// rtStartApplier runs the broker and plan applier on r's store.
func rtStartApplier(t *testing.T, r *memRaft) *Runtime {
	t.Helper()
	return rtStartApplierWith(t, r, RuntimeConfig{})
}

// rtStartApplierWith is rtStartApplier with the rest of cfg (an Observer,
// a Foreground); its store, Raft, logger and workers are r's and one.
func rtStartApplierWith(t *testing.T, r *memRaft, cfg RuntimeConfig) *Runtime {
	t.Helper()
	cfg.Store, cfg.Raft, cfg.Logger, cfg.Workers = r.store, r, rtLog(), 1
	rt, err := NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Service{rt.Broker, rt.Applier} {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
	}
	return rt
}

// TestPlanApplierNeverOverCommits has several workers plan at random from
// stale snapshots against three small nodes, with clients finishing
// allocations meanwhile, and checks after every committed plan that no
// node is over-committed in CPU, memory or disk, no port is granted twice
// on a node, and the job summary equals the allocations.
func TestPlanApplierNeverOverCommits(t *testing.T) {
	testNeverOverCommits(t, nil)
}

// TestPlanApplierGroupCommitNeverOverCommits is the same workload with a
// slow log: plan commits overlap (several in flight at once, as group
// commit sends them), land in any order, and one in ten fails after it
// was sent; no node is ever over-committed.
func TestPlanApplierGroupCommitNeverOverCommits(t *testing.T) {
	var inApply, most atomic.Int64
	var calls atomic.Int64
	testNeverOverCommits(t, func(r *memRaft) {
		r.before = func(typ store.MessageType) {
			if !isPlanEntry(typ) {
				return
			}
			n := inApply.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Duration(calls.Add(1)%4) * time.Millisecond) // a disk write; uneven, so commits reorder
			inApply.Add(-1)
		}
		r.fail = func(typ store.MessageType) error {
			if isPlanEntry(typ) && calls.Load()%10 == 0 {
				return errors.New("injected: the commit failed")
			}
			return nil
		}
	})
	if most.Load() < 2 {
		t.Fatalf("at most %d plan commit in flight: the applier did not overlap commits", most.Load())
	}
}

func testNeverOverCommits(t *testing.T, configure func(*memRaft)) {
	const seed = 20240611
	const workers, rounds = 4, 60
	t.Logf("seed %d", seed)
	r := rtNewMemRaft(t)
	if configure != nil {
		configure(r)
	}
	job := scheduler.MockJob("web")
	r.registerJob(t, job)
	stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
	nodes := []*state.Node{rtSmallNode("n1"), rtSmallNode("n2"), rtSmallNode("n3")}
	for _, n := range nodes {
		r.registerNode(t, n)
	}
	var violations []string
	r.after = func(typ store.MessageType, index uint64) {
		if isPlanEntry(typ) || typ == store.AllocClientUpdateRequestType {
			violations = append(violations, rtInvariants(r.store, nodes, index)...)
		}
	}
	rt := rtStartApplier(t, r)

	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := &schedtest.IDs{}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for round := range rounds {
				evalID := fmt.Sprintf("w%d-r%d", w, round)
				rt.Broker.Enqueue(rtEval(evalID, evalID, 50))
				e, tok, err := rt.Broker.Dequeue(context.Background(), []string{state.JobTypeService}, 5*time.Second)
				if err != nil || e == nil {
					t.Errorf("dequeue: %v", err)
					return
				}
				plan := rtRandomPlan(rng, r.store, stored, nodes, ids)
				plan.EvalID, plan.EvalToken = e.ID, tok
				pending, err := rt.Plans.Enqueue(plan)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := pending.Wait(context.Background()); err != nil {
					if strings.Contains(err.Error(), "injected") {
						_ = rt.Broker.Ack(e.ID, tok)
						continue
					}
					t.Errorf("plan: %v", err)
					return
				}
				_ = rt.Broker.Ack(e.ID, tok)
				if rng.IntN(3) == 0 {
					rtFinishSome(t, rng, r, &mu)
				}
			}
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	st := rt.Applier.Stats()
	t.Logf("applier: %+v", st)
	if st.Placements == 0 || st.NodesRejected == 0 {
		t.Fatalf("the workload did not contend (placements %d, nodes rejected %d)", st.Placements, st.NodesRejected)
	}
	// A node plan is left out only for what it places: each refused one
	// counts at least one placement.
	if st.PlacementsRefused < st.NodesRejected {
		t.Errorf("%d placements refused for %d node plans left out", st.PlacementsRefused, st.NodesRejected)
	}
}

// rtRandomPlan plans one to three placements and maybe a stop from a
// snapshot, ignoring what other workers do meanwhile.
func rtRandomPlan(rng *rand.Rand, store *store.Store, job *state.Job, nodes []*state.Node, ids *schedtest.IDs) *scheduler.Plan {
	plan := &scheduler.Plan{Job: job, Priority: 50, NodeAllocation: map[string][]*state.Allocation{}, NodeUpdate: map[string][]*state.Allocation{},
		AllAtOnce: rng.IntN(5) == 0}
	for range 1 + rng.IntN(3) {
		n := nodes[rng.IntN(len(nodes))]
		a := rtAlloc(ids.Next(), n.ID, 100+rng.IntN(400), 100+rng.IntN(400), 100+rng.IntN(400), 20000+rng.IntN(8))
		a.Job = job
		plan.NodeAllocation[n.ID] = append(plan.NodeAllocation[n.ID], a)
	}
	if rng.IntN(2) == 0 {
		n := nodes[rng.IntN(len(nodes))]
		allocs, _ := store.AllocsByNode(nil, n.ID)
		var live []*state.Allocation
		for _, a := range allocs {
			if !a.Terminal() {
				live = append(live, a)
			}
		}
		if len(live) > 0 {
			plan.NodeUpdate[n.ID] = append(plan.NodeUpdate[n.ID], rtStop(live[rng.IntN(len(live))]))
		}
	}
	return plan
}

// rtFinishSome reports a random live allocation complete, as a client would.
func rtFinishSome(t *testing.T, rng *rand.Rand, r *memRaft, mu *sync.Mutex) {
	mu.Lock()
	defer mu.Unlock()
	allocs, _ := r.store.Allocs(nil, "*", "")
	var live []*state.Allocation
	for _, a := range allocs {
		if !a.Terminal() {
			live = append(live, a)
		}
	}
	if len(live) == 0 {
		return
	}
	a := live[rng.IntN(len(live))]
	if _, _, err := r.Apply(context.Background(), store.AllocClientUpdateRequestType, &store.AllocClientUpdateRequest{
		Allocs: []*state.Allocation{{ID: a.ID, ClientStatus: state.AllocClientStatusComplete}}}); err != nil {
		t.Error(err)
	}
}

// rtInvariants checks the store independently of AllocsFit.
func rtInvariants(store *store.Store, nodes []*state.Node, index uint64) []string {
	var out []string
	for _, n := range nodes {
		allocs, _ := store.AllocsByNode(nil, n.ID)
		var cpu, mem, disk int
		ports := map[int]string{}
		for _, a := range allocs {
			if a.Terminal() {
				continue
			}
			for _, tr := range a.AllocatedResources.Tasks {
				cpu += tr.CPU
				mem += tr.MemoryMB
			}
			disk += a.AllocatedResources.Shared.DiskMB
			for _, p := range a.AllocatedResources.Shared.Ports {
				if other, dup := ports[p.Value]; dup {
					out = append(out, fmt.Sprintf("index %d: node %s: port %d granted to %s and %s", index, n.Name, p.Value, other, a.ID))
				}
				ports[p.Value] = a.ID
			}
		}
		c := n.NodeResources
		if cpu > c.CPU || mem > c.MemoryMB || disk > c.DiskMB {
			out = append(out, fmt.Sprintf("index %d: node %s over-committed: cpu %d/%d mem %d/%d disk %d/%d",
				index, n.Name, cpu, c.CPU, mem, c.MemoryMB, disk, c.DiskMB))
		}
	}
	sum, _ := store.JobSummaryByID(nil, state.DefaultNamespace, "web")
	allocs, _ := store.AllocsByJob(nil, state.DefaultNamespace, "web", false)
	want := state.TaskGroupSummary{Queued: sum.Summary["web"].Queued}
	for _, a := range allocs {
		switch a.ClientStatus {
		case state.AllocClientStatusPending:
			want.Starting++
		case state.AllocClientStatusRunning:
			want.Running++
		case state.AllocClientStatusComplete:
			want.Complete++
		case state.AllocClientStatusFailed:
			want.Failed++
		case state.AllocClientStatusLost:
			want.Lost++
		}
	}
	if got := sum.Summary["web"]; got != want {
		out = append(out, fmt.Sprintf("index %d: summary %+v, allocations say %+v", index, got, want))
	}
	return out
}

func rtSorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// isPlanEntry reports whether typ is a plan's results, packed or not.
func isPlanEntry(typ store.MessageType) bool {
	return typ == store.PlanApplyRequestType || typ == store.PlanApplyPackedRequestType || typ == store.PlanApplyRefRequestType
}

// evaluatedObserver counts the plans the applier checked.
type evaluatedObserver struct {
	nopObserver
	evaluated chan struct{}
}

func (o evaluatedObserver) PlanEvaluated(time.Duration) { o.evaluated <- struct{}{} }

// TestPlanApplierRefusalRefreshesPastTheCommitInFlight: a plan refused on
// a node because a commit still in flight fills it is answered only once
// that commit has landed, with a refresh index that covers it. Answered
// at once with the store's index, the worker refreshed to a state that
// did not show the in-flight placements, chose the same node again, was
// refused again, and after five such attempts gave its evaluation up to a
// follow-up 5 s later (sched-bench's "running" scenario: the last job
// running ~5 s late in one run of ten or twenty, on the dev agent's own
// node, the smallest, which fills first).
func TestPlanApplierRefusalRefreshesPastTheCommitInFlight(t *testing.T) {
	r := rtNewMemRaft(t)
	job := scheduler.MockJob("web")
	r.registerJob(t, job)
	stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
	node := rtSmallNode("n1")
	r.registerNode(t, node)

	// The first plan's commit is held in "Raft" until released.
	held, releaseOnce := holdFirstPlanCommit(r)

	obs := evaluatedObserver{evaluated: make(chan struct{}, 4)}
	rt := rtStartApplierWith(t, r, RuntimeConfig{Observe: obs})
	t.Cleanup(releaseOnce) // before the applier stops: it waits for the held commit
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitEvaluated := func(what string) {
		t.Helper()
		select {
		case <-obs.evaluated:
		case <-ctx.Done():
			t.Fatalf("the applier did not check %s", what)
		}
	}
	submit := func(evalID, allocID string) *PendingPlan {
		t.Helper()
		rt.Broker.Enqueue(rtEval(evalID, evalID, 50))
		e, tok := rtDequeueNow(t, rt.Broker)
		if e == nil {
			t.Fatalf("evaluation %s not delivered", evalID)
		}
		a := rtAlloc(allocID, node.ID, 800, 100, 100)
		a.Job = stored
		p, err := rt.Plans.Enqueue(&scheduler.Plan{EvalID: e.ID, EvalToken: tok, Job: stored, Priority: 50,
			NodeAllocation: map[string][]*state.Allocation{node.ID: {a}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// 800 of the node's 1000 MHz, committed but not landed yet.
	first := submit("e-first", "a-first")
	waitEvaluated("the first plan")
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the first plan's commit did not reach Raft")
	}
	before := r.store.LatestIndex()
	// 800 more: refused, the node being full with the commit in flight.
	second := submit("e-second", "a-second")
	waitEvaluated("the second plan")
	select {
	case <-second.done:
		t.Errorf("the refused plan was answered before the commit it was refused for landed")
	default:
	}
	releaseOnce()

	res1, err := first.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res1.NodeAllocation[node.ID]) != 1 || res1.AllocIndex <= before {
		t.Fatalf("first plan: committed %v at %d (store at %d before it)", res1.NodeAllocation, res1.AllocIndex, before)
	}
	res2, err := second.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res2.NodeAllocation) != 0 {
		t.Fatalf("second plan committed %v on a node the first one fills", res2.NodeAllocation)
	}
	if res2.RefreshIndex < res1.AllocIndex {
		t.Fatalf("refused plan's refresh index %d is before the commit it was refused for (%d): "+
			"the scheduler's fresh state would not show what the node was refused for", res2.RefreshIndex, res1.AllocIndex)
	}
	// And that state shows the node full: a retry goes elsewhere.
	snap, err := snapshotAt(ctx, r.store, res2.RefreshIndex, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := snap.AllocByID(nil, "a-first"); a == nil {
		t.Fatalf("the state at the refresh index %d does not hold the allocation the node was refused for", res2.RefreshIndex)
	}
}

// TestPlanApplierLandedCommitsLeaveTheOverlay: a commit that has landed
// behind an older one still in flight is no longer counted in the
// overlay, where it would count twice (it is in the state): a plan that
// fits beside it is accepted.
func TestPlanApplierLandedCommitsLeaveTheOverlay(t *testing.T) {
	r := rtNewMemRaft(t)
	job := scheduler.MockJob("web")
	r.registerJob(t, job)
	stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
	n1, n2 := rtSmallNode("n1"), rtSmallNode("n2")
	r.registerNode(t, n1)
	r.registerNode(t, n2)

	// The first plan's commit is held in "Raft" until released.
	held, release := holdFirstPlanCommit(r)
	rt := rtStartApplier(t, r)
	t.Cleanup(release) // before the applier stops: it waits for the held commit
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	submit := func(evalID, allocID, nodeID string, cpu int) *PendingPlan {
		t.Helper()
		rt.Broker.Enqueue(rtEval(evalID, evalID, 50))
		e, tok := rtDequeueNow(t, rt.Broker)
		if e == nil {
			t.Fatalf("evaluation %s not delivered", evalID)
		}
		a := rtAlloc(allocID, nodeID, cpu, 100, 100)
		a.Job = stored
		p, err := rt.Plans.Enqueue(&scheduler.Plan{EvalID: e.ID, EvalToken: tok, Job: stored, Priority: 50,
			NodeAllocation: map[string][]*state.Allocation{nodeID: {a}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	submit("e-held", "a-held", n1.ID, 100) // stays in flight
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the first plan's commit did not reach Raft")
	}
	res, err := submit("e-landed", "a-landed", n2.ID, 600).Wait(ctx)
	if err != nil || len(res.NodeAllocation[n2.ID]) != 1 {
		t.Fatalf("second plan: %v, committed %v", err, res)
	}
	// The workers see the held commit's placement (PlanQueue.Inflight).
	if !inflightHas(rt.Plans, n1.ID, "a-held") {
		t.Errorf("the commit in flight is not published to the workers: %v", rt.Plans.Inflight())
	}
	res, err = submit("e-beside", "a-beside", n2.ID, 300).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeAllocation[n2.ID]) != 1 {
		t.Fatalf("300 MHz beside 600 of 1000 refused (refresh index %d): the landed commit was counted twice", res.RefreshIndex)
	}
	if inflightHas(rt.Plans, n2.ID, "a-landed") {
		t.Error("a landed commit is still published after the next plan")
	}
	release()
	rt.Applier.Stop()
	if m := rt.Plans.Inflight(); m != nil {
		t.Errorf("a stopped applier leaves commits published: %v", m)
	}
}

// inflightHas reports whether q publishes a commit in flight whose probe
// is id and which adds to node.
func inflightHas(q *PlanQueue, node, id string) bool {
	for _, c := range q.Inflight() {
		if _, ok := c.Usage[node]; ok && c.Probe == id {
			return true
		}
	}
	return false
}

// holdFirstPlanCommit makes r hold the first plan entry it is asked to
// apply: held is closed once that commit is waiting, and release (safe to
// call more than once) lets it go on.
func holdFirstPlanCommit(r *memRaft) (held <-chan struct{}, release func()) {
	h, rel := make(chan struct{}), make(chan struct{})
	var plans atomic.Int64
	r.before = func(typ store.MessageType) {
		if isPlanEntry(typ) && plans.Add(1) == 1 {
			close(h)
			<-rel
		}
	}
	var once sync.Once
	return h, func() { once.Do(func() { close(rel) }) }
}

// TestInflightStateCountsPendingPlacements: a worker's snapshot counts, in
// a node's usage, the allocations the commits in flight create and it
// does not hold, once; an update in place is not counted again; a commit
// it holds (landed: its probe is stored) is not counted twice; a commit
// that creates nothing is not published; listing every node's usage
// (EachNodeUsage) sums to the same; without anything in flight that the
// snapshot lacks, the snapshot is handed over as it is. What the
// applier publishes: TestPlanApplierLandedCommitsLeaveTheOverlay.
func TestInflightStateCountsPendingPlacements(t *testing.T) {
	r := rtNewMemRaft(t)
	job := scheduler.MockJob("web")
	r.registerJob(t, job)
	n1, n2 := rtSmallNode("n1"), rtSmallNode("n2")
	r.registerNode(t, n1)
	r.registerNode(t, n2)
	landedAlloc := rtAlloc("landed", n1.ID, 100, 64, 10)
	landedAlloc.Job, _ = r.store.JobByID(nil, job.Namespace, job.ID)
	r.must(t, store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{landedAlloc}})
	snap, err := r.store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}

	q := NewPlanQueue()
	pool := &WorkerPool{plans: q}
	if got := pool.withInflight(snap); got != scheduler.State(snap) {
		t.Fatal("nothing in flight: the snapshot should be handed over as it is")
	}
	// An update in place of the stored allocation (it has a CreateIndex)
	// and two new placements, in flight; a commit that landed; a commit
	// that creates nothing.
	update := rtAlloc("landed", n1.ID, 150, 64, 10)
	update.CreateIndex = landedAlloc.CreateIndex
	if update.CreateIndex == 0 {
		update.CreateIndex = 1
	}
	pendingResult := &scheduler.PlanResult{NodeAllocation: map[string][]*state.Allocation{
		n1.ID: {update, rtAlloc("p1", n1.ID, 200, 128, 20), rtAlloc("p2", n1.ID, 300, 256, 30)},
	}}
	landedResult := &scheduler.PlanResult{NodeAllocation: map[string][]*state.Allocation{
		n1.ID: {rtAlloc("landed", n1.ID, 100, 64, 10)},
		n2.ID: {rtAlloc("landed", n2.ID, 100, 64, 10)},
	}}
	stopsOnly := &scheduler.PlanResult{NodeUpdate: map[string][]*state.Allocation{n1.ID: {rtStop(landedAlloc)}}}
	if inflightCommit(stopsOnly) != nil {
		t.Error("a commit that creates nothing adds to the workers' usage")
	}
	q.setInflight([]*commitOp{{adds: inflightCommit(landedResult)}, {adds: inflightCommit(pendingResult)}, {adds: inflightCommit(stopsOnly)}})
	if n := len(q.Inflight()); n != 2 {
		t.Errorf("%d commits published, want the two that create allocations", n)
	}
	st := pool.withInflight(snap)
	if is, ok := st.(inflightState); !ok || len(is.inflight) != 1 {
		t.Fatalf("the snapshot should be wrapped with the one commit it does not hold: %#v", st)
	}
	u, err := st.NodeUsage(nil, n1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.CPU != 600 || u.MemoryMB != 448 || u.DiskMB != 60 || u.Allocs != 3 {
		t.Errorf("n1 usage %+v: want the landed allocation once plus p1 and p2 (cpu 600, memory 448, disk 60, 3 allocations)", *u)
	}
	base, _ := snap.NodeUsage(nil, n1.ID)
	if base.CPU != 100 || base.Allocs != 1 {
		t.Errorf("the snapshot's own usage changed: %+v", *base)
	}
	if u2, _ := st.NodeUsage(nil, n2.ID); u2 != nil && (u2.CPU != 0 || u2.Allocs != 0) {
		t.Errorf("n2, whose only commit in flight landed: %+v", *u2)
	}
	// The same in one pass (scheduler.NodeUsageScanner): a node's usage
	// is the sum of its parts.
	sums := map[string]state.NodeUsage{}
	err = st.(scheduler.NodeUsageScanner).EachNodeUsage(func(p *state.NodeUsage) {
		s := sums[p.NodeID]
		s.CPU, s.MemoryMB, s.DiskMB, s.Allocs = s.CPU+p.CPU, s.MemoryMB+p.MemoryMB, s.DiskMB+p.DiskMB, s.Allocs+p.Allocs
		sums[p.NodeID] = s
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := sums[n1.ID]; s.CPU != u.CPU || s.MemoryMB != u.MemoryMB || s.DiskMB != u.DiskMB || s.Allocs != u.Allocs {
		t.Errorf("n1 usage listed %+v, read %+v", s, *u)
	}
	if s := sums[n2.ID]; s.CPU != 0 || s.Allocs != 0 {
		t.Errorf("n2 usage listed %+v, want none", s)
	}
	q.setInflight([]*commitOp{{adds: inflightCommit(landedResult)}})
	if got := pool.withInflight(snap); got != scheduler.State(snap) {
		t.Error("only landed commits in flight: the snapshot should be handed over as it is")
	}
	q.setInflight(nil)
	if q.Inflight() != nil {
		t.Error("an empty overlay is still published")
	}
}

// TestPlanApplierSendsFewerCommitsDuringABurst: while a burst of the
// API's writes is in flight, the commits waiting in Raft at once write at
// most busyInflightAllocs allocations, or are one commit (a write queues
// behind every one of them): two plans of 700, not three; small plans,
// or any plans without a burst, go up to maxInflightCommits at once.
func TestPlanApplierSendsFewerCommitsDuringABurst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		burst    bool
		perPlan  int
		want     int
		bigNodes bool
	}{
		{"burst, large plans", true, 700, 2, true},
		{"burst, small plans", true, 1, 5, false},
		{"quiet, large plans", false, 700, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rtNewMemRaft(t)
			job := scheduler.MockJob("web")
			r.registerJob(t, job)
			stored, _ := r.store.JobByID(nil, job.Namespace, job.ID)
			var nodes []*state.Node
			for i := range 5 {
				n := rtSmallNode(fmt.Sprintf("n%d", i))
				if tc.bigNodes {
					n.NodeResources = &state.NodeResources{CPU: 100000, MemoryMB: 100000, DiskMB: 100000}
				}
				r.registerNode(t, n)
				nodes = append(nodes, n)
			}
			// Every plan commit waits in "Raft" until released.
			var waiting, most atomic.Int64
			rel := make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(rel) }) }
			r.before = func(typ store.MessageType) {
				if !isPlanEntry(typ) {
					return
				}
				n := waiting.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-rel
				waiting.Add(-1)
			}
			fg := NewForeground()
			if tc.burst {
				for range foregroundBusy {
					t.Cleanup(fg.Begin())
				}
			}
			rt := rtStartApplierWith(t, r, RuntimeConfig{Foreground: fg})
			t.Cleanup(release) // before the applier stops: it waits for its commits
			var pending []*PendingPlan
			for i, n := range nodes {
				id := fmt.Sprintf("e%d", i)
				rt.Broker.Enqueue(rtEval(id, id, 50))
				e, tok := rtDequeueNow(t, rt.Broker)
				if e == nil {
					t.Fatalf("evaluation %s not delivered", id)
				}
				var allocs []*state.Allocation
				for j := range tc.perPlan {
					a := rtAlloc(fmt.Sprintf("a%s-%d", id, j), n.ID, 10, 10, 10)
					a.Job = stored
					allocs = append(allocs, a)
				}
				p, err := rt.Plans.Enqueue(&scheduler.Plan{EvalID: e.ID, EvalToken: tok, Job: stored, Priority: 50,
					NodeAllocation: map[string][]*state.Allocation{n.ID: allocs}})
				if err != nil {
					t.Fatal(err)
				}
				pending = append(pending, p)
			}
			// The applier stops sending at the limit: that many commits
			// wait in Raft, the next plan is checked and held, the rest
			// stay queued.
			queued := max(len(nodes)-tc.want-1, 0)
			testutil.WaitFor(t, 10*time.Second, "the commits to reach the limit", func() bool {
				return waiting.Load() == int64(tc.want) && rt.Plans.Len() == queued
			})
			if m := most.Load(); m != int64(tc.want) {
				t.Fatalf("%d commits waited in Raft at once, want %d", m, tc.want)
			}
			release()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i, p := range pending {
				res, err := p.Wait(ctx)
				if err != nil || len(res.NodeAllocation[nodes[i].ID]) != tc.perPlan {
					t.Fatalf("plan %d: %v, committed %v", i, err, res)
				}
			}
		})
	}
}
