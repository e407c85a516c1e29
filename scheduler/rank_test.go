package scheduler_test

import (
	"fmt"
	"reflect"
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

// runEval registers the job, processes an eval of it with the scheduler
// its type names and returns the eval as the scheduler closed it.
func runEval(t *testing.T, h *schedtest.Harness, job *state.Job) *state.Evaluation {
	t.Helper()
	stored := h.UpsertJob(job)
	if err := h.Process(BuiltinSchedulers[stored.Type], h.NewEval(stored, state.EvalTriggerJobRegister)); err != nil {
		t.Fatalf("process: %v", err)
	}
	return h.LastEval()
}

func TestRankBinPackPrefersFullerNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	busy, idle := MockNode("busy"), MockNode("idle")
	h.UpsertNodes(busy, idle)
	other := h.UpsertJob(MockJob("other"))
	filler := FitAlloc("00000000-0000-4000-8000-aaaaaaaaaaaa", 2000, 4000, 300)
	filler.NodeID, filler.Job, filler.JobID, filler.Namespace, filler.TaskGroup, filler.Name = busy.ID, other, other.ID, other.Namespace, "web", "other.web[0]"
	h.UpsertAllocs(filler)

	job := MockJob("web")
	job.TaskGroups[0].Count = 1
	runEval(t, h, job)
	live := h.LiveAllocs(job.Namespace, job.ID)
	if len(live) != 1 || live[0].NodeID != busy.ID {
		t.Fatalf("placed on %v, want the fuller node %s", live, busy.ID)
	}
	m := live[0].Metrics
	busyScore, ok1 := m.Scores.Get(busy.ID, state.ScoreBinPack)
	idleScore, ok2 := m.Scores.Get(idle.ID, state.ScoreBinPack)
	if !ok1 || !ok2 || busyScore <= idleScore {
		t.Fatalf("scores %v: the busy node must have the higher bin-pack score", m.Scores)
	}
}

func TestRankExhaustionMetrics(t *testing.T) {
	for _, c := range []struct {
		name string
		node func(*state.Node)
		job  func(*state.Job)
		dim  string
	}{
		{"cpu", nil, func(j *state.Job) { j.TaskGroups[0].Tasks[0].Resources.CPU = 5000 }, DimensionCPU},
		{"memory", func(n *state.Node) { n.NodeResources.MemoryMB = 400 }, nil, DimensionMemory},
		{"disk", nil, func(j *state.Job) { j.TaskGroups[0].EphemeralDisk.SizeMB = 200 * 1024 }, DimensionDisk},
		{"reserved port", func(n *state.Node) { n.ReservedResources.ReservedPorts = "22,8080" }, func(j *state.Job) {
			j.TaskGroups[0].Networks = []*state.NetworkResource{{ReservedPorts: []state.Port{{Label: "http", Value: 8080}}}}
		}, DimensionReservedPort},
		{"dynamic ports", func(n *state.Node) {
			n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 20000, 20000
		}, func(j *state.Job) {
			j.TaskGroups[0].Networks = []*state.NetworkResource{{DynamicPorts: []state.Port{{Label: "a"}, {Label: "b"}}}}
		}, DimensionDynamicPortsFull},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			var classes []string
			for i := range 3 {
				n := MockNode(fmt.Sprintf("n%d", i))
				n.NodeClass = "small"
				if c.node != nil {
					c.node(n)
				}
				n.ComputedClass = ComputeClass(n)
				classes = append(classes, n.ComputedClass)
				h.UpsertNodes(n)
			}
			job := MockJob("web")
			job.TaskGroups[0].Count = 4
			if c.job != nil {
				c.job(job)
			}
			ev := runEval(t, h, job)
			m := ev.FailedTGAllocs["web"]
			if m == nil {
				t.Fatalf("no failure recorded: %+v", ev)
			}
			if m.NodesEvaluated != 3 || m.NodesExhausted != 3 || m.NodesFiltered != 0 {
				t.Errorf("evaluated %d, exhausted %d, filtered %d; want 3, 3, 0", m.NodesEvaluated, m.NodesExhausted, m.NodesFiltered)
			}
			if m.DimensionExhausted[c.dim] != 3 || m.ClassExhausted["small"] != 3 {
				t.Errorf("dimensions %v, classes %v; want 3 of %q and of class small", m.DimensionExhausted, m.ClassExhausted, c.dim)
			}
			if m.NodesAvailable["dc1"] != 3 || m.NodesInPool != 3 {
				t.Errorf("available %v, in pool %d; want dc1:3 and 3", m.NodesAvailable, m.NodesInPool)
			}
			if m.CoalescedFailures != 3 {
				t.Errorf("coalesced %d, want 3 (4 placements, 1 reported)", m.CoalescedFailures)
			}
			if ev.QueuedAllocations["web"] != 4 {
				t.Errorf("queued %v, want web:4", ev.QueuedAllocations)
			}
			if sum, _ := h.Store.JobSummaryByID(nil, "default", "web"); sum.Summary["web"].Queued != 4 {
				t.Errorf("summary %+v, want 4 queued", sum.Summary["web"])
			}
			if ev.BlockedEval == "" || len(h.CreatedEvals) != 1 {
				t.Fatalf("blocked eval %q, created %d evals; want one blocked eval", ev.BlockedEval, len(h.CreatedEvals))
			}
			b := h.CreatedEvals[0]
			if b.Status != state.EvalStatusBlocked || b.ID != ev.BlockedEval || !b.ClassEligibility[classes[0]] || b.EscapedComputedClass {
				t.Errorf("blocked eval %+v: want status blocked, class %s eligible, not escaped", b, classes[0])
			}
		})
	}
}

