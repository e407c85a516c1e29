package taskinput

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/schedhq/sched/state"
)

// ownerOf is path's uid, without following a link.
func ownerOf(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// A task with a uid of its own owns what is written for it: a template
// with perms 0600, the dispatch payload and an artifact are readable by
// the task, not only by the client.
func TestFilesForATaskAreItsOwn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files to another uid needs root")
	}
	const uid = 80123
	src := filepath.Join(t.TempDir(), "tool.txt")
	if err := os.WriteFile(src, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := newInput(t, &state.Template{DestPath: "secrets.env", EmbeddedTmpl: "A=1", Perms: "0600"})
	in.Owner = uid
	in.Task.DispatchPayload = &state.DispatchPayloadConfig{File: "input.json"}
	in.Payload = []byte("{}")
	in.Task.Artifacts = []*state.TaskArtifact{{GetterSource: "file://" + src, RelativeDest: "local/tools"}}

	if err := FetchArtifacts(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if err := WriteDispatchPayload(in); err != nil {
		t.Fatal(err)
	}
	if _, err := RenderTemplates(in); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(in.TaskDir, "secrets.env"),
		filepath.Join(in.LocalDir, "input.json"),
		filepath.Join(in.LocalDir, "tools"),
		filepath.Join(in.LocalDir, "tools", "tool.txt"),
	} {
		if got := ownerOf(t, p); got != uid {
			t.Errorf("%s is owned by %d, want the task's uid %d", p, got, uid)
		}
	}
	fi, err := os.Stat(filepath.Join(in.TaskDir, "secrets.env"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("template perms %v, want 0600", fi.Mode().Perm())
	}

	// Without a uid of its own, the files stay the client's.
	in2 := newInput(t, &state.Template{DestPath: "a.txt", EmbeddedTmpl: "a", Perms: "0600"})
	if _, err := RenderTemplates(in2); err != nil {
		t.Fatal(err)
	}
	if got := ownerOf(t, filepath.Join(in2.TaskDir, "a.txt")); got != uint32(os.Geteuid()) {
		t.Errorf("without an owner the template is owned by %d, want the client's %d", got, os.Geteuid())
	}
}
