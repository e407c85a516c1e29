package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/schedhq/sched/state"
)

// quotaByScan adds up, for quota q, the live allocations of every
// namespace that names it: what the store's usage must equal.
func quotaByScan(t *testing.T, s *Store, q string) state.QuotaResources {
	t.Helper()
	quotaOf := map[string]string{}
	for _, ns := range stMust[[]*state.Namespace](t)(s.Namespaces(nil)) {
		quotaOf[ns.Name] = ns.Quota
	}
	var sum state.QuotaResources
	for _, a := range allocsByScan(t, s, func(a *state.Allocation) bool { return quotaOf[a.Namespace] == q }) {
		sum.Add(a, +1)
	}
	return sum
}

func stQuota(name string, limit state.QuotaResources) *state.QuotaSpec {
	return &state.QuotaSpec{Name: name, Limits: []*state.QuotaLimit{{Region: state.DefaultRegion, RegionLimit: &limit}}}
}

// TestQuotaUsageInvariant: after any sequence of placements (new, in
// place with other resources: a scale), client reports, nodes going down
// with their allocations lost, job stops and purges, garbage collection,
// namespaces changing quota and snapshot round trips, each quota's usage
// equals the sum over the live allocations of its namespaces.
func TestQuotaUsageInvariant(t *testing.T) {
	nodes := []string{"n1", "n2"}
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		s := stStore(t, Config{})
		for i, n := range nodes {
			stApply(t, s, uint64(1+i), NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode(n)})
		}
		stApply(t, s, 3, QuotaUpsertRequestType, &QuotaUpsertRequest{Quotas: []*state.QuotaSpec{
			stQuota("q1", state.QuotaResources{MemoryMB: 4096}), stQuota("q2", state.QuotaResources{CPU: 1000}),
		}})
		stApply(t, s, 4, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{
			{Name: "team-a", Quota: "q1"}, {Name: "team-b", Quota: "q1"}, {Name: "free"},
		}})
		var jobs []*state.Job
		for i, ns := range []string{"team-a", "team-b", "free", "team-a"} {
			j := stJob(fmt.Sprintf("j%d", i))
			j.Namespace = ns
			if i%2 == 0 {
				j.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = 512
			}
			stRegister(t, s, uint64(5+i), j, nil)
			jobs = append(jobs, j)
		}
		index := uint64(20)
		var placed []*state.Allocation
		for step := 0; step < 100; step++ {
			index++
			var op string
			switch rng.IntN(9) {
			case 0, 1, 2:
				op = "place or scale"
				var batch []*state.Allocation
				for k := range 1 + rng.IntN(4) {
					job := jobs[rng.IntN(len(jobs))]
					id := fmt.Sprintf("a-%d-%d", index, k)
					if len(placed) > 0 && rng.IntN(3) == 0 {
						prev := placed[rng.IntN(len(placed))]
						id = prev.ID // in place, other resources
						job = jobs[slicesIndexJob(jobs, prev)]
					}
					a := stAlloc(id, job, nodes[rng.IntN(len(nodes))])
					a.Job = job
					a.AllocatedResources.Tasks["server"] = &state.AllocatedTaskResources{CPU: 10 * (1 + rng.IntN(9)), MemoryMB: 16 * (1 + rng.IntN(9))}
					batch = append(batch, a)
					placed = append(placed, a)
				}
				stApply(t, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: batch, Now: int64(index)})
			case 3:
				op = "report"
				if len(placed) == 0 {
					continue
				}
				status := []string{state.AllocClientStatusRunning, state.AllocClientStatusComplete, state.AllocClientStatusFailed}[rng.IntN(3)]
				stApply(t, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: []*state.Allocation{{ID: placed[rng.IntN(len(placed))].ID, ClientStatus: status}}, Now: int64(index)})
			case 4:
				op = "node down"
				n := nodes[rng.IntN(len(nodes))]
				stApply(t, s, index, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: n, Status: state.NodeStatusDown, UpdatedAt: int64(index)})
				var lost []*state.Allocation
				for _, a := range stMust[[]*state.Allocation](t)(s.AllocsByNode(nil, n)) {
					lost = append(lost, &state.Allocation{ID: a.ID, ClientStatus: state.AllocClientStatusLost})
				}
				if len(lost) > 0 {
					index++
					stApply(t, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: lost, Now: int64(index)})
				}
				index++
				stApply(t, s, index, NodeUpdateStatusRequestType, &NodeUpdateStatusRequest{NodeID: n, Status: state.NodeStatusReady, UpdatedAt: int64(index)})
			case 5:
				op = "stop or purge job"
				job := jobs[rng.IntN(len(jobs))]
				stApply(t, s, index, JobDeregisterRequestType, &JobDeregisterRequest{Namespace: job.Namespace, JobID: job.ID, Purge: rng.IntN(2) == 0, Now: int64(index)})
				stRegister(t, s, index+1, job, nil)
				index++
			case 6:
				op = "gc"
				if len(placed) == 0 {
					continue
				}
				stApply(t, s, index, EvalDeleteRequestType, &EvalDeleteRequest{Allocs: []string{placed[rng.IntN(len(placed))].ID}})
			case 7:
				op = "namespace changes quota"
				to := []string{"q1", "q2", ""}[rng.IntN(3)]
				stApply(t, s, index, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "team-b", Quota: to}}})
			case 8:
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
			for _, q := range []string{"q1", "q2"} {
				want := quotaByScan(t, s, q)
				u := stMust[*state.QuotaUsage](t)(s.QuotaUsageByName(nil, q))
				if got := u.Used[state.DefaultRegion].Used; got != want {
					t.Fatalf("seed %d step %d (%s): quota %s usage %+v, its allocations add up to %+v", seed, step, op, q, got, want)
				}
			}
		}
	}
}

