package raft

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
)

// errRejected is the test FSM's sentinel for a command it refuses.
var errRejected = errors.New("rejected")

// kvFSM is the test state machine: a string map driven by "set k v" and
// "fail reason" commands. It records what it applied so tests can tell a
// snapshot restore from a log replay.
type kvFSM struct {
	mu       sync.Mutex
	data     map[string]string
	applied  []uint64 // indexes of commands applied since start or restore
	restores int
	// gate, when set, holds back "slow" commands until it is closed, so a
	// test can keep one server's FSM behind the others.
	gate chan struct{}
	// persisting and persistGate, when set, make the next snapshots'
	// Persist send on persisting and then wait until persistGate is
	// closed, so a test can apply entries while a snapshot is written.
	persisting  chan struct{}
	persistGate chan struct{}
}

var _ FSM = (*kvFSM)(nil)

func newKV() *kvFSM { return &kvFSM{data: map[string]string{}} }

func setCmd(k, v string) []byte { return []byte("set " + k + " " + v) }

func (f *kvFSM) Apply(e Entry) any {
	index, data := e.Index, e.Data
	if strings.HasPrefix(string(data), "slow ") {
		if f.gate != nil {
			<-f.gate
		}
		data = []byte("set " + strings.TrimPrefix(string(data), "slow "))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, index)
	op, rest, _ := strings.Cut(string(data), " ")
	switch op {
	case "set":
		k, v, _ := strings.Cut(rest, " ")
		f.data[k] = v
		return "ok " + k
	case "fail":
		return fmt.Errorf("%w: %s", errRejected, rest)
	default:
		return fmt.Errorf("unknown command %q", op)
	}
}

func (f *kvFSM) Snapshot() (FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := make(map[string]string, len(f.data))
	for k, v := range f.data {
		cp[k] = v
	}
	if f.persistGate != nil {
		return gatedSnapshot{kvSnapshot(cp), f.persisting, f.persistGate}, nil
	}
	return kvSnapshot(cp), nil
}

// gatedSnapshot is a kvSnapshot whose Persist says it began and waits for
// its gate (kvFSM.persistGate).
type gatedSnapshot struct {
	kvSnapshot
	persisting chan<- struct{}
	gate       <-chan struct{}
}

func (s gatedSnapshot) Persist(w io.Writer) error {
	s.persisting <- struct{}{}
	<-s.gate
	return s.kvSnapshot.Persist(w)
}

func (f *kvFSM) Restore(r io.Reader) error {
	data := map[string]string{}
	if err := json.NewDecoder(r).Decode(&data); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = data
	f.applied = nil
	f.restores++
	return nil
}

func (f *kvFSM) get(k string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.data[k]
	return v, ok
}

func (f *kvFSM) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.data)
}

func (f *kvFSM) stats() (restores int, applied []uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restores, append([]uint64(nil), f.applied...)
}

type kvSnapshot map[string]string

func (s kvSnapshot) Persist(w io.Writer) error {
	return json.NewEncoder(w).Encode(map[string]string(s))
}
func (s kvSnapshot) Release() {}

// memSink is a SnapshotSink in memory, for round-tripping the adapter.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

var _ hraft.SnapshotSink = (*memSink)(nil)

func TestAdapterSnapshotRoundTripCarriesAppliedIndex(t *testing.T) {
	src := &fsmAdapter{fsm: newKV()}
	src.ApplyBatch([]*hraft.Log{
		{Index: 3, Type: hraft.LogCommand, Data: setCmd("a", "1")},
		{Index: 4, Type: hraft.LogConfiguration},
		{Index: 5, Type: hraft.LogCommand, Data: setCmd("b", "2")},
	})
	if got := src.applied.load(); got != 5 {
		t.Fatalf("applied after batch = %d, want 5", got)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v, want closed only", sink.closed, sink.cancelled)
	}

	dstKV := newKV()
	dst := &fsmAdapter{fsm: dstKV}
	if err := dst.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if got := dst.applied.load(); got != 5 {
		t.Errorf("applied after restore = %d, want 5", got)
	}
	for k, want := range map[string]string{"a": "1", "b": "2"} {
		if v, _ := dstKV.get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
}

func TestAdapterRestoreRejectsForeignSnapshots(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"empty", ""},
		{"short", "sched"},
		{"wrong magic", "notsched\x00\x00\x00\x00\x00\x00\x00\x01{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := newKV()
			a := &fsmAdapter{fsm: kv}
			if err := a.Restore(io.NopCloser(strings.NewReader(tt.data))); err == nil {
				t.Fatal("Restore succeeded, want an error")
			}
			if r, _ := kv.stats(); r != 0 {
				t.Errorf("FSM restored %d times, want 0", r)
			}
		})
	}
}

func TestAdapterResponsesLineUpWithLogs(t *testing.T) {
	a := &fsmAdapter{fsm: newKV()}
	out := a.ApplyBatch([]*hraft.Log{
		{Index: 1, Type: hraft.LogConfiguration},
		{Index: 2, Type: hraft.LogCommand, Data: setCmd("k", "v")},
		{Index: 3, Type: hraft.LogCommand, Data: []byte("fail nope")},
	})
	if len(out) != 3 {
		t.Fatalf("got %d responses, want 3", len(out))
	}
	if out[0] != nil {
		t.Errorf("configuration entry response = %v, want nil", out[0])
	}
	if out[1] != "ok k" {
		t.Errorf("set response = %v, want %q", out[1], "ok k")
	}
	if err, _ := out[2].(error); !errors.Is(err, errRejected) {
		t.Errorf("fail response = %v, want errRejected", out[2])
	}
}

