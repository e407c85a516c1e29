package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

// benchUUIDs returns n distinct allocation IDs shaped like the leader's
// (random UUIDs), from a fixed seed.
func benchUUIDs(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 19))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.Uint32()&0xffff,
			r.Uint32()&0xfff, r.Uint32()&0xfff, r.Uint64()&0xffffffffffff)
	}
	return ids
}

// benchPlacedAllocs returns a plan's worth of allocations of job with the
// given IDs, spread over nodes, each with the metrics the scheduler
// records (five nodes' scores).
func benchPlacedAllocs(job *state.Job, ids []string, nodes, first int) []*state.Allocation {
	allocs := make([]*state.Allocation, len(ids))
	for i, id := range ids {
		node := (first + i) % nodes
		a := stAlloc(id, job, fmt.Sprintf("node-%04d", node))
		a.Name = fmt.Sprintf("%s.%s[%d]", job.ID, job.TaskGroups[0].Name, i)
		a.EvalID = "eval-" + job.ID
		scores := map[string]float64{}
		for k := range 5 {
			n := fmt.Sprintf("node-%04d", (node+k)%nodes)
			scores[n+".binpack"] = 0.1 * float64(k)
			scores[n+".normalized-score"] = 0.05 * float64(k)
		}
		a.Metrics = &state.AllocMetric{NodesEvaluated: 10, NodesInPool: nodes, Scores: state.ScoresOf(scores)}
		allocs[i] = a
	}
	return allocs
}

// BenchmarkStoredAllocBytes places b.N jobs of 1,000 allocations with
// random UUIDs on 500 nodes through the real plan command and reports the
// live heap the store grew by per allocation (heap-bytes/alloc) and what
// was allocated per allocation while applying the commands
// (applied-bytes/alloc: the garbage of a placement, besides what stays).
// It then persists the store and reports how long a restore takes per
// allocation (restore-ns/alloc). The scheduler's benchmark of the same
// name measures the whole server side of a placement; this one isolates
// the store.
func BenchmarkStoredAllocBytes(b *testing.B) {
	const perJob, nodes = 1000, 500
	s := stStore(b, Config{})
	index := uint64(1)
	for n := range nodes {
		index++
		stApply(b, s, index, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(fmt.Sprintf("node-%04d", n))})
	}
	ids := benchUUIDs(b.N*perJob, 1)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var applied uint64
	b.ResetTimer()
	for j := range b.N {
		b.StopTimer()
		job := stJob(fmt.Sprintf("job-%05d", j))
		index++
		stRegister(b, s, index, job, nil)
		job = stMust[*state.Job](b)(s.JobByID(nil, job.Namespace, job.ID))
		allocs := benchPlacedAllocs(job, ids[j*perJob:(j+1)*perJob], nodes, j*perJob)
		data, err := Encode(AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: int64(index)})
		if err != nil {
			b.Fatal(err)
		}
		allocs = nil
		index++
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		b.StartTimer()
		if resp := s.Apply(index, data); resp != nil {
			if err, ok := resp.(error); ok {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.ReadMemStats(&m1)
		applied += m1.TotalAlloc - m0.TotalAlloc
		b.StartTimer()
	}
	b.StopTimer()
	ids = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	placed := float64(b.N * perJob)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/placed, "heap-bytes/alloc")
	b.ReportMetric(float64(applied)/placed, "applied-bytes/alloc")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/placed, "ns/alloc")
	if got := len(stMust[[]*state.Allocation](b)(s.Allocs(nil, allNamespaces, ""))); got != b.N*perJob {
		b.Fatalf("%d allocations stored, want %d", got, b.N*perJob)
	}
	var buf bytes.Buffer
	if err := stMust[*StateSnapshot](b)(s.Snapshot()).Persist(&buf); err != nil {
		b.Fatal(err)
	}
	dst := stStore(b, Config{})
	start := time.Now()
	if err := dst.Restore(&buf); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/placed, "restore-ns/alloc")
}

// BenchmarkAllocTableRows measures the allocations table's own structure:
// b.N batches of 1,000 allocations with random UUIDs, each batch one write
// transaction that looks every allocation up before writing it (as every
// write of an allocation does). It reports the live heap the table grew
// by per allocation besides the allocations themselves
// (table-bytes/alloc) and what a write allocated (garbage-bytes/write).
func BenchmarkAllocTableRows(b *testing.B) {
	const batch = 1000
	s := stStore(b, Config{})
	ids := benchUUIDs(b.N*batch, 2)
	allocs := make([]*state.Allocation, len(ids))
	for i, id := range ids {
		allocs[i] = &state.Allocation{ID: id}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for j := range b.N {
		t := s.writeTxn(uint64(j + 2))
		for _, a := range allocs[j*batch : (j+1)*batch] {
			if old := benchTableGet(b, t, a.ID); old != nil {
				b.Fatalf("%s stored twice", a.ID)
			}
			benchTablePut(b, t, a)
		}
		t.finishAllocTable()
		t.Txn.Commit()
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(b.N * batch)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "table-bytes/alloc")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "garbage-bytes/write")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/write")
	runtime.KeepAlive(allocs)
	if got := len(stMust[[]*state.Allocation](b)(s.Allocs(nil, allNamespaces, ""))); got != len(allocs) {
		b.Fatalf("%d allocations stored, want %d", got, len(allocs))
	}
}

// benchTableGet and benchTablePut are the table's lookup and write.
func benchTableGet(b *testing.B, t *writeTxn, id string) *state.Allocation {
	return stMust[*state.Allocation](b)(t.allocByID(id))
}

func benchTablePut(b *testing.B, t *writeTxn, a *state.Allocation) {
	if err := t.putAlloc(a); err != nil {
		b.Fatal(err)
	}
}
