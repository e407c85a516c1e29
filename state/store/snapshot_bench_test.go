package store

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"syscall"
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
	return benchPlacedStoreOn(b, jobs, func(n int) string { return fmt.Sprintf("node-%04d", n) }, false)
}

// benchPlacedStoreOn is benchPlacedStore on the nodes nodeID names; with
// full, the nodes are filling up: each placement's metric counts the
// nodes it found exhausted, by class and by dimension, as the scheduler
// does once nodes fill.
func benchPlacedStoreOn(b *testing.B, jobs int, nodeID func(n int) string, full bool) *Store {
	return benchPlacedStoreAt(b, jobs, benchNodes, nodeID, full)
}

// benchUUIDNode names node n as agents name theirs, by a UUID.
func benchUUIDNode(n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(n*2654435761), n)
}

// benchPlacedStoreAt is benchPlacedStoreOn on the given number of nodes.
func benchPlacedStoreAt(b *testing.B, jobs, benchNodes int, nodeID func(n int) string, full bool) *Store {
	b.Helper()
	s := stStore(b, Config{})
	index := uint64(1)
	for n := range benchNodes {
		stApply(b, s, index, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(nodeID(n))})
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
			a := stAlloc(fmt.Sprintf("%08x-%04x-4000-8000-%012x", j, i, j*benchAllocsPerJob+i), job, nodeID(node))
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
				id := nodeID((node + k) % benchNodes)
				scores[id+".binpack"] = 0.1 * float64(k)
				scores[id+".job-anti-affinity"] = -0.2
				scores[id+".normalized-score"] = 0.05 * float64(k)
			}
			a.Metrics.Scores = state.ScoresOf(scores)
			if full {
				n := (j*31 + i*7) % 400
				a.Metrics.NodesExhausted = n
				a.Metrics.ClassExhausted = map[string]int{"": n}
				a.Metrics.DimensionExhausted = map[string]int{"memory": n}
			}
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
		dst := stStore(b, Config{})
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

// BenchmarkSnapshotPersistC2M writes a snapshot of 100,000 allocations
// shaped as the c2m scenario's: on 10,000 nodes named by UUIDs, filling
// up, so that a chunk's score keys and node IDs rarely repeat (the
// snapshot's cost per allocation at C2M, docs/scale.md).
func BenchmarkSnapshotPersistC2M(b *testing.B) {
	s := benchPlacedStoreAt(b, 100, 10000, benchUUIDNode, true)
	runtime.GC()
	cpu0 := benchProcessCPU(b)
	b.ResetTimer()
	for range b.N {
		snap, err := s.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		// Discarded, as raft's file sink takes the bytes: a buffer's
		// growth is no cost of the snapshot's.
		if err := snap.Persist(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(100*benchAllocsPerJob), "ns/alloc")
	// The process's CPU time, the collector's included: on a shared
	// machine the wall time swings with the load.
	b.ReportMetric(float64(benchProcessCPU(b)-cpu0)/float64(b.N)/float64(100*benchAllocsPerJob), "cpu-ns/alloc")
}

// benchProcessCPU is the CPU time the process has used, in nanoseconds.
func benchProcessCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkCollectPlacedStore times a full collection of a heap holding a
// store of 200,000 allocations placed on nodes with UUIDs (as agents name
// their nodes) that are filling up, and reports the heap's objects per allocation: what every
// cycle of the collector marks, and so what a placement pays for in
// collections as the state grows (issue 19).
func BenchmarkCollectPlacedStore(b *testing.B) {
	s := benchPlacedStoreOn(b, 200, benchUUIDNode, true)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ResetTimer()
	for range b.N {
		runtime.GC()
	}
	b.StopTimer()
	allocs := float64(200 * benchAllocsPerJob)
	b.ReportMetric(float64(ms.HeapObjects)/allocs, "heap-objects/alloc")
	b.ReportMetric(float64(ms.HeapAlloc)/allocs, "heap-bytes/alloc")
	runtime.KeepAlive(s)
}
