package scheduler_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
)

func TestGenericPartialCommit(t *testing.T) {
	h := schedtest.NewHarness(t)
	for i := range 3 {
		h.UpsertNodes(MockNode(fmt.Sprintf("n%d", i)))
	}
	// The first plan commits one node's placements only.
	h.PlanFilter = func(p *Plan) *PlanResult {
		res := &PlanResult{NodeAllocation: map[string][]*state.Allocation{}}
		if len(h.Plans) == 1 {
			first := slices.Sorted(maps.Keys(p.NodeAllocation))[0]
			res.NodeAllocation[first] = p.NodeAllocation[first]
			return res
		}
		res.NodeAllocation = p.NodeAllocation
		return res
	}
	job := MockJob("web")
	job.TaskGroups[0].Count = 9
	ev := runEval(t, h, job)
	if len(h.Plans) != 2 {
		t.Fatalf("%d plans, want 2 (a retry after the partial commit)", len(h.Plans))
	}
	if n := len(h.LiveAllocs("default", "web")); n != 9 || ev.Status != state.EvalStatusComplete {
		t.Fatalf("%d placed, eval %s: want 9 and complete", n, ev.Status)
	}
	names := map[string]bool{}
	for _, a := range h.LiveAllocs("default", "web") {
		if names[a.Name] {
			t.Fatalf("name %s given twice", a.Name)
		}
		names[a.Name] = true
	}
}

func TestGenericMaxPlanAttempts(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(MockNode("n0"))
	h.PlanFilter = func(p *Plan) *PlanResult { return &PlanResult{} }
	ev := runEval(t, h, MockJob("web"))
	if len(h.Plans) != MaxPlanAttempts {
		t.Fatalf("%d plans, want %d", len(h.Plans), MaxPlanAttempts)
	}
	if len(h.CreatedEvals) != 1 {
		t.Fatalf("created %d evals, want a follow-up", len(h.CreatedEvals))
	}
	next := h.CreatedEvals[0]
	if next.TriggeredBy != state.EvalTriggerMaxPlans || next.Status != state.EvalStatusPending || !next.WaitUntil.After(h.Now) {
		t.Fatalf("follow-up %+v", next)
	}
	if ev.Status != state.EvalStatusFailed || ev.NextEval != next.ID {
		t.Fatalf("eval %+v: want failed, pointing to the follow-up", ev)
	}
}

// TestGenericRandomInvariants drives random jobs, failures and node
// losses through the schedulers with every plan committed as is, and
// checks after every eval that no node is over-committed, no port is
// granted twice, no live name repeats within a group and the job
// summaries equal the allocations.
func TestGenericRandomInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			h := schedtest.NewHarness(t)
			var nodes []*state.Node
			for i := range 8 {
				n := MockNode(fmt.Sprintf("n%d", i))
				n.NodeResources.CPU = 1000 + rng.IntN(4)*1000
				n.NodeResources.MemoryMB = 1024 + rng.IntN(4)*1024
				n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 20000, 20030
				n.Datacenter = []string{"dc1", "dc2"}[i%2]
				n.ComputedClass = ComputeClass(n)
				nodes = append(nodes, n)
				h.UpsertNodes(n)
			}
			var jobs []string
			for round := range 60 {
				switch r := rng.IntN(10); {
				case r < 4 || len(jobs) == 0:
					id := fmt.Sprintf("job%d", rng.IntN(6))
					j := MockJob(id)
					switch rng.IntN(4) {
					case 0:
						j = MockBatchJob(id)
					case 1:
						j = MockSystemJob(id)
					}
					j.TaskGroups[0].Count = max(1, rng.IntN(8))
					if j.Type == state.JobTypeSystem {
						j.TaskGroups[0].Count = 1
					}
					j.TaskGroups[0].Tasks[0].Resources.CPU = 100 + rng.IntN(8)*100
					j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 64 + rng.IntN(8)*64
					if rng.IntN(3) == 0 {
						j.TaskGroups[0].Networks = []*state.NetworkResource{{
							ReservedPorts: []state.Port{{Label: "r", Value: 8000 + rng.IntN(3)}},
							DynamicPorts:  []state.Port{{Label: "d"}},
						}}
					}
					if old, _ := h.Store.JobByID(nil, "default", id); old != nil && old.Type != j.Type {
						continue
					}
					h.UpsertJob(j)
					if !slices.Contains(jobs, id) {
						jobs = append(jobs, id)
					}
				case r < 6:
					// Fail or finish a random live allocation.
					id := jobs[rng.IntN(len(jobs))]
					if live := h.LiveAllocs("default", id); len(live) > 0 {
						status := []string{state.AllocClientStatusFailed, state.AllocClientStatusComplete, state.AllocClientStatusRunning}[rng.IntN(3)]
						clientStatus(h, status, live[rng.IntN(len(live))])
					}
				case r < 7:
					n := nodes[rng.IntN(len(nodes))]
					h.SetNodeStatus(n.ID, []string{state.NodeStatusDown, state.NodeStatusReady}[rng.IntN(2)])
				case r < 8:
					h.Advance(time.Minute)
				}
				id := jobs[rng.IntN(len(jobs))]
				job, _ := h.Store.JobByID(nil, "default", id)
				if err := h.Process(BuiltinSchedulers[job.Type], h.NewEval(job, state.EvalTriggerJobRegister)); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				checkInvariants(t, h, round)
			}
		})
	}
}

func checkInvariants(t *testing.T, h *schedtest.Harness, round int) {
	t.Helper()
	nodes, _ := h.Store.Nodes(nil, "")
	for _, n := range nodes {
		allocs, _ := h.Store.AllocsByNode(nil, n.ID)
		fit, dim, err := AllocsFit(n, allocs)
		if err != nil || !fit {
			t.Fatalf("round %d: node %s over-committed on %q (%v)", round, n.Name, dim, err)
		}
	}
	jobs, _ := h.Store.Jobs(nil, "*", "")
	for _, j := range jobs {
		allocs, _ := h.Store.AllocsByJob(nil, j.Namespace, j.ID, false)
		live := map[string]string{}
		want := map[string]state.TaskGroupSummary{}
		for _, a := range allocs {
			key := a.TaskGroup + "/" + a.NodeID
			if j.Type != state.JobTypeSystem && j.Type != state.JobTypeSysBatch {
				key = a.Name
			}
			if !a.Terminal() {
				if other, dup := live[key]; dup {
					t.Fatalf("round %d: %s and %s both live as %s", round, other, a.ID, key)
				}
				live[key] = a.ID
			}
			s := want[a.TaskGroup]
			countAllocForTest(&s, a.ClientStatus)
			want[a.TaskGroup] = s
		}
		sum, _ := h.Store.JobSummaryByID(nil, j.Namespace, j.ID)
		for g, w := range want {
			got := sum.Summary[g]
			got.Queued = 0
			if got != w {
				t.Fatalf("round %d: job %s group %s summary %+v, allocations say %+v", round, j.ID, g, got, w)
			}
		}
	}
}

func countAllocForTest(s *state.TaskGroupSummary, status string) {
	switch status {
	case state.AllocClientStatusPending, "":
		s.Starting++
	case state.AllocClientStatusRunning:
		s.Running++
	case state.AllocClientStatusComplete:
		s.Complete++
	case state.AllocClientStatusFailed:
		s.Failed++
	case state.AllocClientStatusLost:
		s.Lost++
	case state.AllocClientStatusUnknown:
		s.Unknown++
	}
}
