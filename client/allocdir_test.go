package client

import (
	"os"
	"path/filepath"
	"testing"
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
