package store

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/schedhq/sched/state"
)

// stSharedMaps is how many distinct maps of a metric field one command
// keeps for sharing (packed's sharedMaps).
const stSharedMaps = 4

// sameMap reports whether a and b are the one map.
func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// sameData reports whether two strings share their bytes (not merely
// equal ones).
func sameData(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// compactPlan stores node n1, job web and its evaluation, then applies a
// plan of three placements on n1 through the log's codec (each placement
// decoded with its own strings and maps), and returns the allocations as
// planned.
func compactPlan(t *testing.T, s *Store) (job *state.Job, planned []*state.Allocation) {
	t.Helper()
	stApply(t, s, 5, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	stRegister(t, s, 10, stJob("web"), nil)
	job = stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	stApply(t, s, 11, EvalUpdateRequestType, &EvalUpdateRequest{Evals: []*state.Evaluation{stEval("e1", job)}})
	for i := range 3 {
		a := stAlloc(fmt.Sprintf("a%d", i), job, "n1")
		a.EvalID = "e1"
		a.NodeName = "node-n1"
		a.Job = nil
		a.ClientStatus = state.AllocClientStatusPending
		a.Metrics = &state.AllocMetric{
			NodesEvaluated: 1,
			NodesAvailable: map[string]int{"dc1": 1},
			ClassFiltered:  map[string]int{},
			Scores:         state.ScoresOf(map[string]float64{"n1.binpack": float64(i) / 10, "n1.normalized-score": float64(i) / 10}),
		}
		planned = append(planned, a)
	}
	stApply(t, s, 12, PlanApplyRequestType, &PlanApplyRequest{EvalID: "e1", Job: job, JobAllocs: planned, Now: 1200})
	return job, planned
}

// TestCompactAllocsShareValues: allocations stored from one plan share
// their job, their repeated strings (with the stored node and job, and
// with each other), their granted resources and their equal metric maps;
// what is read is still what was planned.
func TestCompactAllocsShareValues(t *testing.T) {
	s := stStore(t, Config{})
	job, planned := compactPlan(t, s)
	node := stMust[*state.Node](t)(s.NodeByID(nil, "n1"))
	allocs := stMust[[]*state.Allocation](t)(s.AllocsByEval(nil, "e1"))
	if len(allocs) != 3 {
		t.Fatalf("%d allocations stored, want 3", len(allocs))
	}
	first := allocs[0]
	// The plan's job is a decoded copy of the stored row: the row is kept.
	if first.Job != job {
		t.Errorf("allocation job %p is not the stored job row %p", first.Job, job)
	}
	for i, a := range allocs {
		p := planned[i]
		if a.ID != p.ID || a.EvalID != "e1" || a.NodeID != "n1" || a.NodeName != "node-n1" || a.JobID != "web" ||
			a.Namespace != state.DefaultNamespace || a.TaskGroup != "web" || a.DesiredStatus != state.AllocDesiredStatusRun ||
			a.ClientStatus != state.AllocClientStatusPending {
			t.Errorf("allocation %d read back as %+v", i, a)
		}
		if !reflect.DeepEqual(a.AllocatedResources, p.AllocatedResources) || !reflect.DeepEqual(a.Metrics, p.Metrics) {
			t.Errorf("allocation %d resources %+v metrics %+v, want %+v %+v", i, a.AllocatedResources, a.Metrics, p.AllocatedResources, p.Metrics)
		}
		if a.Metrics.ClassFiltered == nil || a.Metrics.ConstraintFiltered != nil {
			t.Errorf("allocation %d: an empty map must stay empty and a missing one missing: %#v", i, a.Metrics)
		}
		shared := map[string]bool{
			"Job":                a.Job == first.Job,
			"EvalID":             sameData(a.EvalID, first.EvalID),
			"NodeID (node)":      sameData(a.NodeID, node.ID),
			"NodeName (node)":    sameData(a.NodeName, node.Name),
			"JobID (job)":        sameData(a.JobID, a.Job.ID),
			"Namespace (job)":    sameData(a.Namespace, a.Job.Namespace),
			"TaskGroup":          sameData(a.TaskGroup, first.TaskGroup),
			"DesiredStatus":      sameData(a.DesiredStatus, state.AllocDesiredStatusRun),
			"ClientStatus":       sameData(a.ClientStatus, state.AllocClientStatusPending),
			"AllocatedResources": a.AllocatedResources == first.AllocatedResources,
			"NodesAvailable":     sameMap(a.Metrics.NodesAvailable, first.Metrics.NodesAvailable),
			"ClassFiltered":      sameMap(a.Metrics.ClassFiltered, first.Metrics.ClassFiltered),
		}
		for what, ok := range shared {
			if !ok {
				t.Errorf("allocation %d: %s not shared", i, what)
			}
		}
		if a.Metrics == first.Metrics && i > 0 {
			t.Errorf("allocation %d shares its metrics, which differ by score", i)
		}
	}
}

// TestCompactScoresAcrossCommands: a later plan's scores on the nodes of
// an earlier plan read back as planned (scores hold no strings to share:
// state.Scores packs node IDs).
func TestCompactScoresAcrossCommands(t *testing.T) {
	s := stStore(t, Config{})
	job, _ := compactPlan(t, s)
	a := stAlloc("b0", job, "n1")
	a.EvalID, a.Job = "e1", nil
	a.Metrics = &state.AllocMetric{Scores: state.ScoresOf(map[string]float64{"n1.binpack": 0.7, "n1.normalized-score": 0.6})}
	want := a.Metrics.Copy()
	stApply(t, s, 13, PlanApplyRequestType, &PlanApplyRequest{EvalID: "e1", Job: job, JobAllocs: []*state.Allocation{a}, Now: 1300})
	later := stMust[*state.Allocation](t)(s.AllocByID(nil, "b0"))
	if !reflect.DeepEqual(later.Metrics, want) {
		t.Fatalf("metrics read back as %+v, want %+v", later.Metrics, want)
	}
}

// TestCompactSharesCountMapsAcrossCommands: a metric's count maps equal to
// those of an allocation stored by an earlier command are shared with it,
// even with other maps in between (more than a command keeps); the values
// read back as planned.
func TestCompactSharesCountMapsAcrossCommands(t *testing.T) {
	s := stStore(t, Config{})
	job, _ := compactPlan(t, s)
	index := uint64(13)
	plan := func(id string, exhausted int) *state.Allocation {
		t.Helper()
		a := stAlloc(id, job, "n1")
		a.EvalID, a.Job = "e1", nil
		a.Metrics = &state.AllocMetric{NodesExhausted: exhausted, ClassExhausted: map[string]int{"gpu": exhausted}}
		stApply(t, s, index, PlanApplyRequestType, &PlanApplyRequest{EvalID: "e1", Job: job, JobAllocs: []*state.Allocation{a}, Now: int64(index)})
		index++
		return stMust[*state.Allocation](t)(s.AllocByID(nil, id))
	}
	first := plan("c0", 7)
	for i := range 2 * stSharedMaps {
		plan(fmt.Sprintf("c%d", i+1), 100+i)
	}
	again := plan("d0", 7)
	if !reflect.DeepEqual(again.Metrics.ClassExhausted, map[string]int{"gpu": 7}) {
		t.Fatalf("read back %v", again.Metrics.ClassExhausted)
	}
	if !sameMap(again.Metrics.ClassExhausted, first.Metrics.ClassExhausted) {
		t.Error("an equal count map of an earlier command is not shared")
	}
}

// TestCompactKeepsWhatDiffers: an allocation's job that differs from the
// stored row it claims to be (same indexes, other content) is kept as it
// is, and so are resources that differ between allocations.
func TestCompactKeepsWhatDiffers(t *testing.T) {
	s := stStore(t, Config{})
	stRegister(t, s, 10, stJob("web"), nil)
	job := stMust[*state.Job](t)(s.JobByID(nil, state.DefaultNamespace, "web"))
	changed := job.Copy()
	changed.Meta = map[string]string{"owner": "team-b"}
	a, b := stAlloc("a1", job, "n1"), stAlloc("a2", job, "n1")
	a.Job = changed
	b.AllocatedResources.Tasks["server"].CPU = 200
	stApply(t, s, 11, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: []*state.Allocation{a, b}, Now: 1100})
	ga := stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	gb := stMust[*state.Allocation](t)(s.AllocByID(nil, "a2"))
	if ga.Job == job || ga.Job.Meta["owner"] != "team-b" {
		t.Errorf("a changed job was replaced by the stored row: %+v", ga.Job.Meta)
	}
	if ga.AllocatedResources.Tasks["server"].CPU != 100 || gb.AllocatedResources.Tasks["server"].CPU != 200 {
		t.Errorf("resources %+v and %+v, want CPU 100 and 200", ga.AllocatedResources.Tasks["server"], gb.AllocatedResources.Tasks["server"])
	}
}

// TestCompactAfterRestore: a restored store, where every allocation
// decodes its own copy of its job, shares one job among the allocations
// of a job version again, and reads exactly what the original store held.
func TestCompactAfterRestore(t *testing.T) {
	src := stStore(t, Config{})
	compactPlan(t, src)
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	dst := stStore(t, Config{})
	if err := dst.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	want := stMust[[]*state.Allocation](t)(src.Allocs(nil, "*", ""))
	got := stMust[[]*state.Allocation](t)(dst.Allocs(nil, "*", ""))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored allocations differ from the original ones")
	}
	node := stMust[*state.Node](t)(dst.NodeByID(nil, "n1"))
	for i, a := range got {
		if a.Job != got[0].Job {
			t.Errorf("restored allocation %d has its own copy of the job", i)
		}
		if !sameData(a.NodeID, node.ID) || !sameData(a.EvalID, got[0].EvalID) || a.AllocatedResources != got[0].AllocatedResources {
			t.Errorf("restored allocation %d does not share its node ID, evaluation ID or resources", i)
		}
	}
	// The node usage rebuilt from them agrees.
	if u, v := stMust[*state.NodeUsage](t)(src.NodeUsage(nil, "n1")), stMust[*state.NodeUsage](t)(dst.NodeUsage(nil, "n1")); *u != *v {
		t.Errorf("node usage %+v after restore, want %+v", *v, *u)
	}
}

