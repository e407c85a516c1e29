package jobs

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	schedhttp "github.com/schedhq/sched/http"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

func TestNodeUpdateAllocs(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	h.RegisterNode(apitest.TestNode(2))
	web := apitest.TestJob("web")
	h.register(web)
	batch := apitest.BatchJob("report")
	h.register(batch)
	webJob, batchJob := h.Registered(web), h.Registered(batch)
	a1 := h.PlaceAlloc(1, webJob, n.ID, "")
	a2 := h.PlaceAlloc(2, webJob, n.ID, "")
	a3 := h.PlaceAlloc(3, batchJob, n.ID, "")
	other := h.PlaceAlloc(4, webJob, apitest.NodeID(2), "")
	url := "/v1/node/" + n.ID + "/allocations"

	// Running: recorded, no eval.
	started := time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)
	var out state.NodeAllocsUpdateResponse
	h.OK(http.MethodPost, url, map[string]any{"Allocs": []map[string]any{
		{"ID": a1, "ClientStatus": "running", "TaskStates": map[string]any{"server": map[string]any{
			"State": "running", "StartedAt": started, "Events": []map[string]any{{"Type": "Started", "Time": 5}}}}},
		{"ID": a3, "ClientStatus": "running"},
		{"ID": apitest.AllocID(99), "ClientStatus": "running"}, // gone: skipped
	}}, &out)
	got := h.Alloc(a1)
	if got.ClientStatus != "running" || got.TaskStates["server"] == nil || !got.TaskStates["server"].StartedAt.Equal(started) ||
		got.TaskStates["server"].Events[0].Type != "Started" || got.ModifyIndex != out.Index || len(out.EvalIDs) != 0 {
		t.Fatalf("after running report: alloc %+v, answer %+v", got, out)
	}
	if sum, _ := h.Store.JobSummaryByID(nil, "default", "web"); sum.Summary["web"].Running != 1 || sum.Summary["web"].Starting != 2 {
		t.Errorf("summary %+v", sum.Summary["web"])
	}

	// A failed service alloc and a completed batch alloc: one eval, for
	// the failure.
	h.OK(http.MethodPost, url, map[string]any{"Allocs": []map[string]any{
		{"ID": a2, "ClientStatus": "failed", "ClientDescription": "exit 1"},
		{"ID": a3, "ClientStatus": "complete"},
	}}, &out)
	if len(out.EvalIDs) != 1 {
		t.Fatalf("evals %v, want one for web", out.EvalIDs)
	}
	e := h.Eval(out.EvalIDs[0])
	if e.JobID != "web" || e.TriggeredBy != state.EvalTriggerRetryFailedAlloc || e.Type != "service" || e.CreateIndex != out.Index ||
		e.JobModifyIndex != webJob.JobModifyIndex || e.Status != state.EvalStatusPending {
		t.Errorf("eval %+v", e)
	}
	// Reporting the same failure again creates no second eval.
	h.OK(http.MethodPost, url, map[string]any{"Allocs": []map[string]any{{"ID": a2, "ClientStatus": "failed"}}}, &out)
	if len(out.EvalIDs) != 0 {
		t.Errorf("repeated failure created evals %v", out.EvalIDs)
	}
	// A completed service alloc is replaced: alloc-stop.
	h.OK(http.MethodPost, url, map[string]any{"Allocs": []map[string]any{{"ID": a1, "ClientStatus": "complete"}}}, &out)
	if len(out.EvalIDs) != 1 || h.Eval(out.EvalIDs[0]).TriggeredBy != state.EvalTriggerAllocStop {
		t.Errorf("completed service alloc: evals %v", out.EvalIDs)
	}

	before := h.Writes()
	cases := []struct {
		name string
		url  string
		body any
		code int
		want []string
	}{
		{"empty", url, map[string]any{"Allocs": []any{}}, 400, []string{"Allocs: at least one"}},
		{"no ID", url, map[string]any{"Allocs": []map[string]any{{"ClientStatus": "running"}}}, 400, []string{"Allocs[0].ID: required"}},
		{"bad status", url, map[string]any{"Allocs": []map[string]any{{"ID": a1, "ClientStatus": "exploded"}}}, 400, []string{"Allocs[0].ClientStatus", "exploded"}},
		{"bad task state", url, map[string]any{"Allocs": []map[string]any{{"ID": a1, "ClientStatus": "running",
			"TaskStates": map[string]any{"server": map[string]any{"State": "sleeping"}}}}}, 400, []string{"Allocs[0].TaskStates[server].State"}},
		{"duplicate", url, map[string]any{"Allocs": []map[string]any{{"ID": a1, "ClientStatus": "running"}, {"ID": a1, "ClientStatus": "failed"}}},
			400, []string{"Allocs[1].ID", "also listed at Allocs[0]"}},
		{"other node's alloc", url, map[string]any{"Allocs": []map[string]any{{"ID": a1, "ClientStatus": "running"}, {"ID": other, "ClientStatus": "failed"}}},
			400, []string{"Allocs[1].ID", apitest.NodeID(2)}},
		{"unknown node", "/v1/node/" + apitest.NodeID(9) + "/allocations", map[string]any{"Allocs": []map[string]any{{"ID": a1, "ClientStatus": "running"}}}, 404, []string{apitest.NodeID(9)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.on(t).Fail(http.MethodPost, tc.url, tc.body, tc.code, tc.want...)
		})
	}
	if h.Writes() != before {
		t.Error("refused reports wrote")
	}
	if got := h.Alloc(other); got.ClientStatus != state.AllocClientStatusPending {
		t.Errorf("another node's alloc changed to %q", got.ClientStatus)
	}
}

