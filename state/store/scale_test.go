package store

// The tests of what keeps the store's costs flat as it grows: node usage,
// the evaluations' ModifyIndex index, snapshot verification.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/schedhq/sched/state"
)

// usageFromAllocs adds up the live allocations of node, as the scheduler
// did before the table existed.
func usageFromAllocs(t *testing.T, s *Store, node string) state.NodeUsage {
	t.Helper()
	u := state.NodeUsage{NodeID: node}
	for _, a := range allocsOnNodeByScan(t, s, node) {
		u.AddAlloc(a, +1)
	}
	return u
}

// allocsOnNodeByScan lists the allocations on node, ordered by ID, from a
// scan of every allocation: what AllocsByNode must answer.
func allocsOnNodeByScan(t *testing.T, s *Store, node string) []*state.Allocation {
	return allocsByScan(t, s, func(a *state.Allocation) bool { return a.NodeID == node })
}

// allocsByScan lists the allocations keep accepts, ordered by ID, from a
// scan of every allocation.
func allocsByScan(t *testing.T, s *Store, keep func(*state.Allocation) bool) []*state.Allocation {
	t.Helper()
	var out []*state.Allocation
	for _, a := range stMust[[]*state.Allocation](t)(s.Allocs(nil, allNamespaces, "")) {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// checkAllocLists checks that the lookups by node, by job and by
// evaluation (the alloc_lists tables) answer what a scan of every
// allocation finds.
func checkAllocLists(t *testing.T, s *Store, nodes []string, jobs []*state.Job, evals []string) {
	t.Helper()
	for _, n := range nodes {
		if got, want := stMust[[]*state.Allocation](t)(s.AllocsByNode(nil, n)), allocsOnNodeByScan(t, s, n); !slices.Equal(got, want) {
			t.Fatalf("%s lists %d allocations, %d are on it", n, len(got), len(want))
		}
	}
	for _, j := range jobs {
		got := stMust[[]*state.Allocation](t)(s.AllocsByJob(nil, j.Namespace, j.ID, true))
		want := allocsByScan(t, s, func(a *state.Allocation) bool { return a.Namespace == j.Namespace && a.JobID == j.ID })
		if !slices.Equal(got, want) {
			t.Fatalf("job %s lists %d allocations, %d are its", j.ID, len(got), len(want))
		}
	}
	for _, e := range evals {
		got := stMust[[]*state.Allocation](t)(s.AllocsByEval(nil, e))
		want := allocsByScan(t, s, func(a *state.Allocation) bool { return a.EvalID == e })
		if ev := stMust[*state.Evaluation](t)(s.EvalByID(nil, e)); ev == nil {
			want = nil // none once the evaluation is gone
		}
		if !slices.Equal(got, want) {
			t.Fatalf("evaluation %s lists %d allocations, %d are its", e, len(got), len(want))
		}
	}
}

// TestNodeUsageInvariant: after any sequence of placements (new and
// in-place, moved between nodes), client reports, job stops and purges,
// garbage collection and a snapshot round trip, each node's usage equals
// the sum over its live allocations, and its list of allocations (the
// node_allocs table) is the one a scan of every allocation finds.
func TestNodeUsageInvariant(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		s := stStore(t, Config{})
		for i, n := range nodes {
			stApply(t, s, uint64(1+i), NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(n)})
		}
		jobs := []*state.Job{stJob("a"), stJob("b")}
		stRegister(t, s, 5, jobs[0], stEval("e-a", jobs[0]))
		stRegister(t, s, 6, jobs[1], stEval("e-b", jobs[1]))
		index := uint64(10)
		var ids []string
		for step := 0; step < 80; step++ {
			index++
			// What a snapshot taken before the step lists must not change
			// (a write copies a node's list, never changes it in place).
			before, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string][]*state.Allocation{}
			for _, n := range nodes {
				listed[n] = stMust[[]*state.Allocation](t)(before.AllocsByNode(nil, n))
			}
			for _, j := range jobs {
				listed[j.ID] = stMust[[]*state.Allocation](t)(before.AllocsByJob(nil, j.Namespace, j.ID, true))
			}
			var op string
			switch rng.IntN(7) {
			case 0, 1:
				// One to four allocations in one command: several on one
				// node, or the same one twice, go through one transaction.
				op = "place"
				var batch []*state.Allocation
				for k := range 1 + rng.IntN(4) {
					job := jobs[rng.IntN(len(jobs))]
					id := fmt.Sprintf("a-%d-%d", index, k)
					if len(ids) > 0 && rng.IntN(3) == 0 {
						id = ids[rng.IntN(len(ids))] // in place, maybe to another node
					} else {
						ids = append(ids, id)
					}
					a := stAlloc(id, job, nodes[rng.IntN(len(nodes))])
					a.EvalID = "e-" + job.ID
					a.AllocatedResources = &state.AllocatedResources{
						Tasks:  map[string]*state.AllocatedTaskResources{"web": {CPU: 10 * (1 + rng.IntN(9)), MemoryMB: 16 * (1 + rng.IntN(9))}},
						Shared: state.AllocatedSharedResources{DiskMB: rng.IntN(300)},
					}
					batch = append(batch, a)
				}
				stApply(t, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: batch, Now: int64(index)})
			case 2:
				op = "report"
				if len(ids) == 0 {
					continue
				}
				status := []string{state.AllocClientStatusRunning, state.AllocClientStatusComplete, state.AllocClientStatusFailed, state.AllocClientStatusLost}[rng.IntN(4)]
				stApply(t, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: ids[rng.IntN(len(ids))], ClientStatus: status}}, Now: int64(index)})
			case 3:
				op = "stop job"
				job := jobs[rng.IntN(len(jobs))]
				stApply(t, s, index, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: job.Namespace, JobID: job.ID, Now: int64(index)})
				stRegister(t, s, index+1, job, nil)
				index++
			case 4:
				op = "gc"
				if len(ids) == 0 {
					continue
				}
				stApply(t, s, index, EvalDeleteRequestType, &EvalDeleteRequest{Allocs: []string{ids[rng.IntN(len(ids))], ids[rng.IntN(len(ids))]}})
			case 5:
				op = "purge"
				job := jobs[rng.IntN(len(jobs))]
				stApply(t, s, index, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: job.Namespace, JobID: job.ID, Purge: true, Now: int64(index)})
				stRegister(t, s, index+1, job, nil)
				index++
			case 6:
				op = "snapshot round trip"
				snap, err := s.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := snap.Persist(&buf); err != nil {
					t.Fatal(err)
				}
				if err := s.Restore(&buf); err != nil {
					t.Fatal(err)
				}
			}
			checkAllocLists(t, s, nodes, jobs, []string{"e-a", "e-b"})
			for _, j := range jobs {
				if again := stMust[[]*state.Allocation](t)(before.AllocsByJob(nil, j.Namespace, j.ID, true)); !slices.Equal(again, listed[j.ID]) {
					t.Fatalf("seed %d step %d (%s): a snapshot taken before lists %d allocations of %s, %d before the step", seed, step, op, len(again), j.ID, len(listed[j.ID]))
				}
			}
			for _, n := range nodes {
				if again := stMust[[]*state.Allocation](t)(before.AllocsByNode(nil, n)); !slices.Equal(again, listed[n]) {
					t.Fatalf("seed %d step %d (%s): a snapshot taken before lists %d allocations on %s, %d before the step", seed, step, op, len(again), n, len(listed[n]))
				}
				want := usageFromAllocs(t, s, n)
				got := stMust[*state.NodeUsage](t)(s.NodeUsage(nil, n))
				if *got != want {
					t.Fatalf("seed %d step %d (%s): %s usage %+v, its allocations add up to %+v", seed, step, op, n, *got, want)
				}
			}
		}
	}
}

