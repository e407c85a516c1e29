package store

import (
	"fmt"
	"testing"

	"github.com/schedhq/sched/state"
)

// benchAllocStore stores jobs × perJob allocations spread over nodes
// nodes, one plan-like command per job.
func benchAllocStore(b *testing.B, jobs, perJob, nodes int) (*Store, []string) {
	b.Helper()
	s := stStore(b, Config{})
	index := uint64(1)
	for n := range nodes {
		index++
		stApply(b, s, index, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(fmt.Sprintf("n%d", n))})
	}
	var ids []string
	for j := range jobs {
		job := stJob(fmt.Sprintf("job-%d", j))
		index++
		stRegister(b, s, index, job, nil)
		var allocs []*state.Allocation
		for i := range perJob {
			id := fmt.Sprintf("%08x-%d-%d", (j*perJob+i)*2654435761%(1<<32), j, i)
			allocs = append(allocs, stAlloc(id, job, fmt.Sprintf("n%d", (j*perJob+i)%nodes)))
			ids = append(ids, id)
		}
		index++
		stApply(b, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: int64(index)})
	}
	return s, ids
}

// BenchmarkApplyClientUpdates applies client reports of 1,024
// allocations spread over every job and node of a store of 100,000
// allocations: each report rewrites the allocation and its node's and
// job's lists, and recomputes the status of every job it touched.
func BenchmarkApplyClientUpdates(b *testing.B) {
	s, ids := benchAllocStore(b, 100, 1000, 1000)
	index := uint64(1 << 20)
	b.ResetTimer()
	for i := range b.N {
		var reports []*state.Allocation
		for k := range 1024 {
			reports = append(reports, &state.Allocation{ID: ids[(i*1024+k*97)%len(ids)], ClientStatus: state.AllocClientStatusRunning})
		}
		index++
		stApply(b, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: reports, Now: int64(index)})
	}
}

// BenchmarkAllocsByNodeAndJob reads a node's 100 allocations and a job's
// 1,000 from a store of 100,000.
func BenchmarkAllocsByNodeAndJob(b *testing.B) {
	s, _ := benchAllocStore(b, 100, 1000, 1000)
	b.ResetTimer()
	for i := range b.N {
		node := stMust[[]*state.Allocation](b)(s.AllocsByNode(nil, fmt.Sprintf("n%d", i%1000)))
		job := stMust[[]*state.Allocation](b)(s.AllocsByJob(nil, state.DefaultNamespace, fmt.Sprintf("job-%d", i%100), true))
		if len(node) != 100 || len(job) != 1000 {
			b.Fatalf("%d allocations on the node, %d of the job", len(node), len(job))
		}
	}
}

// BenchmarkPlaceOnFullNodes applies writes of 50 new allocations of one
// job, each on another node, to a store whose 1,000 nodes hold 200
// allocations each (C1M's density): every placement adds an ID to a full
// node's list. Its B/op is the garbage a placement leaves in the lists.
func BenchmarkPlaceOnFullNodes(b *testing.B) {
	s, _ := benchAllocStore(b, 200, 1000, 1000)
	job := stJob("more")
	index := uint64(1 << 20)
	stRegister(b, s, index, job, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		allocs := make([]*state.Allocation, 50)
		for k := range allocs {
			n := i*50 + k
			allocs[k] = stAlloc(fmt.Sprintf("%08x-more-%d", uint32(n*2654435761), n), job, fmt.Sprintf("n%d", n*7%1000))
		}
		index++
		stApply(b, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: int64(index)})
	}
}