func slicesIndexJob(jobs []*state.Job, a *state.Allocation) int {
	for i, j := range jobs {
		if j.ID == a.JobID && j.Namespace == a.Namespace {
			return i
		}
	}
	return 0
}

// Quota writes refuse what is wrong and change nothing: a bad spec, a
// namespace naming an unknown quota, deleting a quota in use or unknown.
func TestQuotaWritesRefuse(t *testing.T) {
	s := stStore(t, Config{})
	stApply(t, s, 1, QuotaUpsertRequestType, &QuotaUpsertRequest{Quotas: []*state.QuotaSpec{stQuota("q1", state.QuotaResources{MemoryMB: 100})}})
	cases := []struct {
		name string
		mt   MessageType
		req  any
		want error
	}{
		{"bad limit", QuotaUpsertRequestType, &QuotaUpsertRequest{Quotas: []*state.QuotaSpec{stQuota("q2", state.QuotaResources{CPU: -5})}}, state.ErrInvalid},
		{"bad name", QuotaUpsertRequestType, &QuotaUpsertRequest{Quotas: []*state.QuotaSpec{stQuota("a b", state.QuotaResources{})}}, state.ErrInvalid},
		{"unknown quota on namespace", NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "x", Quota: "nope"}}}, state.ErrInvalid},
		{"delete unknown", QuotaDeleteRequestType, &QuotaDeleteRequest{Names: []string{"nope"}}, state.ErrNotFound},
	}
	for i, c := range cases {
		resp := stApplyErr(t, s, uint64(10+i), c.mt, c.req)
		err, _ := resp.(error)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, resp, c.want)
		}
	}
	if qs := stMust[[]*state.QuotaSpec](t)(s.Quotas(nil)); len(qs) != 1 {
		t.Fatalf("quotas after refused writes: %d, want 1", len(qs))
	}
	if ns := stMust[*state.Namespace](t)(s.NamespaceByName(nil, "x")); ns != nil {
		t.Fatalf("namespace naming an unknown quota was created: %+v", ns)
	}
	stApply(t, s, 20, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "x", Quota: "q1"}}})
	resp := stApplyErr(t, s, 21, QuotaDeleteRequestType, &QuotaDeleteRequest{Names: []string{"q1"}})
	if err, _ := resp.(error); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("deleting a quota in use: %v, want a conflict", resp)
	}
	stApply(t, s, 22, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "x"}}})
	stApply(t, s, 23, QuotaDeleteRequestType, &QuotaDeleteRequest{Names: []string{"q1"}})
	if u := stMust[*state.QuotaUsage](t)(s.QuotaUsageByName(nil, "q1")); u != nil {
		t.Fatalf("usage of a deleted quota: %+v", u)
	}
}

// stFillQuotaTables writes a quota named by a namespace, at indexes from
// index (TestQuotaUsageInvariant restores usage with allocations).
func stFillQuotaTables(t *testing.T, s *Store, index uint64) {
	t.Helper()
	stApply(t, s, index, QuotaUpsertRequestType, &QuotaUpsertRequest{Quotas: []*state.QuotaSpec{stQuota("team-q", state.QuotaResources{CPU: 1000, MemoryMB: 2048, Allocations: 10})}})
	stApply(t, s, index+1, NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "team", Quota: "team-q"}}})
}
