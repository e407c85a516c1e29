package logrotate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func read(t *testing.T, dir string, idx int) string {
	t.Helper()
	b, err := os.ReadFile(Path(dir, "web.stdout", idx))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRotateAtSizeKeepingMaxFiles(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Config{Dir: dir, Name: "web.stdout", MaxFiles: 3, MaxFileSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	// 45 bytes in writes of 5: files of 10,10,10,10,5; the newest 3 stay.
	var all strings.Builder
	for i := range 9 {
		chunk := strings.Repeat(string(rune('a'+i)), 5)
		all.WriteString(chunk)
		if n, err := r.Write([]byte(chunk)); err != nil || n != 5 {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	idxs, err := Indexes(dir, "web.stdout")
	if err != nil || !slices.Equal(idxs, []int{2, 3, 4}) {
		t.Fatalf("indexes %v, %v; want [2 3 4]", idxs, err)
	}
	got := read(t, dir, 2) + read(t, dir, 3) + read(t, dir, 4)
	if want := all.String()[20:]; got != want {
		t.Fatalf("kept %q, want the last 25 bytes %q", got, want)
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func TestLargeWriteIsSplit(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Config{Dir: dir, Name: "web.stdout", MaxFiles: 10, MaxFileSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Write([]byte("0123456789")); err != nil || n != 10 {
		t.Fatalf("write: %d, %v", n, err)
	}
	for i, want := range []string{"0123", "4567", "89"} {
		if got := read(t, dir, i); got != want {
			t.Fatalf("file %d: %q, want %q", i, got, want)
		}
	}
}

func TestReopenContinues(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Name: "web.stdout", MaxFiles: 2, MaxFileSize: 6}
	r, _ := New(cfg)
	r.Write([]byte("aaaaaabbb"))
	r.Close()
	// A restarted task appends to the newest file, then rotates on.
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("cccdd"))
	r.Close()
	if got := read(t, dir, 1) + "|" + read(t, dir, 2); got != "bbbccc|dd" {
		t.Fatalf("files %q", got)
	}
	if _, err := os.Stat(Path(dir, "web.stdout", 0)); !os.IsNotExist(err) {
		t.Fatalf("file 0 kept beyond MaxFiles: %v", err)
	}
	// A lower MaxFiles on reopen prunes at once.
	cfg.MaxFiles = 1
	r, _ = New(cfg)
	r.Close()
	if idxs, _ := Indexes(dir, "web.stdout"); !slices.Equal(idxs, []int{2}) {
		t.Fatalf("indexes %v after reopening with MaxFiles 1", idxs)
	}
}

func TestIndexesIgnoresOtherFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"web.stdout.0", "web.stdout.12", "web.stdout.x", "web.stdout.01", "web.stderr.3", ".web.stdout.fifo", "api.stdout.1"} {
		os.WriteFile(dir+"/"+name, nil, 0o644)
	}
	if idxs, err := Indexes(dir, "web.stdout"); err != nil || !slices.Equal(idxs, []int{0, 12}) {
		t.Fatalf("indexes %v, %v", idxs, err)
	}
	if idxs, err := Indexes(dir+"/missing", "web.stdout"); err != nil || idxs != nil {
		t.Fatalf("missing dir: %v, %v", idxs, err)
	}
}

func TestConfigChecked(t *testing.T) {
	for _, cfg := range []Config{
		{Name: "x", MaxFiles: 1, MaxFileSize: 1},
		{Dir: t.TempDir(), MaxFiles: 1, MaxFileSize: 1},
		{Dir: t.TempDir(), Name: "x", MaxFileSize: 1},
		{Dir: t.TempDir(), Name: "x", MaxFiles: 1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

// A FIFO or a link put at a log file's name by a task is refused at once:
// the client neither blocks in open nor writes through the link.
func TestOpenRefusesFIFOAndLink(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(Path(dir, "web.stdout", 0), 0o600); err != nil {
		t.Fatal(err)
	}
	// Without a reader the open fails at once (ENXIO); with one, the type
	// check refuses it.
	if _, err := New(Config{Dir: dir, Name: "web.stdout", MaxFiles: 2, MaxFileSize: 10}); err == nil {
		t.Fatal("FIFO without a reader: New succeeded")
	}
	rd, err := os.OpenFile(Path(dir, "web.stdout", 0), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if _, err := New(Config{Dir: dir, Name: "web.stdout", MaxFiles: 2, MaxFileSize: 10}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("FIFO with a reader: New = %v, want a refusal naming the type", err)
	}

	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, Path(dir, "web.stderr", 0)); err != nil {
		t.Fatal(err)
	}
	if r, err := New(Config{Dir: dir, Name: "web.stderr", MaxFiles: 2, MaxFileSize: 10}); err == nil {
		r.Write([]byte("x"))
		r.Close()
		t.Fatal("link: New succeeded")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("link target written: %q", b)
	}
}
