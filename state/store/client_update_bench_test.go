package store

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/schedhq/sched/state"
)

// clientReport is one allocation's report as a client sends it once its
// task runs: the client's fields and a task state with the three events
// every start records.
func clientReport(id string, now time.Time) *state.Allocation {
	ev := func(typ, msg string) *state.TaskEvent {
		return &state.TaskEvent{Type: typ, Time: now.UnixNano(), Message: msg, DisplayMessage: msg}
	}
	return &state.Allocation{
		ID: id, ClientStatus: state.AllocClientStatusRunning, ClientDescription: "Tasks are running",
		TaskStates: map[string]*state.TaskState{"t": {
			State: "running", StartedAt: now,
			Events: []*state.TaskEvent{
				ev(state.TaskReceived, "Task received by client"),
				ev(state.TaskSetup, "Building Task Directory"),
				ev(state.TaskStarted, "Task started by client"),
			},
		}},
	}
}

// BenchmarkClientUpdateCommand is what the servers' log costs a batch of
// client reports of 256 started allocations before it is applied:
// PrepareCommand's encoding and the decoding every server does of it.
func BenchmarkClientUpdateCommand(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	req := &AllocClientUpdateRequest{Now: now.UnixNano()}
	for i := range 256 {
		req.Allocs = append(req.Allocs, clientReport(fmt.Sprintf("%08x-0000-0000-0000-000000000000", i), now))
	}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		p, err := PrepareCommand(AllocClientUpdateRequestType, req)
		if err != nil {
			b.Fatal(err)
		}
		size = len(p.Data)
	}
	b.ReportMetric(float64(size), "bytes/entry")
}

// TestLogEntriesWithoutEmptyFieldsDecodeAlike checks the Raft log's
// encoding of allocations and task events, which leaves their empty
// scalar and pointer fields out, against the one of builds before it,
// which wrote every field: an entry in either form decodes to the same
// command on any server, and the new form is smaller.
func TestLogEntriesWithoutEmptyFieldsDecodeAlike(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UTC() // the log's times decode in UTC
	job := stJob("web")
	full := stAlloc("a2", job, "n1")
	full.PreemptedAllocations = []string{} // empty, not nil: stays so
	full.TaskStates = map[string]*state.TaskState{"t": {State: "dead", Failed: true, Events: []*state.TaskEvent{
		{Type: state.TaskTerminated, Time: 5, ExitCode: 3, Details: map[string]string{"exit_code": "3"}},
		{Type: state.TaskKilled, Time: 6, Details: map[string]string{}},
	}}}
	req := &AllocClientUpdateRequest{Now: now.UnixNano(), Allocs: []*state.Allocation{
		clientReport("a1", now), full, {ID: "a3", TaskStates: map[string]*state.TaskState{}},
		// A pointer to an empty struct is not empty: it is written, so it
		// comes back a pointer (the handle's RecursiveEmptyCheck is off).
		{ID: "a4", DeploymentStatus: &state.AllocDeploymentStatus{}},
	}}

	// Builds before this one wrote every field: a handle that reads no
	// `codec` tag (so no omitempty) writes what they wrote.
	oldHandle := newMsgpackHandle()
	oldHandle.TypeInfos = codec.NewTypeInfos([]string{"no-such-tag"})
	var old bytes.Buffer
	old.WriteByte(byte(AllocClientUpdateRequestType))
	if err := codec.NewEncoder(&old, oldHandle).Encode(req); err != nil {
		t.Fatal(err)
	}
	cur, err := Encode(AllocClientUpdateRequestType, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(cur) >= old.Len()*3/4 {
		t.Fatalf("entry is %d bytes, %d with every field: empty fields are still written", len(cur), old.Len())
	}
	_, fromOld, err := DecodeCommand(old.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	_, fromCur, err := DecodeCommand(cur)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromOld, fromCur) {
		t.Fatalf("the two forms decode differently:\n old %#v\n new %#v", fromOld, fromCur)
	}
	if !reflect.DeepEqual(fromCur, req) {
		t.Fatalf("the entry does not decode to what was encoded:\n got  %#v\n want %#v", fromCur, req)
	}
}

// BenchmarkApplyClientUpdatesOneJob applies the client reports of a
// count=1,000 job started on one node, in one command, as the dev
// agent's client sends them: every allocation of the job, alternately
// pending and running, with the task state a start records.
func BenchmarkApplyClientUpdatesOneJob(b *testing.B) {
	s, ids := benchAllocStore(b, 1, 1000, 1)
	now := time.Unix(1_700_000_000, 0)
	index := uint64(1 << 20)
	statuses := []string{state.AllocClientStatusRunning, state.AllocClientStatusPending}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := &AllocClientUpdateRequest{Now: int64(index)}
		for _, id := range ids {
			r := clientReport(id, now)
			r.ClientStatus = statuses[i%2]
			req.Allocs = append(req.Allocs, r)
		}
		index++
		stApply(b, s, index, AllocClientUpdateRequestType, req)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ids)), "ns/report")
}
