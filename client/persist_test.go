package client

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/state"
)

func TestStateStoreRoundTrip(t *testing.T) {
	s := &stateStore{dir: t.TempDir()}
	a := &state.Allocation{ID: "a1", Job: &state.Job{ID: "j"}, TaskGroup: "g"}
	run := &persistedRun{Stopping: true, Tasks: map[string]*persistedTask{
		"t": {State: &state.TaskState{State: state.TaskStateRunning, Restarts: 2},
			Handle:  &driver.TaskHandle{TaskID: "a1/t", Driver: "raw_exec", PID: 42, State: []byte(`{"x":1}`)},
			Restart: restartWindow{Start: time.Unix(100, 0).UTC(), Count: 2}},
	}}
	if err := s.put(a, run); err != nil {
		t.Fatal(err)
	}
	// A corrupt neighbour is reported and skipped.
	if err := os.WriteFile(filepath.Join(s.dir, "bad"+stateSuffix), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, errs := s.load()
	if len(got) != 1 || len(errs) != 1 {
		t.Fatalf("loaded %d allocs, %d errors (%v)", len(got), len(errs), errs)
	}
	r := got[0]
	pt := r.Run.Tasks["t"]
	if r.Alloc.ID != "a1" || !r.Run.Stopping || pt.State.Restarts != 2 || pt.Handle.PID != 42 ||
		string(pt.Handle.State) != `{"x":1}` || pt.Restart.Count != 2 || !pt.Restart.Start.Equal(time.Unix(100, 0)) {
		t.Fatalf("round trip lost data: %+v %+v", r.Alloc, pt)
	}
	if err := s.remove("a1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.load(); len(got) != 0 {
		t.Fatalf("removed alloc still loads: %d", len(got))
	}
}

func TestWriteFileAtomicLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f")
	for _, body := range []string{"one", "two"} {
		if err := writeFileAtomic(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "sub"))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}