// batchKV is a kvFSM with ApplyBatch, recording the batches it was given.
type batchKV struct {
	*kvFSM
	batches [][]uint64
}

var _ BatchFSM = (*batchKV)(nil)

func (f *batchKV) ApplyBatch(entries []Entry) []any {
	var idx []uint64
	out := make([]any, len(entries))
	for i, e := range entries {
		idx = append(idx, e.Index)
		out[i] = f.Apply(e)
	}
	f.batches = append(f.batches, idx)
	return out
}

// TestAdapterHandsCommandsToBatchFSM: a BatchFSM gets every command of a
// commit round in one call, without the markers and configuration entries
// between them, and each response reaches its own log's position.
func TestAdapterHandsCommandsToBatchFSM(t *testing.T) {
	kv := &batchKV{kvFSM: newKV()}
	a := &fsmAdapter{fsm: kv}
	out := a.ApplyBatch([]*hraft.Log{
		{Index: 1, Type: hraft.LogConfiguration},
		{Index: 2, Type: hraft.LogCommand, Data: setCmd("k", "v")},
		{Index: 3, Type: hraft.LogCommand, Extensions: markerExtension},
		{Index: 4, Type: hraft.LogCommand, Data: []byte("fail nope")},
		{Index: 5, Type: hraft.LogCommand, Data: setCmd("j", "w")},
	})
	if want := [][]uint64{{2, 4, 5}}; !slices.EqualFunc(kv.batches, want, slices.Equal) {
		t.Errorf("batches = %v, want %v", kv.batches, want)
	}
	if out[0] != nil || out[2] != nil {
		t.Errorf("configuration and marker responses = %v, %v, want nil", out[0], out[2])
	}
	if out[1] != "ok k" || out[4] != "ok j" {
		t.Errorf("set responses = %v, %v, want ok k, ok j", out[1], out[4])
	}
	if err, _ := out[3].(error); !errors.Is(err, errRejected) {
		t.Errorf("fail response = %v, want errRejected", out[3])
	}
	if got := a.applied.load(); got != 5 {
		t.Errorf("applied = %d, want 5", got)
	}
	// A round of one command goes through Apply.
	a.ApplyBatch([]*hraft.Log{{Index: 6, Type: hraft.LogCommand, Data: setCmd("x", "y")}})
	if len(kv.batches) != 1 {
		t.Errorf("batches = %v: a single command was batched", kv.batches)
	}
	if v, _ := kv.get("x"); v != "y" {
		t.Errorf("x = %q, want y", v)
	}
}

// localKV is a kvFSM recording the Local value of every entry it applies.
type localKV struct {
	*kvFSM
	lmu    sync.Mutex
	locals []any
}

func (f *localKV) Apply(e Entry) any {
	f.lmu.Lock()
	f.locals = append(f.locals, e.Local)
	f.lmu.Unlock()
	return f.kvFSM.Apply(e)
}

// localBatchKV is a localKV with ApplyBatch.
type localBatchKV struct{ *localKV }

func (f localBatchKV) ApplyBatch(entries []Entry) []any {
	out := make([]any, len(entries))
	for i, e := range entries {
		out[i] = f.Apply(e)
	}
	return out
}

// TestAdapterHandsLocalValues: the value a proposer left for its entry
// (Node.ApplyLocal) reaches the FSM with that very entry, once, alone or
// in a batch; a copy of the bytes (a follower's, a replay's) gets none.
func TestAdapterHandsLocalValues(t *testing.T) {
	for _, batch := range []bool{false, true} {
		kv := &localKV{kvFSM: newKV()}
		a := &fsmAdapter{fsm: kv}
		if batch {
			a.fsm = localBatchKV{kv}
		}
		one, two := setCmd("a", "1"), setCmd("b", "2")
		a.locals.Store(&one[0], "one")
		a.locals.Store(&two[0], "two")
		cmd := func(i uint64, data []byte) *hraft.Log {
			return &hraft.Log{Index: i, Type: hraft.LogCommand, Data: data}
		}
		a.ApplyBatch([]*hraft.Log{cmd(1, bytes.Clone(one))})
		a.ApplyBatch([]*hraft.Log{cmd(2, one), cmd(3, two), cmd(4, one)})
		if want := []any{nil, "one", "two", nil}; !slices.Equal(kv.locals, want) {
			t.Errorf("batch %v: locals = %v, want %v", batch, kv.locals, want)
		}
	}
}

// TestApplyLocalReachesTheLeadersFSM: on a real node, ApplyLocal's value
// reaches the FSM with the entry, and Apply's entries carry none.
func TestApplyLocalReachesTheLeadersFSM(t *testing.T) {
	kv := &localKV{kvFSM: newKV()}
	n := startNode(t, testConfig(t, "n1", t.TempDir(), true), localBatchKV{kv})
	waitLeader(t, n, 10*time.Second)
	if _, _, err := n.ApplyLocal(ctxT(t, 5*time.Second), setCmd("a", "1"), "mine"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Apply(ctxT(t, 5*time.Second), setCmd("b", "2")); err != nil {
		t.Fatal(err)
	}
	kv.lmu.Lock()
	defer kv.lmu.Unlock()
	if want := []any{"mine", nil}; !slices.Equal(kv.locals, want) {
		t.Errorf("locals = %v, want %v", kv.locals, want)
	}
	n.fsm.locals.Range(func(k, _ any) bool { t.Errorf("a local value left behind: %v", k); return true })
}
