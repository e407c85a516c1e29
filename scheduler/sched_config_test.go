package scheduler_test

import (
	"testing"

	. "github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/scheduler/schedtest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// spreadHarness is TestRankBinPackPrefersFullerNode's cluster: node busy
// holds another job's allocation, node idle nothing.
func spreadHarness(t *testing.T) (*schedtest.Harness, *state.Node, *state.Node) {
	h := schedtest.NewHarness(t)
	busy, idle := MockNode("busy"), MockNode("idle")
	busy.NodePool, idle.NodePool = "", ""
	h.UpsertNodes(busy, idle)
	other := h.UpsertJob(MockJob("other"))
	filler := FitAlloc("00000000-0000-4000-8000-aaaaaaaaaaaa", 2000, 4000, 300)
	filler.NodeID, filler.Job, filler.JobID, filler.Namespace, filler.TaskGroup, filler.Name = busy.ID, other, other.ID, other.Namespace, "web", "other.web[0]"
	h.UpsertAllocs(filler)
	return h, busy, idle
}

// TestRankSpreadAlgorithm: with the spread algorithm, cluster-wide or set
// by the node pool, the emptier node wins; binpack set by the pool wins
// over a cluster-wide spread.
func TestRankSpreadAlgorithm(t *testing.T) {
	for _, c := range []struct {
		name         string
		cluster      string
		poolAlg      string // the default pool's SchedulerAlgorithm ("" for none)
		wantEmptiest bool
	}{
		{"cluster binpack", state.SchedulerAlgorithmBinpack, "", false},
		{"cluster spread", state.SchedulerAlgorithmSpread, "", true},
		{"pool spread over cluster binpack", state.SchedulerAlgorithmBinpack, state.SchedulerAlgorithmSpread, true},
		{"pool binpack over cluster spread", state.SchedulerAlgorithmSpread, state.SchedulerAlgorithmBinpack, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, busy, idle := spreadHarness(t)
			h.Apply(store.SchedulerConfigSetRequestType, &store.SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{SchedulerAlgorithm: c.cluster}})
			if c.poolAlg != "" {
				h.Apply(store.NodePoolUpsertRequestType, &store.NodePoolUpsertRequest{NodePools: []*state.NodePool{{
					Name: state.NodePoolDefault, SchedulerConfiguration: map[string]any{"SchedulerAlgorithm": c.poolAlg}}}})
			}
			job := MockJob("web")
			job.TaskGroups[0].Count = 1
			runEval(t, h, job)
			live := h.LiveAllocs(job.Namespace, job.ID)
			want := busy.ID
			if c.wantEmptiest {
				want = idle.ID
			}
			if len(live) != 1 || live[0].NodeID != want {
				t.Fatalf("placed on %v, want %s", live, want)
			}
		})
	}
}