func TestRankBlockedEvalClassEligibility(t *testing.T) {
	h := schedtest.NewHarness(t)
	linux, windows := MockNode("linux"), MockNode("windows")
	windows.Attributes["kernel.name"] = "windows"
	windows.ComputedClass = ComputeClass(windows)
	linux.NodeResources.MemoryMB = 300
	linux.ComputedClass = ComputeClass(linux)
	h.UpsertNodes(linux, windows)
	job := MockJob("web")
	job.TaskGroups[0].Constraints = []*state.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	ev := runEval(t, h, job)
	m := ev.FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered["${attr.kernel.name} = linux"] != 1 || m.DimensionExhausted[DimensionMemory] != 1 {
		t.Fatalf("metric %+v: want one node filtered by the constraint, one exhausted on memory", m)
	}
	b := h.CreatedEvals[0]
	want := map[string]bool{linux.ComputedClass: true, windows.ComputedClass: false}
	if len(b.ClassEligibility) != 2 || b.ClassEligibility[linux.ComputedClass] != true || b.ClassEligibility[windows.ComputedClass] != false {
		t.Fatalf("class eligibility %v, want %v", b.ClassEligibility, want)
	}
}

func TestRankJobAntiAffinity(t *testing.T) {
	h := schedtest.NewHarness(t)
	for i := range 4 {
		h.UpsertNodes(MockNode(fmt.Sprintf("n%d", i)))
	}
	job := MockJob("web")
	job.TaskGroups[0].Count = 4
	job.TaskGroups[0].Tasks[0].Resources.CPU = 100
	runEval(t, h, job)
	// Bin packing alone would stack all four on one node; the penalty
	// for a second allocation of the group on a node spreads them out
	// over the nodes a placement compares.
	perNode := map[string]int{}
	for _, a := range h.LiveAllocs(job.Namespace, job.ID) {
		perNode[a.NodeID]++
	}
	if len(perNode) < 2 {
		t.Fatalf("allocations per node %v: want them on more than one node", perNode)
	}
}

// TestRankBlockedEvalReblocks processes a blocked eval again: while the
// placements still fail it is re-blocked (no new blocked eval); once they
// succeed it completes.
func TestRankBlockedEvalReblocks(t *testing.T) {
	h := schedtest.NewHarness(t)
	small := MockNode("small")
	small.NodeResources.MemoryMB = 300
	small.ComputedClass = ComputeClass(small)
	h.UpsertNodes(small)
	job := MockJob("web")
	job.TaskGroups[0].Count = 2
	runEval(t, h, job)
	blocked := h.CreatedEvals[0]
	if err := h.Process(NewServiceScheduler, blocked); err != nil {
		t.Fatal(err)
	}
	if len(h.ReblockedEvals) != 1 || len(h.CreatedEvals) != 1 || h.ReblockedEvals[0].Status != state.EvalStatusBlocked {
		t.Fatalf("reblocked %v, created %d: want the blocked eval re-blocked, nothing new", h.ReblockedEvals, len(h.CreatedEvals))
	}
	h.UpsertNodes(MockNode("big"))
	if err := h.Process(NewServiceScheduler, blocked); err != nil {
		t.Fatal(err)
	}
	if ev := h.LastEval(); ev.ID != blocked.ID || ev.Status != state.EvalStatusComplete || len(h.LiveAllocs("default", "web")) != 2 {
		t.Fatalf("eval %+v: want the blocked eval complete with both placed", ev)
	}
}

