package jobs

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// TestLocalAllocChanges: the in-process form (Local) of the changes endpoint
// answers what GET .../allocations/changes?server_changes=true&metrics=false
// answers, whole and as a delta, with the same index; its allocations are
// copies without metrics that carry their job; it blocks until a server
// change to the node (a client's report does not wake it); an unknown node
// is state.ErrNotFound. Its reports are the endpoint's: checked, batched,
// and refused without a write.
func TestLocalAllocChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newSchedHarness(t)
		local := &Local{h.api}
		ctx := context.Background()
		n, a1, a2 := h.nodeWithTwoAllocs()
		job := h.Job("default", "web")
		url := "/v1/node/" + n.ID + "/allocations/changes?server_changes=true&metrics=false"

		var want state.NodeAllocChanges
		rec := h.OK(http.MethodGet, url, nil, &want)
		wantIndex := apitest.HeaderIndexOf(t, rec)
		got, index, err := local.AllocChanges(ctx, n.ID, 0, 0, false, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if index != wantIndex || got.Count != want.Count || len(got.Allocs) != 2 || got.Allocs[a1] != want.Allocs[a1] || got.Allocs[a2] != want.Allocs[a2] {
			t.Fatalf("whole list: %+v at %d, want %+v at %d", got, index, want, wantIndex)
		}
		if ids := allocIDs(got.Changed); !slices.Equal(ids, allocIDs(want.Changed)) || len(ids) != 2 {
			t.Fatalf("changed %v, want %v", ids, allocIDs(want.Changed))
		}
		for _, a := range got.Changed {
			stored := h.Alloc(a.ID)
			if a == stored || a.Metrics != nil || a.Job == nil || a.Job.ID != job.ID {
				t.Fatalf("allocation %s: the stored one %v, metrics %v, job %v: want a copy without metrics, with its job", a.ID, a == stored, a.Metrics, a.Job)
			}
			a.ClientDescription = "changed by the reader"
			if h.Alloc(a.ID).ClientDescription == a.ClientDescription {
				t.Fatalf("changing the answer's %s changed the stored allocation", a.ID)
			}
		}

		// A client's report neither wakes the read nor counts as a change.
		done := make(chan struct{})
		var delta *state.NodeAllocChanges
		var deltaIndex uint64
		var deltaErr error
		go func() {
			defer close(done)
			delta, deltaIndex, deltaErr = local.AllocChanges(ctx, n.ID, index, index, true, time.Minute)
		}()
		synctest.Wait()
		rep, err := local.UpdateAllocs(ctx, n.ID, []*state.AllocClientUpdate{{ID: a2, ClientStatus: state.AllocClientStatusRunning}})
		if err != nil || rep.Index <= index || h.Alloc(a2).ClientStatus != state.AllocClientStatusRunning {
			t.Fatalf("a report: %+v, %v; stored status %q", rep, err, h.Alloc(a2).ClientStatus)
		}
		synctest.Wait()
		if apitest.Returned(done) {
			t.Fatal("a client's report woke the read")
		}
		stop := h.Alloc(a1).Copy()
		stop.DesiredStatus = state.AllocDesiredStatusStop
		h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{stop}, Now: apitest.Now.UnixNano()})
		<-done
		if deltaErr != nil {
			t.Fatal(deltaErr)
		}
		var wantDelta state.NodeAllocChanges
		rec = h.OK(http.MethodGet, url+"&delta=true&since="+strconv.FormatUint(index, 10), nil, &wantDelta)
		if deltaIndex != apitest.HeaderIndexOf(t, rec) || deltaIndex <= index {
			t.Fatalf("delta index %d, want the endpoint's %d, above %d", deltaIndex, apitest.HeaderIndexOf(t, rec), index)
		}
		if delta.Allocs != nil || delta.Count != 2 || !slices.Equal(allocIDs(delta.Changed), []string{a1}) ||
			delta.Changed[0].DesiredStatus != state.AllocDesiredStatusStop || wantDelta.Count != 2 || !slices.Equal(allocIDs(wantDelta.Changed), []string{a1}) {
			t.Fatalf("delta %+v, want only %s (stopped), count 2, as the endpoint's %+v", delta, a1, wantDelta)
		}

		// The wait ends with the index it had.
		_, idle, err := local.AllocChanges(ctx, n.ID, deltaIndex, deltaIndex, true, time.Minute)
		if err != nil || idle != deltaIndex {
			t.Fatalf("an idle wait: index %d, %v; want %d", idle, err, deltaIndex)
		}

		if _, _, err := local.AllocChanges(ctx, "no-such-node", 0, 0, true, time.Minute); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("unknown node: %v, want ErrNotFound", err)
		}

		// Reports are checked as the endpoint checks them, and a refused
		// one writes nothing.
		before := h.Writes()
		if _, err := local.UpdateAllocs(ctx, "no-such-node", []*state.AllocClientUpdate{{ID: a2, ClientStatus: state.AllocClientStatusComplete}}); !errors.Is(err, state.ErrNotFound) {
			t.Fatalf("a report of an unknown node: %v, want ErrNotFound", err)
		}
		other := apitest.TestNode(2)
		h.RegisterNode(other)
		before = h.Writes()
		if _, err := local.UpdateAllocs(ctx, other.ID, []*state.AllocClientUpdate{{ID: a2, ClientStatus: state.AllocClientStatusComplete}}); codec.StatusOf(err) != http.StatusBadRequest {
			t.Fatalf("a report on another node's allocation: %v, want a 400", err)
		}
		if _, err := local.UpdateAllocs(ctx, n.ID, []*state.AllocClientUpdate{{ID: a2, ClientStatus: "sideways"}}); codec.StatusOf(err) != http.StatusBadRequest {
			t.Fatalf("a report with an unknown status: %v, want a 400", err)
		}
		if h.Writes() != before || h.Alloc(a2).ClientStatus != state.AllocClientStatusRunning {
			t.Fatalf("a refused report wrote (status %q)", h.Alloc(a2).ClientStatus)
		}
	})
}

func allocIDs(allocs []*state.Allocation) []string {
	out := make([]string, len(allocs))
	for i, a := range allocs {
		out[i] = a.ID
	}
	slices.Sort(out)
	return out
}