// VerifySnapshot accepts what Persist wrote and refuses a truncated or
// corrupted stream, as Restore would, without building a store.
func TestVerifySnapshot(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 1, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	job := stJob("a")
	stRegister(t, s, 2, job, nil)
	stApply(t, s, 3, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{stAlloc("a1", job, "n1")}, Now: 3})
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	if err := VerifySnapshot(bytes.NewReader(whole)); err != nil {
		t.Fatalf("a whole snapshot: %v", err)
	}
	if err := VerifySnapshot(bytes.NewReader(whole[:len(whole)/2])); err == nil {
		t.Error("a truncated snapshot verified")
	}
	bad := bytes.Clone(whole)
	bad[len(bad)/2] ^= 0xff
	bad[len(bad)/2+1] ^= 0xff
	if VerifySnapshot(bytes.NewReader(bad)) == nil && s.Restore(bytes.NewReader(bad)) != nil {
		t.Error("VerifySnapshot accepted a stream Restore refuses")
	}
}

// EvalsModifiedAfter returns exactly the evaluations written after an
// index, in the order they were written.
func TestEvalsModifiedAfter(t *testing.T) {
	s := stStore(t, Config{})
	job := stJob("a")
	stRegister(t, s, 1, job, nil)
	for i, id := range []string{"e3", "e1", "e2"} {
		stApply(t, s, uint64(10+i), EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{stEval(id, job)}})
	}
	// e3 written again later.
	stApply(t, s, 20, EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{stEval("e3", job)}})
	ids := func(since uint64) string {
		var out []string
		for _, e := range stMust[[]*state.Evaluation](t)(s.EvalsModifiedAfter(nil, since)) {
			out = append(out, fmt.Sprintf("%s@%d", e.ID, e.ModifyIndex))
		}
		return fmt.Sprint(out)
	}
	for since, want := range map[uint64]string{
		0:  "[e1@11 e2@12 e3@20]",
		11: "[e2@12 e3@20]",
		12: "[e3@20]",
		20: "[]",
	} {
		if got := ids(since); got != want {
			t.Errorf("after %d: %s, want %s", since, got, want)
		}
	}
}

