package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/schedhq/sched/state"
)

// benchAllocsPerJob and benchNodes shape the store of the snapshot
// benchmarks like sched-bench's placement scenario: jobs of 1,000
// allocations spread over the nodes, each with the metrics the scheduler
// records (five nodes' scores).
const (
	benchAllocsPerJob = 1000
	benchNodes        = 1000
)

// benchPlacedStore returns a store holding jobs×1,000 allocations placed
// as the scheduler places them, through the real commands.
func benchPlacedStore(b *testing.B, jobs int) *Store {
	b.Helper()
	s := stStore(b, StoreConfig{})
	index := uint64(1)
	for n := range benchNodes {
		stApply(b, s, index, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(fmt.Sprintf("node-%04d", n))})
		index++
	}
	for j := range jobs {
		job := stJob(fmt.Sprintf("job-%04d", j))
		eval := stEval(fmt.Sprintf("eval-%04d", j), job)
		stRegister(b, s, index, job, eval)
		index++
		raw, err := s.JobByID(nil, job.Namespace, job.ID)
		if err != nil {
			b.Fatal(err)
		}
		job = raw
		allocs := make([]*state.Allocation, benchAllocsPerJob)
		for i := range allocs {
			node := (j*benchAllocsPerJob + i) % benchNodes
			a := stAlloc(fmt.Sprintf("%08x-%04x-4000-8000-%012x", j, i, j*benchAllocsPerJob+i), job, fmt.Sprintf("node-%04d", node))
			a.Name = fmt.Sprintf("%s.%s[%d]", job.ID, job.TaskGroups[0].Name, i)
			a.NodeName = "node-" + a.NodeID
			a.EvalID = eval.ID
			a.ClientStatus = state.AllocClientStatusPending
			a.Metrics = &state.AllocMetric{
				NodesEvaluated: 10, NodesInPool: benchNodes, NodesAvailable: map[string]int{"dc1": benchNodes},
				AllocationTime: 12345,
			}
			scores := map[string]float64{}
			for k := range 5 {
				id := fmt.Sprintf("node-%04d", (node+k)%benchNodes)
				scores[id+".binpack"] = 0.1 * float64(k)
				scores[id+".job-anti-affinity"] = -0.2
				scores[id+".normalized-score"] = 0.05 * float64(k)
			}
			a.Metrics.Scores = state.ScoresOf(scores)
			a.CreateTime, a.ModifyTime = int64(index)*1e9, int64(index)*1e9
			allocs[i] = a
		}
		stApply(b, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: int64(index)})
		index++
	}
	return s
}

// benchSnapshot persists s.
func benchSnapshot(b *testing.B, s *Store) []byte {
	b.Helper()
	snap, err := s.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkSnapshotRestore restores a snapshot of 100,000 allocations
// (100 jobs × 1,000 on 1,000 nodes): the bulk of a server's restart.
func BenchmarkSnapshotRestore(b *testing.B) {
	data := benchSnapshot(b, benchPlacedStore(b, 100))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		dst := stStore(b, StoreConfig{})
		if err := dst.Restore(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotPersist writes a snapshot of 100,000 allocations.
func BenchmarkSnapshotPersist(b *testing.B) {
	s := benchPlacedStore(b, 100)
	b.ResetTimer()
	for range b.N {
		benchSnapshot(b, s)
	}
}
