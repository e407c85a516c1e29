package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// A task cannot make the client create anything outside the allocation
// directory, whatever name a stored job gives it (issue 13: a task named
// ".." got directories outside it).
func TestAllocDirRefusesEscapingTaskNames(t *testing.T) {
	for _, name := range []string{"..", ".", "../../escaped", "a/b", ""} {
		parent := t.TempDir()
		d := allocDir{Root: filepath.Join(parent, "alloc-1")}
		if err := d.build([]string{"web", name}); err == nil {
			t.Errorf("task %q: build succeeded", name)
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.Name() != "alloc-1" {
				t.Errorf("task %q: %s created beside the allocation directory", name, e.Name())
			}
		}
		for _, p := range []string{filepath.Join(parent, "local"), filepath.Join(parent, "secrets")} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("task %q: %s exists", name, p)
			}
		}
	}
}

// A mock task that writes nothing runs without an allocation directory;
// the fs and logs endpoints' first read builds it, and garbage collection
// removes it. A raw_exec task and a mock task that writes logs have theirs
// before they start.
func TestAllocDirIsBuiltOnFirstUse(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	bare := allocFor(c, job(state.JobTypeService, mock("m", nil)))
	fs.addAlloc(bare)
	waitAllocStatus(t, fs, bare.ID, state.AllocClientStatusRunning)
	if _, err := os.Stat(c.allocPath(bare.ID)); !os.IsNotExist(err) {
		t.Fatalf("a mock task that writes nothing got an allocation directory: %v", err)
	}
	logs, err := c.AllocLogDir(bare.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(logs); err != nil || !fi.IsDir() {
		t.Fatalf("the logs endpoint's directory was not built on first use: %v", err)
	}
	for _, p := range []string{"m/local", "m/secrets"} {
		if _, err := os.Stat(allocPathOf(c, bare.ID, p)); err != nil {
			t.Fatalf("%s after the first use: %v", p, err)
		}
	}

	logged := allocFor(c, job(state.JobTypeService, mock("m", map[string]any{"stdout_string": "hello"})))
	fs.addAlloc(logged)
	waitAllocStatus(t, fs, logged.ID, state.AllocClientStatusRunning)
	if got := readFile(t, allocPathOf(c, logged.ID, "alloc", "logs", "m.stdout.0")); got != "hello" {
		t.Fatalf("mock stdout_string in the log: %q", got)
	}

	shell := allocFor(c, job(state.JobTypeBatch, sh("s", `test -d "$SCHED_SECRETS_DIR" && test -d "$SCHED_ALLOC_DIR/logs"`)))
	fs.addAlloc(shell)
	waitAllocStatus(t, fs, shell.ID, state.AllocClientStatusComplete)

	stopAllocDirect(c, fs, bare.ID)
	testutil.WaitForErr(t, 15*time.Second, "the stopped allocation collected", func() error {
		c.cfg.GCAllocAge = 0
		if c.collect() == 0 {
			return errors.New("nothing collected yet")
		}
		if _, err := os.Stat(c.allocPath(bare.ID)); !os.IsNotExist(err) {
			return fmt.Errorf("directory of a collected allocation: %v", err)
		}
		return nil
	})
	if _, err := c.AllocDir(bare.ID); err == nil {
		t.Fatal("the directory of a collected allocation was served")
	}
	if _, err := os.Stat(c.allocPath(bare.ID)); !os.IsNotExist(err) {
		t.Fatalf("a collected allocation's directory was built again: %v", err)
	}
}
