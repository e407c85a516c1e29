package store

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store/internal/packed"
)

// stManyAllocsSnapshot returns a snapshot of a store holding n
// allocations of one job, enough rows for several restore batches.
func stManyAllocsSnapshot(t *testing.T, n int) (*Store, []byte) {
	t.Helper()
	s := stStore(t, Config{})
	stApply(t, s, 1, NodeRegisterRequestType, &NodeRegisterRequest{Node: stNode("n1")})
	job := stJob("a")
	stRegister(t, s, 2, job, nil)
	allocs := make([]*state.Allocation, n)
	for i := range allocs {
		allocs[i] = stAlloc(fmt.Sprintf("a%05d", i), job, "n1")
		if i%2 == 0 {
			allocs[i].NodeName = "node-n1"
		}
	}
	stApply(t, s, 3, AllocUpdateRequestType, &AllocUpdateRequest{Allocs: allocs, Now: 3})
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	return s, buf.Bytes()
}

// The restore pipeline hands over every row, in stream order, whatever
// the batching.
func TestDecodePipelinedKeepsOrder(t *testing.T) {
	_, data := stManyAllocsSnapshot(t, 3*restoreBatchRows+7)
	var want []string
	if err := decodeSnapshot(packed.New(logCodec{}), bytes.NewReader(data), func(name string, v any) error {
		if name == snapshotAllocChunkName {
			name = TableAllocs
		}
		want = append(want, fmt.Sprintf("%s %v", name, rowID(v)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := decodePipelined(packed.New(logCodec{}), bytes.NewReader(data), func(rows []snapshotRow) error {
		if len(rows) == 0 || len(rows) > restoreBatchRows {
			t.Errorf("a batch of %d rows", len(rows))
		}
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %v", r.name, rowID(r.v)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pipelined rows differ: %d rows, want %d", len(got), len(want))
	}
}

// rowID is what tells rows apart in TestDecodePipelinedKeepsOrder.
func rowID(v any) any {
	if a, ok := v.(*state.Allocation); ok {
		return a.ID
	}
	return reflect.TypeOf(v)
}

// A failed insert stops the decoding and is the restore's error; a
// decoding error (a truncated stream) is too, and the store keeps its
// contents either way.
func TestDecodePipelinedErrors(t *testing.T) {
	s, data := stManyAllocsSnapshot(t, 4*restoreBatchRows)
	boom := errors.New("boom")
	calls := 0
	err := decodePipelined(packed.New(logCodec{}), bytes.NewReader(data), func([]snapshotRow) error {
		calls++
		if calls == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls != 2 {
		t.Fatalf("insert failing on the second batch: %v after %d batches", err, calls)
	}
	if err := s.Restore(bytes.NewReader(data[:len(data)*2/3])); err == nil {
		t.Fatal("a truncated snapshot restored")
	}
	if n := len(stMust[[]*state.Allocation](t)(s.AllocsByNode(nil, "n1"))); n != 4*restoreBatchRows {
		t.Fatalf("after a failed restore the store holds %d allocations, want %d", n, 4*restoreBatchRows)
	}
}

// A restored allocation shares its node's ID and name with the node row,
// and the allocations of a job one job object, as Apply's do; its values
// are the ones persisted (packed.Compactor.AllocRecord).
func TestRestoreSharesNodesAndJobs(t *testing.T) {
	src, data := stManyAllocsSnapshot(t, 300)
	dst := stStore(t, Config{})
	if err := dst.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	stCompareDumps(t, stDump(t, src), stDump(t, dst))
	node := stMust[*state.Node](t)(dst.NodeByID(nil, "n1"))
	var job *state.Job
	n := 0
	err := eachAlloc(nil, dst.readTxn(), "", func(a *state.Allocation) bool {
		n++
		if unsafe.StringData(a.NodeID) != unsafe.StringData(node.ID) || (a.NodeName != "" && unsafe.StringData(a.NodeName) != unsafe.StringData(node.Name)) {
			t.Errorf("allocation %s does not share its node's strings", a.ID)
			return false
		}
		if job == nil {
			job = a.Job
		}
		if a.Job != job || unsafe.StringData(a.JobID) != unsafe.StringData(job.ID) {
			t.Errorf("allocation %s does not share its job", a.ID)
			return false
		}
		return true
	})
	if err != nil || n != 300 {
		t.Fatalf("restored %d allocations (%v), want 300", n, err)
	}
}