func TestNodeAllocationsRead(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	h.RegisterNode(apitest.TestNode(2))
	job := apitest.TestJob("web")
	h.register(job)
	mine := h.PlaceAlloc(1, h.Registered(job), n.ID, "")
	h.PlaceAlloc(2, h.Registered(job), apitest.NodeID(2), "")

	var allocs []*state.Allocation
	rec := h.OK(http.MethodGet, "/v1/node/"+n.ID+"/allocations", nil, &allocs)
	if len(allocs) != 1 || allocs[0].ID != mine || allocs[0].Job == nil || allocs[0].Job.ID != "web" {
		t.Fatalf("allocations = %+v", allocs)
	}
	if apitest.HeaderIndexOf(t, rec) != allocs[0].ModifyIndex || allocs[0].ModifyIndex >= h.Store.Index(store.TableAllocs) {
		t.Errorf("index %s, want the node's own allocation's %d (below the table's %d)",
			rec.Header().Get(schedhttp.HeaderIndex), allocs[0].ModifyIndex, h.Store.Index(store.TableAllocs))
	}
	h.Fail(http.MethodGet, "/v1/node/"+apitest.NodeID(9)+"/allocations", nil, http.StatusNotFound)
	var none []*state.Allocation
	h.RegisterNode(apitest.TestNode(3))
	h.OK(http.MethodGet, "/v1/node/"+apitest.NodeID(3)+"/allocations", nil, &none)
	if none == nil || len(none) != 0 {
		t.Errorf("node without allocations = %#v, want []", none)
	}
}