// BenchmarkTaskStatesBytes measures the heap that the task states clients
// report add per allocation: 1,000 allocations of one group each report
// one running task with the three events a client sends (received, task
// setup, started), in updates of 100 allocations. The event buffer keeps
// one entry, so replaced versions of allocations are not counted.
func BenchmarkTaskStatesBytes(b *testing.B) {
	const n = 1000
	var total float64
	for range b.N {
		s := stStore(b, Config{EventBufferSize: 1})
		stApply(b, s, 5, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
		job := stJob("web")
		stRegister(b, s, 10, job, nil)
		index := uint64(11)
		for i := 0; i < n; i += 100 {
			var allocs []*state.Allocation
			for k := i; k < i+100; k++ {
				allocs = append(allocs, stAlloc(fmt.Sprintf("a%04d", k), job, "n1"))
			}
			stApply(b, s, index, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: 1})
			index++
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < n; i += 100 {
			var updates []*state.Allocation
			for k := i; k < i+100; k++ {
				now := int64(k) * 1e6
				event := func(typ, msg string, at int64) *state.TaskEvent {
					return &state.TaskEvent{Type: typ, Time: at, Message: msg, DisplayMessage: msg, Details: map[string]string{}}
				}
				updates = append(updates, &state.Allocation{
					ID: fmt.Sprintf("a%04d", k), ClientStatus: state.AllocClientStatusRunning,
					TaskStates: map[string]*state.TaskState{"server": {
						State: state.TaskStateRunning, StartedAt: time.Unix(0, now+3).UTC(),
						Events: []*state.TaskEvent{
							event(state.TaskReceived, "Task received by client", now),
							event(state.TaskSetup, "Building Task Directory", now+1),
							event(state.TaskStarted, "Task started by client", now+2),
						},
					}},
				})
			}
			stApply(b, s, index, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: updates, Now: 2})
			index++
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if a := stMust[*state.Allocation](b)(s.AllocByID(nil, "a0999")); len(a.TaskStates["server"].Events) != 3 {
			b.Fatalf("task states not stored: %+v", a.TaskStates)
		}
		total += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		runtime.KeepAlive(s)
	}
	b.ReportMetric(total/float64(b.N*n), "task-states-bytes/alloc")
}

// TestCompactTaskStates: task states reported in one client update share
// their messages and empty details, and read back as reported.
func TestCompactTaskStates(t *testing.T) {
	s := stStore(t, Config{})
	compactPlan(t, s)
	reported := func(id string, at int64) *state.Allocation {
		return &state.Allocation{ID: id, ClientStatus: state.AllocClientStatusRunning, TaskStates: map[string]*state.TaskState{
			"server": {State: state.TaskStateRunning, StartedAt: time.Unix(0, at).UTC(), Events: []*state.TaskEvent{
				{Type: state.TaskStarted, Time: at, Message: "Task started by client", DisplayMessage: "Task started by client", Details: map[string]string{}},
			}},
		}}
	}
	sent := []*state.Allocation{reported("a0", 100), reported("a1", 200)}
	stApply(t, s, 13, AllocClientUpdateRequestType, &AllocClientUpdateRequest{Allocs: sent, Now: 1300})
	a0 := stMust[*state.Allocation](t)(s.AllocByID(nil, "a0"))
	a1 := stMust[*state.Allocation](t)(s.AllocByID(nil, "a1"))
	for i, a := range []*state.Allocation{a0, a1} {
		if !reflect.DeepEqual(a.TaskStates, sent[i].TaskStates) {
			t.Errorf("%s task states read back as %+v, want %+v", a.ID, a.TaskStates["server"], sent[i].TaskStates["server"])
		}
	}
	e0, e1 := a0.TaskStates["server"].Events[0], a1.TaskStates["server"].Events[0]
	if !sameData(e0.DisplayMessage, e1.DisplayMessage) || !sameData(e0.Message, e0.DisplayMessage) || !sameData(e0.Type, e1.Type) {
		t.Error("event strings not shared")
	}
	if e0.Details == nil || !sameMap(e0.Details, e1.Details) {
		t.Errorf("empty details %#v and %#v not one shared empty map", e0.Details, e1.Details)
	}
	if e0.Time == e1.Time {
		t.Error("events of different times were merged")
	}
}
