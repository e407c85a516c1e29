package jobs

import (
	"net/http"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// compact=true lists each allocation as an AllocCompact: its place,
// statuses and its tasks' CPU and memory summed, nothing else; the
// filter reads that entry; resources or task_states alongside it, or a
// value that is not a boolean, are a 400.
func TestAllocationsCompact(t *testing.T) {
	h, _ := newSchedHarness(t)
	_, _, a1, a2, _ := seedReads(h)
	a := h.Alloc(a1).Copy()
	a.AllocatedResources = &state.AllocatedResources{Tasks: map[string]*state.AllocatedTaskResources{
		"server": {CPU: 500, MemoryMB: 256}, "sidecar": {CPU: 100, MemoryMB: 64}}}
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{a}, Now: 1_700_000_000_123_456_789})

	var list []map[string]any
	rec := h.OK(http.MethodGet, "/v1/allocations?namespace=*&compact=true", nil, &list)
	if len(list) != 2 {
		t.Fatalf("compact list of %d entries: %s", len(list), rec.Body)
	}
	want := map[string]any{"ID": a1, "Name": "web.web[1]", "Namespace": "default", "JobID": "web", "TaskGroup": "web",
		"NodeID": apitest.NodeID(1), "DesiredStatus": "run", "ClientStatus": "running", "CPU": 600.0, "MemoryMB": 320.0,
		"ModifyIndex": float64(h.Alloc(a1).ModifyIndex), "ModifyTime": float64(h.Alloc(a1).ModifyTime)}
	if h.Alloc(a1).ModifyTime == 0 {
		t.Fatal("the seeded allocation has no ModifyTime to compare")
	}
	got := list[0]
	if got["ID"] != a1 {
		got = list[1]
	}
	if len(got) != len(want) {
		t.Errorf("entry has %d fields, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// The filter is over the compact entry.
	var some []AllocCompact
	h.OK(http.MethodGet, "/v1/allocations?namespace=*&compact=true&filter="+urlEscape(`ClientStatus == "running"`), nil, &some)
	if len(some) != 1 || some[0].ID != a1 || some[0].CPU != 600 {
		t.Errorf("filter ClientStatus == running: %+v", some)
	}
	h.OK(http.MethodGet, "/v1/allocations?compact=true&per_page=1", nil, &some)
	if len(some) != 1 || some[0].ID != a1 {
		t.Errorf("default namespace, one a page: %+v", some)
	}
	// compact=false is the usual stub.
	var stubs []*state.AllocListStub
	h.OK(http.MethodGet, "/v1/allocations?namespace=*&compact=false&resources=true", nil, &stubs)
	if len(stubs) != 2 || (stubs[0].AllocatedResources == nil && stubs[1].AllocatedResources == nil) {
		t.Errorf("compact=false: %+v", stubs)
	}
	// A compact list is smaller than the stubs it stands for.
	full := h.OK(http.MethodGet, "/v1/allocations?namespace=*&resources=true", nil, nil).Body.Len()
	small := h.OK(http.MethodGet, "/v1/allocations?namespace=*&compact=true", nil, nil).Body.Len()
	if small*2 > full {
		t.Errorf("compact list %d bytes, stubs %d", small, full)
	}
	for q, field := range map[string]string{"compact=maybe": "compact", "compact=true&resources=true": "resources",
		"compact=true&task_states=true": "task_states", "compact=true&task_states=": "task_states"} {
		h.Fail(http.MethodGet, "/v1/allocations?"+q, nil, http.StatusBadRequest, field)
	}
	// resources=false and task_states=false go with it.
	h.OK(http.MethodGet, "/v1/allocations?namespace=*&compact=true&resources=false&task_states=false", nil, &some)
	if len(some) != 2 || (some[0].ID != a2 && some[1].ID != a2) {
		t.Errorf("compact with the other options off: %+v", some)
	}
}