// TestNodeAllocationsBlockUntilPlaced is the client's view: a blocking
// read of its allocations returns when the scheduler places one there,
// not before, and not on an unrelated write.
func TestNodeAllocationsBlockUntilPlaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newSchedHarness(t)
		n := apitest.TestNode(1)
		h.RegisterNode(n)
		job := apitest.TestJob("web")
		h.register(job)
		var first []*state.Allocation
		rec := h.OK(http.MethodGet, "/v1/node/"+n.ID+"/allocations", nil, &first)
		index := apitest.HeaderIndexOf(t, rec)

		rec, done := h.Park("/v1/node/" + n.ID + "/allocations?index=" + strconv.FormatUint(index, 10) + "&wait=1m") // an unrelated write does not wake it
		// An allocation placed on another node is not this node's news,
		// though it moves the allocations table's index: a client's
		// blocking read must not return (or every client would poll its
		// whole list while the cluster places).
		other := apitest.TestNode(2)
		h.RegisterNode(other)
		h.PlaceAlloc(7, h.Registered(job), other.ID, "")
		synctest.Wait()
		if apitest.Returned(done) {
			t.Fatal("woke on an allocation placed on another node")
		}
		// And a later blocking read with the index it was given blocks
		// too (the index is the node's, not the table's).
		rec2, done2 := h.ServeAsync(http.MethodGet, "/v1/node/"+n.ID+"/allocations?index="+strconv.FormatUint(index, 10)+"&wait=1m")
		synctest.Wait()
		if apitest.Returned(done2) {
			t.Fatalf("a new blocking read returned at once after another node's placement: %d %q", rec2.Code, rec2.Body.String())
		}
		time.Sleep(10 * time.Second) // fake time
		id := h.PlaceAlloc(1, h.Registered(job), n.ID, "")
		<-done
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %q", rec.Code, rec.Body.String())
		}
		var allocs []*state.Allocation
		if err := json.Unmarshal(rec.Body.Bytes(), &allocs); err != nil {
			t.Fatal(err)
		}
		if ids := []string{}; len(allocs) != 1 || !reflect.DeepEqual(append(ids, allocs[0].ID), []string{id}) {
			t.Errorf("woke with %+v, want the new allocation", allocs)
		}
		if got := apitest.HeaderIndexOf(t, rec); got <= index {
			t.Errorf("index %d, want above %d", got, index)
		}
	})
}

// TestNodeAllocationChanges: the changes endpoint names every allocation
// of the node with its ModifyIndex and carries whole only those modified
// after since; a client report moves the reported one into the next
// answer, unless server_changes=true asks for AllocModifyIndex, which only
// the servers' writes move; a since that is not an index is a 400.
func TestNodeAllocationChanges(t *testing.T) {
	h, _ := newSchedHarness(t)
	n, a1, a2 := h.nodeWithTwoAllocs()
	h.RegisterNode(apitest.TestNode(2))
	h.PlaceAlloc(3, h.Job("default", "web"), apitest.NodeID(2), "")
	url := "/v1/node/" + n.ID + "/allocations/changes"

	var all state.NodeAllocChanges
	rec := h.OK(http.MethodGet, url, nil, &all)
	index := apitest.HeaderIndexOf(t, rec)
	if len(all.Allocs) != 2 || len(all.Changed) != 2 || all.Allocs[a1] == 0 || all.Allocs[a2] == 0 {
		t.Fatalf("first answer %+v, want both of the node's allocations, whole", all)
	}
	for _, a := range all.Changed {
		if a.Job == nil || a.Job.ID != "web" || all.Allocs[a.ID] != a.ModifyIndex {
			t.Errorf("changed allocation %s: job %v, ModifyIndex %d (map says %d)", a.ID, a.Job, a.ModifyIndex, all.Allocs[a.ID])
		}
	}
	if want := max(all.Allocs[a1], all.Allocs[a2]); index != want {
		t.Errorf("index %d, want the node's highest ModifyIndex %d", index, want)
	}

	var none state.NodeAllocChanges
	h.OK(http.MethodGet, url+"?since="+strconv.FormatUint(index, 10), nil, &none)
	if len(none.Allocs) != 2 || none.Changed == nil || len(none.Changed) != 0 {
		t.Fatalf("answer since %d = %+v, want both named and none whole (an empty list)", index, none)
	}

	var out state.NodeAllocsUpdateResponse
	h.OK(http.MethodPost, "/v1/node/"+n.ID+"/allocations", map[string]any{"Allocs": []map[string]any{{"ID": a2, "ClientStatus": "running"}}}, &out)
	var one state.NodeAllocChanges
	h.OK(http.MethodGet, url+"?since="+strconv.FormatUint(index, 10), nil, &one)
	if len(one.Changed) != 1 || one.Changed[0].ID != a2 || one.Changed[0].ClientStatus != "running" || one.Allocs[a2] != out.Index || one.Allocs[a1] != all.Allocs[a1] {
		t.Fatalf("after a report: %+v, want only %s whole at index %d", one, a2, out.Index)
	}

	// server_changes=true: indexes are AllocModifyIndex, so a2's report
	// above is not a change, and the index is where the placements left it.
	var servers state.NodeAllocChanges
	rec = h.OK(http.MethodGet, url+"?server_changes=true&since="+strconv.FormatUint(index, 10), nil, &servers)
	if apitest.HeaderIndexOf(t, rec) != index || len(servers.Changed) != 0 || servers.Allocs[a2] != all.Allocs[a2] {
		t.Fatalf("server changes after a report: index %d, %+v; want index %d and nothing changed", apitest.HeaderIndexOf(t, rec), servers, index)
	}
	// A server-side write (a stop) is one.
	stop := h.Alloc(a1).Copy()
	stop.DesiredStatus = state.AllocDesiredStatusStop
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{stop}, Now: apitest.Now.UnixNano()})
	rec = h.OK(http.MethodGet, url+"?server_changes=true&since="+strconv.FormatUint(index, 10), nil, &servers)
	stopped := h.Alloc(a1)
	if apitest.HeaderIndexOf(t, rec) != stopped.AllocModifyIndex || len(servers.Changed) != 1 || servers.Changed[0].ID != a1 ||
		servers.Changed[0].DesiredStatus != state.AllocDesiredStatusStop || servers.Allocs[a1] != stopped.AllocModifyIndex {
		t.Fatalf("server changes after a stop: index %d, %+v; want only %s at %d", apitest.HeaderIndexOf(t, rec), servers, a1, stopped.AllocModifyIndex)
	}
	h.Fail(http.MethodGet, url+"?server_changes=maybe", nil, http.StatusBadRequest)

	before := h.Writes()
	h.Fail(http.MethodGet, url+"?since=soon", nil, http.StatusBadRequest)
	h.Fail(http.MethodGet, url+"?since=-1", nil, http.StatusBadRequest)
	h.Fail(http.MethodGet, "/v1/node/"+apitest.NodeID(9)+"/allocations/changes", nil, http.StatusNotFound)
	if h.Writes() != before {
		t.Error("refused reads wrote")
	}
}

