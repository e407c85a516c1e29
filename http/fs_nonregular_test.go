package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/http/clientapi/allocfs"
	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/internal/testutil"
)

// fifoWorld is fsWorld with a named pipe in the task's local directory
// (t/local/fifo, as a task makes with mkfifo) and another in place of
// the task's first stdout log. release opens both pipes for writing
// once, which frees any reader stuck opening them (code that blocks
// there would otherwise hang the test server's Close); cleanup calls it
// too.
func fifoWorld(t *testing.T) (h *harness, fc *fakeClientAPI, dir string, release func()) {
	t.Helper()
	h, fc = localClientHarness(t)
	dir, err := fc.AllocDir(apitest.AllocID(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "server/local"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifos := []string{filepath.Join(dir, "server/local/fifo"), filepath.Join(fc.dir, "server.stdout.0")}
	for _, p := range fifos {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	release = func() {
		for _, p := range fifos {
			// O_RDWR never blocks on a FIFO, and counts as a writer.
			if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
				f.Close()
			}
		}
	}
	t.Cleanup(release)
	return h, fc, dir, release
}

// getWithin sends GET url and gives up after d; cancelled reports that
// it gave up before a status (or the whole body) arrived.
func getWithin(c *http.Client, url string, d time.Duration) (code int, body string, cancelled bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", ctx.Err() != nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, string(b), ctx.Err() != nil, err
	}
	return resp.StatusCode, string(b), false, nil
}

// countDir counts the entries of a /proc directory.
func countDir(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir(path)
	if err != nil {
		t.Skipf("cannot count %s: %v", path, err)
	}
	return len(entries)
}

// Named pipes, sockets and devices are refused with their type by every
// endpoint that reads a file, without opening them; ls and stat show
// them as entries.
func TestFSRefusesNonRegularFiles(t *testing.T) {
	h, fc, dir, release := fifoWorld(t)
	srv := httptest.NewServer(h.srv.Handler())
	defer srv.Close()
	defer release()
	local := filepath.Join(dir, "server/local")
	// A unix socket bound in the directory (a short relative name: the
	// socket path limit is 108 bytes).
	wd, _ := os.Getwd()
	if err := os.Chdir(local); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", "sock")
	os.Chdir(wd)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink("fifo", filepath.Join(local, "to-fifo")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "conf"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("conf", filepath.Join(local, "to-conf")); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, kind string }{
		{"server/local/fifo", "is a named pipe, not a regular file"},
		{"/server/local/sock", "is a socket, not a regular file"},
		// A link that stays inside is followed, as before; what it
		// leads to is judged.
		{"server/local/to-fifo", "is a named pipe, not a regular file"},
	}
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(filepath.Join(local, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ path, kind string }{"server/local/null", "is a character device, not a regular file"})
	} else {
		t.Log("not root: no device node to test")
	}
	for _, c := range cases {
		for _, op := range []string{"cat", "readat"} {
			code, body, _, err := getWithin(srv.Client(), srv.URL+fsURL(op, c.path), 2*time.Second)
			if code != http.StatusBadRequest || !strings.Contains(body, c.kind) || !strings.Contains(body, `"`+strings.TrimPrefix(c.path, "")+`"`) {
				t.Errorf("%s %s: %d %q (%v), want 400 %q", op, c.path, code, body, err, c.kind)
			}
		}
	}
	// Listed and described, not opened.
	var names []string
	code, body, _, err := getWithin(srv.Client(), srv.URL+fsURL("ls", "server/local"), 2*time.Second)
	if code != http.StatusOK {
		t.Fatalf("ls: %d %q (%v)", code, body, err)
	}
	for _, n := range []string{`"fifo"`, `"sock"`, `"p`, `"S`} {
		if !strings.Contains(body, n) {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		t.Errorf("ls lacks %v: %s", names, body)
	}
	if code, body, _, err := getWithin(srv.Client(), srv.URL+fsURL("stat", "server/local/fifo"), 2*time.Second); code != http.StatusOK || !strings.Contains(body, `"FileMode":"p`) {
		t.Errorf("stat fifo: %d %q (%v)", code, body, err)
	}
	if code, body, _, _ := getWithin(srv.Client(), srv.URL+fsURL("ls", "server/local/fifo"), 2*time.Second); code != http.StatusBadRequest || !strings.Contains(body, "not a directory") {
		t.Errorf("ls fifo: %d %q", code, body)
	}
	if code, body, _, _ := getWithin(srv.Client(), srv.URL+fsURL("cat", "server/local/to-conf"), 2*time.Second); code != http.StatusOK || body != "hello" {
		t.Errorf("cat through a link inside: %d %q", code, body)
	}

	// Logs: a pipe in place of a log file, and a link (to a host file)
	// in place of another, are refused before the stream starts.
	for _, q := range []string{"plain=true", "plain=true&follow=true", "follow=true", "offset=3"} {
		code, body, _, err := getWithin(srv.Client(), srv.URL+logsURL(q), 2*time.Second)
		if code != http.StatusBadRequest || !strings.Contains(body, `"alloc/logs/server.stdout.0" is a named pipe, not a regular file`) {
			t.Errorf("logs %s: %d %q (%v)", q, code, body, err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(fc.dir, "server.stderr.0")); err != nil {
		t.Fatal(err)
	}
	code, body, _, err = getWithin(srv.Client(), srv.URL+logsURL("type=stderr&plain=true"), 2*time.Second)
	if code != http.StatusBadRequest || !strings.Contains(body, "is a symbolic link, not a regular file") || strings.Contains(body, "root:") {
		t.Errorf("logs through a link: %d %q (%v)", code, body, err)
	}
}

// fsStormSize is how many requests TestFSFIFOStormLeavesNothingBehind
// sends (fewer with -short).
func fsStormSize() int {
	if testing.Short() {
		return 200
	}
	return 2000
}

// A storm of reads of a named pipe, each given up after 50 ms (issue 28:
// each used to leave a thread blocked in open() and its descriptors
// held, until the agent could open nothing): every one is answered 400
// (or given up), and the process's threads and descriptors stay flat.
func TestFSFIFOStormLeavesNothingBehind(t *testing.T) {
	h, fc, _, release := fifoWorld(t)
	srv := httptest.NewServer(h.srv.Handler())
	defer srv.Close()
	defer release()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	c := &http.Client{Transport: tr}
	urls := []string{
		fsURL("cat", "server/local/fifo"),
		fsURL("readat", "/server/local/fifo") + "&offset=0&limit=10",
		logsURL("plain=true"),
		logsURL("plain=true&follow=true"),
		logsURL("follow=true"),
	}
	// Warm up: the server, the transport and the runtime make the
	// threads and connections they keep.
	for _, u := range urls {
		getWithin(c, srv.URL+u, 50*time.Millisecond)
	}
	tr.CloseIdleConnections()
	threads0, fds0 := countDir(t, "/proc/self/task"), countDir(t, "/proc/self/fd")

	const workers = 16 // below the per-allocation cap: none is 429
	n := fsStormSize()
	jobs := make(chan string)
	var mu sync.Mutex
	answered, cancelled := 0, 0
	var bad []string
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for u := range jobs {
				code, body, gaveUp, err := getWithin(c, srv.URL+u, 50*time.Millisecond)
				mu.Lock()
				switch {
				case code == http.StatusBadRequest && strings.Contains(body, "is a named pipe, not a regular file"):
					answered++
				case gaveUp && (code == 0 || code == http.StatusOK) && errors.Is(err, context.DeadlineExceeded):
					cancelled++
				default:
					if len(bad) < 5 {
						bad = append(bad, u+": "+itoa(code)+" "+body)
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		jobs <- urls[i%len(urls)]
	}
	close(jobs)
	wg.Wait()
	tr.CloseIdleConnections()
	t.Logf("%d requests: %d answered 400, %d given up", n, answered, cancelled)
	if len(bad) > 0 {
		t.Errorf("answers neither 400 nor given up: %q", bad)
	}

	testutil.WaitForErr(t, 10*time.Second, "threads and descriptors back to where they were", func() error {
		threads, fds := countDir(t, "/proc/self/task"), countDir(t, "/proc/self/fd")
		if n := fc.gate.InUse(); n > 0 {
			return fmt.Errorf("%d reads still running", n)
		}
		if threads > threads0+20 || fds > fds0+20 {
			return fmt.Errorf("after %d reads of a FIFO: threads %d -> %d, fds %d -> %d (tolerance +20)", n, threads0, threads, fds0, fds)
		}
		t.Logf("threads %d -> %d, fds %d -> %d", threads0, threads, fds0, fds)
		return nil
	})
}

// Reads over a cap are answered 429 at once, and a place comes back when
// a read ends, a followed log included once its caller goes away.
func TestFSReadsOverTheCapAre429(t *testing.T) {
	h, fc := localClientHarness(t)
	fc.gate.Limits = allocfs.Limits{PerAlloc: 2, PerAgent: 3}
	srv := httptest.NewServer(h.srv.Handler())
	t.Cleanup(srv.Close) // after the streams' own cleanups end them
	writeLog(t, fc.dir, "server.stdout.0", "one\n")
	_, _, resp1 := streamLogs(t, srv, logsURL("plain=true&follow=true"), nil)
	out2, _, _ := streamLogs(t, srv, logsURL("plain=true&follow=true"), nil)
	testutil.WaitFor(t, 5*time.Second, "two streams", func() bool { return fc.gate.InUse() == 2 && out2.String() == "one\n" })

	for _, u := range []string{logsURL("plain=true"), fsURL("cat", "/nope"), fsURL("ls", "/")} {
		resp, err := srv.Client().Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(string(body), "too many file system and log reads of allocation \""+apitest.AllocID(1)+"\" at once (at most 2)") {
			t.Errorf("%s over the cap: %d %q (Retry-After %q)", u, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	resp1.Body.Close() // the caller goes away: its stream ends, its place is freed
	testutil.WaitFor(t, 5*time.Second, "the abandoned stream to end", func() bool { return fc.gate.InUse() == 1 })
	if code, body, _, err := getWithin(srv.Client(), srv.URL+logsURL("plain=true"), 5*time.Second); code != http.StatusOK || body != "one\n" {
		t.Errorf("under the cap again: %d %q (%v)", code, body, err)
	}
}
