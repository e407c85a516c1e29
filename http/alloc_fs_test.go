package http

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedhq/sched/http/internal/apitest"
	"github.com/schedhq/sched/state"
)

// fsWorld is a local client's allocation directory with a file, a link
// that stays inside and links that lead out.
func fsWorld(t *testing.T) (*harness, string) {
	t.Helper()
	h, fc := localClientHarness(t)
	dir, err := fc.AllocDir(apitest.AllocID(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"alloc/logs", "server/local"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "server/local/conf"), []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"server/local/in":      "conf",     // inside
		"server/local/abs-out": outside,    // absolute, outside
		"server/local/rel-out": "../../..", // the directory above the allocation's
		"server/etc":           "/etc",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return h, dir
}

func fsURL(op, path string) string {
	return "/v1/client/fs/" + op + "/" + apitest.AllocID(1) + "?path=" + urlEscape(path)
}

func TestFSReads(t *testing.T) {
	h, _ := fsWorld(t)
	var root []*state.AllocFileInfo
	h.OK(http.MethodGet, "/v1/client/fs/ls/"+apitest.AllocID(1), nil, &root)
	if len(root) != 2 || root[0].Name != "alloc" || !root[0].IsDir || root[1].Name != "server" {
		t.Errorf("ls /: %+v", root)
	}
	var local []*state.AllocFileInfo
	h.OK(http.MethodGet, fsURL("ls", "/server/local"), nil, &local)
	var names []string
	for _, f := range local {
		names = append(names, f.Name+":"+f.FileMode)
	}
	if got := strings.Join(names, " "); !strings.HasPrefix(got, "abs-out:L") || !strings.Contains(got, "conf:-rw-r--r--") {
		t.Errorf("ls /server/local (links listed, not followed): %s", got)
	}
	var st state.AllocFileInfo
	h.OK(http.MethodGet, fsURL("stat", "server/local/conf"), nil, &st)
	if st.Name != "conf" || st.Size != 11 || st.IsDir {
		t.Errorf("stat: %+v", st)
	}
	if got := h.OK(http.MethodGet, fsURL("cat", "/server/local/conf"), nil, nil).Body.String(); got != "hello world" {
		t.Errorf("cat: %q", got)
	}
	if got := h.OK(http.MethodGet, fsURL("cat", "/server/local/in"), nil, nil).Body.String(); got != "hello world" {
		t.Errorf("cat through a link that stays inside: %q", got)
	}
	if got := h.OK(http.MethodGet, fsURL("readat", "/server/local/conf")+"&offset=6&limit=3", nil, nil).Body.String(); got != "wor" {
		t.Errorf("readat: %q", got)
	}
	if got := h.OK(http.MethodGet, fsURL("readat", "/server/local/conf")+"&offset=6", nil, nil).Body.String(); got != "world" {
		t.Errorf("readat to the end: %q", got)
	}
	h.Fail(http.MethodGet, fsURL("cat", "/server"), nil, 400, "is a directory")
	h.Fail(http.MethodGet, fsURL("ls", "/server/local/conf"), nil, 400, "not a directory")
	h.Fail(http.MethodGet, fsURL("cat", "/nope"), nil, 404, "no file")
	h.Fail(http.MethodGet, "/v1/client/fs/cat/"+apitest.AllocID(1), nil, 400, "path: required")
	h.Fail(http.MethodGet, fsURL("readat", "/server/local/conf")+"&offset=-1&limit=x", nil, 400, "offset", "limit")
	h.Fail(http.MethodGet, "/v1/client/fs/ls/"+apitest.AllocID(9), nil, 404, "allocation")
}

// Every way out of the allocation directory is a 400, and nothing outside
// is read.
func TestFSPathEscapesAreRefused(t *testing.T) {
	h, dir := fsWorld(t)
	escapes := []string{
		"..", "../", "/..", "../../etc/passwd", "/../etc/passwd", "server/../../x",
		"server/local/abs-out", "server/local/abs-out/secret", "server/local/rel-out", "server/etc/passwd", "server/etc",
	}
	for _, p := range escapes {
		for _, op := range []string{"ls", "stat", "cat", "readat"} {
			msg := h.Fail(http.MethodGet, fsURL(op, p), nil, 400, "escapes the allocation directory")
			if strings.Contains(msg, "host secret") || strings.Contains(msg, "root:") {
				t.Errorf("%s %s leaked content: %q", op, p, msg)
			}
		}
	}
	// An absolute host path names a file inside the allocation directory
	// (a leading "/" is its root), which does not exist: the host's file
	// is never read.
	for _, p := range []string{"/etc/passwd", dir + "/server/local/conf", "//etc/passwd"} {
		h.Fail(http.MethodGet, fsURL("cat", p), nil, 404, "no file")
	}
	h.Fail(http.MethodGet, fsURL("cat", "a\x00b"), nil, 400, "NUL")
	h.Fail(http.MethodGet, fsURL("cat", strings.Repeat("a/", 3000)), nil, 400, "at most 4096")
}