// TestNodeAllocationChangesDelta: with delta=true an answer after an
// index carries the allocations changed since, names those that left
// the node, counts those on it, and lists none of the others (Allocs
// null); without server_changes its index is the node's last write, a
// client's report included; from index 0 it names every allocation;
// jobs=false leaves the jobs out; a value that is not a boolean is a 400.
func TestNodeAllocationChangesDelta(t *testing.T) {
	h, _ := newSchedHarness(t)
	n, a1, a2 := h.nodeWithTwoAllocs()
	url := "/v1/node/" + n.ID + "/allocations/changes?delta=true"

	var all state.NodeAllocChanges
	rec := h.OK(http.MethodGet, url, nil, &all)
	index := apitest.HeaderIndexOf(t, rec)
	if len(all.Allocs) != 2 || len(all.Changed) != 2 || all.Count != 2 {
		t.Fatalf("from index 0: %+v, want every allocation named and whole", all)
	}

	var out state.NodeAllocsUpdateResponse
	h.OK(http.MethodPost, "/v1/node/"+n.ID+"/allocations", map[string]any{"Allocs": []map[string]any{{"ID": a2, "ClientStatus": "running"}}}, &out)
	var one state.NodeAllocChanges
	rec = h.OK(http.MethodGet, url+"&since="+strconv.FormatUint(index, 10), nil, &one)
	if one.Allocs != nil || len(one.Changed) != 1 || one.Changed[0].ID != a2 || one.Changed[0].ClientStatus != "running" || one.Count != 2 || len(one.Removed) != 0 {
		t.Fatalf("after a report: %+v, want only %s whole, no list, count 2", one, a2)
	}
	if got := apitest.HeaderIndexOf(t, rec); got != out.Index {
		t.Errorf("index after a report %d, want the report's %d", got, out.Index)
	}
	var servers state.NodeAllocChanges
	h.OK(http.MethodGet, url+"&server_changes=true&since="+strconv.FormatUint(index, 10), nil, &servers)
	if servers.Allocs != nil || len(servers.Changed) != 0 || servers.Count != 2 {
		t.Fatalf("server changes after a report: %+v, want nothing changed, count 2", servers)
	}

	var noJobs state.NodeAllocChanges
	h.OK(http.MethodGet, url+"&jobs=false&since="+strconv.FormatUint(index, 10), nil, &noJobs)
	if len(noJobs.Changed) != 1 || noJobs.Changed[0].ID != a2 || noJobs.Changed[0].Job != nil {
		t.Fatalf("jobs=false after a report: %+v, want only %s, without its job", noJobs, a2)
	}
	if h.Alloc(a2).Job == nil {
		t.Fatal("jobs=false took the stored allocation's job")
	}
	stop := h.Alloc(a1).Copy()
	stop.DesiredStatus = state.AllocDesiredStatusStop
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{stop}, Now: apitest.Now.UnixNano()})
	h.Apply(store.GarbageCollectRequestType, &store.GarbageCollectRequest{Allocs: []string{a1}})
	var gone state.NodeAllocChanges
	h.OK(http.MethodGet, url+"&server_changes=true&since="+strconv.FormatUint(out.Index, 10), nil, &gone)
	if gone.Allocs != nil || len(gone.Changed) != 0 || !slices.Equal(gone.Removed, []string{a1}) || gone.Count != 1 {
		t.Fatalf("after %s was collected: %+v, want it removed, count 1", a1, gone)
	}

	before := h.Writes()
	h.Fail(http.MethodGet, url+"=maybe", nil, http.StatusBadRequest)
	h.Fail(http.MethodGet, url+"&jobs=some", nil, http.StatusBadRequest)
	if h.Writes() != before {
		t.Error("a refused read wrote")
	}
}

