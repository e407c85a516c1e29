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

// TestMemoryOversubscription: with MemoryOversubscriptionEnabled a task's
// memory_max is granted to the allocation (MemoryMaxMB) while the node's
// usage counts only its memory; without it, memory_max is ignored.
func TestMemoryOversubscription(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		h := schedtest.NewHarness(t)
		n := MockNode("n1")
		h.UpsertNodes(n)
		h.Apply(store.SchedulerConfigSetRequestType, &store.SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{MemoryOversubscriptionEnabled: enabled}})
		job := MockJob("web")
		job.TaskGroups[0].Count = 1
		job.TaskGroups[0].Tasks[0].Resources.MemoryMB = 256
		job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 1024
		runEval(t, h, job)
		live := h.LiveAllocs(job.Namespace, job.ID)
		if len(live) != 1 {
			t.Fatalf("enabled=%v: %d placed", enabled, len(live))
		}
		tr := live[0].AllocatedResources.Tasks["web"]
		want := 0
		if enabled {
			want = 1024
		}
		if tr.MemoryMB != 256 || tr.MemoryMaxMB != want {
			t.Errorf("enabled=%v: granted %d MB, max %d; want 256, max %d", enabled, tr.MemoryMB, tr.MemoryMaxMB, want)
		}
		u, err := h.Store.NodeUsage(nil, n.ID)
		if err != nil || u.MemoryMB != 256 {
			t.Errorf("enabled=%v: node usage %+v (%v), want 256 MB counted", enabled, u, err)
		}
	}
}

// TestMemoryOversubscriptionPerNodePool: a node pool's
// SchedulerConfiguration.MemoryOversubscriptionEnabled, when set,
// overrides the cluster's for the pool's nodes; unset, the cluster's
// applies.
func TestMemoryOversubscriptionPerNodePool(t *testing.T) {
	for _, c := range []struct {
		name    string
		cluster bool
		pool    any // the pool's setting; nil for none
		want    int
	}{
		{"cluster on, pool unset", true, nil, 1024},
		{"cluster off, pool unset", false, nil, 0},
		{"cluster off, pool on", false, true, 1024},
		{"cluster on, pool off", true, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			cfg := map[string]any{}
			if c.pool != nil {
				cfg["MemoryOversubscriptionEnabled"] = c.pool
			}
			h.Apply(store.NodePoolUpsertRequestType, &store.NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "big", SchedulerConfiguration: cfg}}})
			n := MockNode("n1")
			n.NodePool = "big"
			h.UpsertNodes(n)
			h.Apply(store.SchedulerConfigSetRequestType, &store.SchedulerConfigSetRequest{Config: &state.SchedulerConfiguration{MemoryOversubscriptionEnabled: c.cluster}})
			job := MockJob("web")
			job.NodePool = "big"
			job.TaskGroups[0].Count = 1
			job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 1024
			runEval(t, h, job)
			live := h.LiveAllocs(job.Namespace, job.ID)
			if len(live) != 1 {
				t.Fatalf("%d placed", len(live))
			}
			if got := live[0].AllocatedResources.Tasks["web"].MemoryMaxMB; got != c.want {
				t.Fatalf("granted memory max %d, want %d", got, c.want)
			}
		})
	}
}
