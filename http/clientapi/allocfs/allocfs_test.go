package allocfs

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// dirWith is a directory holding one file of every kind a task can make
// (a device only when the test runs as root).
func dirWith(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for link, target := range map[string]string{"to-file": "file", "to-fifo": "fifo", "out": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func read(t *testing.T, f *os.File) string {
	t.Helper()
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenInRootReadsRegularFilesOnly(t *testing.T) {
	dir := dirWith(t)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"file", "to-file"} {
		f, err := OpenInRoot(root, name, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := read(t, f); got != "data" {
			t.Errorf("%s: %q", name, got)
		}
	}
	cases := map[string]string{"fifo": "a named pipe", "to-fifo": "a named pipe", "sock": "a socket", "sub": "a directory"}
	if os.Geteuid() == 0 {
		cases["null"] = "a character device"
	}
	for name, kind := range cases {
		_, err := OpenInRoot(root, name, "t/"+name)
		var nr *NotRegularError
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), `"t/`+name+`" is `+kind+", not a regular file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := OpenInRoot(root, "out", "out"); err == nil || errors.As(err, new(*NotRegularError)) {
		t.Errorf("a link out of the root: %v", err)
	}
	if _, err := OpenInRoot(root, "nope", "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestOpenNoFollowRefusesLinks(t *testing.T) {
	dir := dirWith(t)
	f, err := OpenNoFollow(filepath.Join(dir, "file"), "file")
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, f); got != "data" {
		t.Errorf("file: %q", got)
	}
	for name, kind := range map[string]string{"to-file": "a symbolic link", "out": "a symbolic link", "fifo": "a named pipe", "sock": "a socket"} {
		_, err := OpenNoFollow(filepath.Join(dir, name), name)
		if !errors.As(err, new(*NotRegularError)) || !strings.Contains(err.Error(), "is "+kind) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The opened file reads as usual: O_NONBLOCK was cleared.
func TestOpenedFileIsBlocking(t *testing.T) {
	dir := dirWith(t)
	f, err := OpenNoFollow(filepath.Join(dir, "file"), "file")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc, _ := f.SyscallConn()
	var flags int
	rc.Control(func(fd uintptr) { flags, _ = fcntlGetfl(fd) })
	if flags&syscall.O_NONBLOCK != 0 {
		t.Errorf("O_NONBLOCK still set: %#x", flags)
	}
}

func fcntlGetfl(fd uintptr) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func TestGateCapsPerAllocationAndPerAgent(t *testing.T) {
	g := &Gate{Limits: Limits{PerAlloc: 2, PerAgent: 3}}
	r1, err1 := g.Acquire("a")
	r2, err2 := g.Acquire("a")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	var busy *BusyError
	if _, err := g.Acquire("a"); !errors.As(err, &busy) || busy.AllocID != "a" || busy.Limit != 2 {
		t.Errorf("third of a: %v", err)
	}
	r3, err := g.Acquire("b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Acquire("c"); !errors.As(err, &busy) || busy.AllocID != "" || busy.Limit != 3 || !strings.Contains(err.Error(), "this client agent") {
		t.Errorf("fourth on the agent: %v", err)
	}
	r1()
	r1() // a second release counts once
	if g.InUse() != 2 {
		t.Errorf("in use %d, want 2", g.InUse())
	}
	r4, err := g.Acquire("c")
	if err != nil {
		t.Fatal(err)
	}
	r2()
	r3()
	r4()
	if g.InUse() != 0 || len(g.byAlloc) != 0 {
		t.Errorf("after every release: %d in use, %v", g.InUse(), g.byAlloc)
	}
}

func TestGateDefaultsAndNil(t *testing.T) {
	var g Gate
	var wg sync.WaitGroup
	var mu sync.Mutex
	var releases []func()
	refused := 0
	for range DefaultPerAgent + 10 {
		wg.Go(func() {
			r, err := g.Acquire("a")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused++
				return
			}
			releases = append(releases, r)
		})
	}
	wg.Wait()
	if len(releases) != DefaultPerAlloc || refused != DefaultPerAgent+10-DefaultPerAlloc {
		t.Errorf("admitted %d, refused %d", len(releases), refused)
	}
	var none *Gate
	if r, err := none.Acquire("a"); err != nil || r == nil {
		t.Errorf("nil gate: %v", err)
	}
}

// A pipe swapped in between the type check and the open neither blocks
// the open nor gets read.
func TestOpenOfASwappedInPipeDoesNotBlock(t *testing.T) {
	dir := dirWith(t)
	f, err := os.OpenFile(filepath.Join(dir, "fifo"), openFlags, 0) // would block without O_NONBLOCK
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkOpened(f, "fifo"); !errors.As(err, new(*NotRegularError)) || !strings.Contains(err.Error(), "a named pipe") {
		t.Errorf("checkOpened: %v", err)
	}
}