// nodeWithTwoAllocs registers node 1 and the job "web", and places the
// job's allocations 1 and 2 on the node, as plans would.
func (h *harness) nodeWithTwoAllocs() (n *state.Node, a1, a2 string) {
	n = apitest.TestNode(1)
	h.RegisterNode(n)
	job := apitest.TestJob("web")
	h.register(job)
	return n, h.PlaceAlloc(1, h.Registered(job), n.ID, ""), h.PlaceAlloc(2, h.Registered(job), n.ID, "")
}

// TestShareChangedJobs: with shared_jobs=true an allocation goes without
// its job only when the previous allocation of the same job ID carried
// that very job, so allocations of two versions of one job interleaved
// each keep theirs; the inputs are not changed. (api.FillSharedJobs, the
// reader's side, has its own test.)
func TestShareChangedJobs(t *testing.T) {
	v1, v2, other := &state.Job{ID: "web", Version: 1}, &state.Job{ID: "web", Version: 2}, &state.Job{ID: "db"}
	mk := func(id string, j *state.Job) *state.Allocation {
		return &state.Allocation{ID: id, Namespace: "default", JobID: j.ID, Job: j}
	}
	in := []*state.Allocation{mk("a", v1), mk("b", v1), mk("c", other), mk("d", v2), mk("e", v1), mk("f", v1), mk("g", other)}
	out := shareChangedJobs(in)
	var carried []string
	for _, a := range out {
		if a.Job != nil {
			carried = append(carried, a.ID)
		}
	}
	if want := []string{"a", "c", "d", "e"}; !slices.Equal(carried, want) {
		t.Fatalf("allocations that carry their job: %v, want %v", carried, want)
	}
	for _, a := range in {
		if a.Job == nil {
			t.Fatalf("input allocation %s lost its job", a.ID)
		}
	}
}