// TestRankScoresRecorded: every placement keeps the scores of at most
// TopScores of the nodes it compared, its own node among them with the
// best normalized score, every node with a bin-pack score and a
// normalized score that is the mean of its components; and the stored
// allocation (through the plan's Raft command) reads them back alike.
func TestRankScoresRecorded(t *testing.T) {
	h := schedtest.NewHarness(t)
	for i := range 40 {
		h.UpsertNodes(MockNode(fmt.Sprintf("n%02d", i)))
	}
	job := MockJob("web")
	job.TaskGroups[0].Count = 60
	job.TaskGroups[0].Tasks[0].Resources.CPU = 100
	runEval(t, h, job)
	live := h.LiveAllocs(job.Namespace, job.ID)
	if len(live) != 60 {
		t.Fatalf("%d placed, want 60", len(live))
	}
	planned := map[string]*state.Allocation{}
	for _, p := range h.Plans {
		for _, list := range p.NodeAllocation {
			for _, a := range list {
				planned[a.ID] = a
			}
		}
	}
	withPenalty := 0
	for _, a := range live {
		s := a.Metrics.Scores
		comps := map[string][]float64{}
		norm := map[string]float64{}
		s.Each(func(node, comp string, v float64) bool {
			if comp == state.ScoreNormalized {
				norm[node] = v
			} else {
				comps[node] = append(comps[node], v)
			}
			return true
		})
		if len(norm) == 0 || len(norm) > TopScores || len(comps) != len(norm) {
			t.Fatalf("allocation %s: scores of %d nodes (%d with components), want 1 to %d: %v", a.ID, len(norm), len(comps), TopScores, s.Map())
		}
		own, ok := norm[a.NodeID]
		if !ok {
			t.Fatalf("allocation %s on %s: its node has no score: %v", a.ID, a.NodeID, s.Map())
		}
		for node, v := range norm {
			if v > own {
				t.Errorf("allocation %s: node %s scored %v, above its own node's %v", a.ID, node, v, own)
			}
			if _, ok := s.Get(node, state.ScoreBinPack); !ok {
				t.Errorf("allocation %s: node %s has no bin-pack score", a.ID, node)
			}
			sum := 0.0
			for _, c := range comps[node] {
				sum += c
			}
			if want := sum / float64(len(comps[node])); v != want {
				t.Errorf("allocation %s: node %s normalized %v, want the mean %v", a.ID, node, v, want)
			}
			if len(comps[node]) > 1 {
				withPenalty++
			}
		}
		if p := planned[a.ID]; p == nil || !reflect.DeepEqual(p.Metrics.Scores, s) {
			t.Errorf("allocation %s: stored scores %v, planned %v", a.ID, s.Map(), p)
		}
	}
	if withPenalty == 0 {
		t.Error("60 allocations on 40 nodes, and no node scored with an anti-affinity penalty")
	}
}

// TestRankMetricPerPlacement: each placement's metric counts its own walk
// (the maps one placement fills are never another's), while all of them
// report the same nodes available, a map the placements of an evaluation
// share.
func TestRankMetricPerPlacement(t *testing.T) {
	h := schedtest.NewHarness(t)
	linux, windows := MockNode("linux"), MockNode("windows")
	windows.Attributes["kernel.name"] = "windows"
	windows.ComputedClass = ComputeClass(windows)
	linux.ComputedClass = ComputeClass(linux)
	h.UpsertNodes(linux, windows)
	job := MockJob("web")
	job.TaskGroups[0].Constraints = []*state.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	runEval(t, h, job)
	allocs := h.LiveAllocs("default", "web")
	if len(allocs) < 2 {
		t.Fatalf("%d placed, want several", len(allocs))
	}
	for _, a := range allocs {
		m := a.Metrics
		if m.NodesFiltered != 1 || m.ConstraintFiltered["${attr.kernel.name} = linux"] != 1 || m.NodesAvailable["dc1"] != 2 {
			t.Fatalf("%s: filtered %d, %v, available %v; want its own one filtered node of two available",
				a.Name, m.NodesFiltered, m.ConstraintFiltered, m.NodesAvailable)
		}
	}
}

