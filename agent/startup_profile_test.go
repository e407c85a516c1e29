package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/schedhq/sched/state/store"
)

// TestStartupProfileNamesTheProcess: the profile goes to the file the
// environment names, "%p" replaced by the process ID, and stop writes it
// once however often it is called.
func TestStartupProfileNamesTheProcess(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(StartupProfileEnv, filepath.Join(dir, "start-%p.pprof"))
	p := startStartupProfile(os.Stderr)
	if p == nil {
		t.Fatal("no profile started")
	}
	p.stop()
	p.stop()
	want := filepath.Join(dir, "start-"+strconv.Itoa(os.Getpid())+".pprof")
	if fi, err := os.Stat(want); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %v)", want, err, fi)
	}
	t.Setenv(StartupProfileEnv, "")
	if startStartupProfile(os.Stderr) != nil {
		t.Fatal("a profile started with the variable empty")
	}
}

// TestRestorePutsTheGCPercentBack: a restore into a small heap runs at
// restoreGCPercent and leaves the collector's setting as it found it,
// whether it succeeds or fails; GOGC=off stays off.
func TestRestorePutsTheGCPercentBack(t *testing.T) {
	src, err := store.NewStore(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&buf); err != nil {
		t.Fatal(err)
	}
	old := debug.SetGCPercent(150)
	defer debug.SetGCPercent(old)
	for _, tc := range []struct {
		name    string
		percent int
		data    []byte
		wantErr bool
	}{
		{"restored", 150, buf.Bytes(), false},
		{"refused", 150, []byte("not a snapshot"), true},
		{"gc off", -1, buf.Bytes(), false},
	} {
		dst, err := store.NewStore(store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		debug.SetGCPercent(tc.percent)
		err = (&fsm{store: dst}).Restore(bytes.NewReader(tc.data))
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: Restore: %v", tc.name, err)
		}
		if got := debug.SetGCPercent(tc.percent); got != tc.percent {
			t.Fatalf("%s: GOGC %d after the restore, want %d", tc.name, got, tc.percent)
		}
	}
}