// A snapshot writes each job allocations run once (format 2): the
// allocations come back equal, sharing their job; a format 1 stream (a job
// per allocation) still restores; a reference to a job the stream does
// not hold is refused.
func TestSnapshotWritesEachJobOnce(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 1, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	job := stJob("a")
	stRegister(t, s, 2, job, nil)
	stored := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "a"))
	var allocs []*state.Allocation
	for i := range 50 {
		a := stAlloc(fmt.Sprintf("a%02d", i), stored, "n1")
		a.Job = stored
		allocs = append(allocs, a)
	}
	stApply(t, s, 3, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: 3})
	before := stMust[[]*state.Allocation](t)(s.AllocsByNode(nil, "n1"))

	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(buf.Bytes(), []byte(snapshotJobName)); n < 1 || n > 2 {
		t.Errorf("the stream holds %d job rows for 50 allocations of one job", n)
	}
	if err := VerifySnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	r := stStore(t, Config{})
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	after := stMust[[]*state.Allocation](t)(r.AllocsByNode(nil, "n1"))
	if !reflect.DeepEqual(before, after) {
		t.Fatal("restored allocations differ from the saved ones")
	}
	for _, a := range after[1:] {
		if a.Job != after[0].Job {
			t.Fatal("restored allocations of one job do not share it")
		}
	}

	// Format 1: every allocation with its own job.
	var old bytes.Buffer
	enc := newStreamEncoder(&old)
	for _, v := range []any{snapshotHeader{Format: 1}, TableJobs, stored, TableAllocs, before[0], ""} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	r1 := stStore(t, Config{})
	if err := r1.Restore(bytes.NewReader(old.Bytes())); err != nil {
		t.Fatalf("a format 1 snapshot: %v", err)
	}
	if a := stMust[*state.Allocation](t)(r1.AllocByID(nil, before[0].ID)); a == nil || a.Job == nil || a.Job.ID != "a" {
		t.Fatalf("format 1 allocation restored as %+v", a)
	}

	// A dangling reference.
	var bad bytes.Buffer
	enc = newStreamEncoder(&bad)
	bare := *before[0]
	bare.Job = nil
	for _, v := range []any{snapshotHeader{Format: 2}, snapshotAllocName, &snapshotAllocRow{Ref: 7, Alloc: &bare}, ""} {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := VerifySnapshot(bytes.NewReader(bad.Bytes())); err == nil {
		t.Error("a reference to a job the stream does not hold verified")
	}
	if err := stStore(t, Config{}).Restore(bytes.NewReader(bad.Bytes())); err == nil {
		t.Error("a reference to a job the stream does not hold restored")
	}
}