// TestRankFullNodeOncePerEval: a node found without room for the group is
// ranked once per evaluation; the later placements' walks count it
// exhausted without ranking it, and their metrics still say so.
func TestRankFullNodeOncePerEval(t *testing.T) {
	h := schedtest.NewHarness(t)
	small := MockNode("small")
	small.NodeResources.MemoryMB = 400 // 144 MB free after the reserved 256
	small.ComputedClass = ComputeClass(small)
	h.UpsertNodes(small, MockNode("a"), MockNode("b"))
	job := MockJob("web")
	job.TaskGroups[0].Count = 6
	job = h.UpsertJob(job)
	snap, _ := h.Store.Snapshot()
	s := NewServiceScheduler(h.Config(), snap, h)
	if err := s.Process(h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
		t.Fatal(err)
	}
	live := h.LiveAllocs(job.Namespace, job.ID)
	if len(live) != 6 {
		t.Fatalf("placed %d, want 6", len(live))
	}
	// Each placement ranks both roomy nodes (the limit is 2); the small
	// node is ranked once.
	if _, ranks, _ := EvalCounters(s); ranks != 6*2+1 {
		t.Errorf("ranked %d nodes, want %d", ranks, 6*2+1)
	}
	counted := 0
	for _, a := range live {
		if a.NodeID == small.ID {
			t.Fatalf("allocation %s placed on the full node", a.ID)
		}
		m := a.Metrics
		if m.DimensionExhausted[DimensionMemory] != m.NodesExhausted || m.NodesExhausted > 1 {
			t.Errorf("allocation %s: exhausted %d, by dimension %v", a.ID, m.NodesExhausted, m.DimensionExhausted)
		}
		counted += m.NodesExhausted
	}
	// The walks pass the small node in at least four placements (three
	// nodes, two ranked per walk), all but one of them from the memo.
	if counted < 4 {
		t.Errorf("the small node counted exhausted in %d placements, want at least 4", counted)
	}
}

// TestRankFullNodeAgainAfterAPlanChange: the memo of a full node holds
// only while the plan is unchanged on that node: a stop there (which may
// free room) has the next walk rank it again.
func TestRankFullNodeAgainAfterAPlanChange(t *testing.T) {
	h := schedtest.NewHarness(t)
	small, a, b := MockNode("small"), MockNode("a"), MockNode("b")
	small.NodeResources.MemoryMB = 400 // 144 MB free after the reserved 256
	for _, n := range []*state.Node{small, a, b} {
		n.ComputedClass = ComputeClass(n)
	}
	h.UpsertNodes(small, a, b)
	job := h.UpsertJob(MockJob("web"))
	snap, _ := h.Store.Snapshot()
	w := NewRankWalk(snap, job, []*state.Node{small, a, b}, 2)
	walk := func(wantRanks int, what string) {
		t.Helper()
		node, m, got, err := w.Select()
		if err != nil || node == "" || node == small.ID {
			t.Fatalf("%s: selected %q (%v)", what, node, err)
		}
		if got != wantRanks {
			t.Errorf("%s: ranked %d nodes, want %d", what, got, wantRanks)
		}
		if m.NodesExhausted != 1 || m.DimensionExhausted[DimensionMemory] != 1 {
			t.Errorf("%s: exhausted %d, by dimension %v; want the small node's memory", what, m.NodesExhausted, m.DimensionExhausted)
		}
	}
	walk(3, "first walk")
	walk(2, "second walk, the small node remembered full")
	w.PlanStop(&state.Allocation{ID: "gone", NodeID: small.ID})
	walk(3, "after a stop on the small node")
	walk(2, "the next walk")
}