// TestNodeAllocationChangesSharedJobs: the endpoint with shared_jobs=true
// answers the same allocations, the first with its job and every other
// either with one or after one of the same job; a value that is not a
// boolean is a 400.
func TestNodeAllocationChangesSharedJobs(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	job := apitest.TestJob("web")
	h.register(job)
	for i := range 3 {
		h.PlaceAlloc(i+1, h.Registered(job), n.ID, "")
	}
	url := "/v1/node/" + n.ID + "/allocations/changes?server_changes=true&shared_jobs=true"
	var got state.NodeAllocChanges
	h.OK(http.MethodGet, url, nil, &got)
	if len(got.Allocs) != 3 || len(got.Changed) != 3 || got.Changed[0].Job == nil {
		t.Fatalf("answer %+v, want the node's 3 allocations, the first with its job", got)
	}
	for _, a := range got.Changed {
		if a.Job != nil && a.Job.ID != "web" {
			t.Errorf("allocation %s: job %v", a.ID, a.Job)
		}
	}
	h.Fail(http.MethodGet, "/v1/node/"+n.ID+"/allocations/changes?shared_jobs=often", nil, http.StatusBadRequest)
}

// TestNodeAllocationChangesForms: metrics=false leaves the placement
// metrics out and keeps the job; compact=true answers ID, job ID and
// statuses alone, the node's list and count as the whole form does;
// compact=true with a job, shared jobs or metrics asked is a 400; the
// stored allocation is never changed.
func TestNodeAllocationChangesForms(t *testing.T) {
	h, _ := newSchedHarness(t)
	n := apitest.TestNode(1)
	h.RegisterNode(n)
	web := apitest.TestJob("web")
	h.register(web)
	job := h.Registered(web)
	a := &state.Allocation{
		ID: apitest.AllocID(1), Namespace: job.Namespace, JobID: job.ID, Job: job, EvalID: "e-1", NodeID: n.ID,
		Name: "web.web[0]", TaskGroup: job.TaskGroups[0].Name, DesiredStatus: state.AllocDesiredStatusRun,
		ClientStatus: state.AllocClientStatusRunning, Metrics: &state.AllocMetric{NodesEvaluated: 1},
	}
	h.Apply(store.AllocUpdateRequestType, &store.AllocUpdateRequest{Allocs: []*state.Allocation{a}, Now: apitest.Now.UnixNano()})
	url := "/v1/node/" + n.ID + "/allocations/changes?"

	var whole, noMetrics state.NodeAllocChanges
	h.OK(http.MethodGet, url+"delta=true", nil, &whole)
	if len(whole.Changed) != 1 || whole.Changed[0].Metrics == nil {
		t.Fatalf("default form: %+v, want the allocation with its metrics", whole)
	}
	h.OK(http.MethodGet, url+"delta=true&server_changes=true&shared_jobs=true&metrics=false", nil, &noMetrics)
	if len(noMetrics.Changed) != 1 || noMetrics.Changed[0].Metrics != nil || noMetrics.Changed[0].Job == nil {
		t.Fatalf("metrics=false: %+v, want the allocation with its job, without metrics", noMetrics)
	}
	if h.Alloc(a.ID).Metrics == nil {
		t.Fatal("metrics=false took the stored allocation's metrics")
	}

	var compact struct {
		Allocs  map[string]uint64
		Changed []map[string]any
		Count   int
	}
	h.OK(http.MethodGet, url+"compact=true", nil, &compact)
	if len(compact.Changed) != 1 || compact.Count != 1 || compact.Allocs[a.ID] == 0 {
		t.Fatalf("compact=true: %+v, want one entry, the node's list and count", compact)
	}
	got := compact.Changed[0]
	if got["ID"] != a.ID || got["JobID"] != job.ID || got["ClientStatus"] != "running" || got["DesiredStatus"] != "run" {
		t.Errorf("compact entry %v, want the allocation's ID, job ID and statuses", got)
	}
	for _, absent := range []string{"Job", "Metrics", "TaskStates"} {
		if _, ok := got[absent]; ok {
			t.Errorf("compact entry carries %s", absent)
		}
	}
	for _, bad := range []string{"compact=true&jobs=true", "compact=true&shared_jobs=true", "compact=true&metrics=true", "compact=maybe", "metrics=some"} {
		h.Fail(http.MethodGet, url+bad, nil, http.StatusBadRequest)
	}
}
