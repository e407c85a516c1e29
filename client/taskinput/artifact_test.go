package taskinput

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestWriteDispatchPayload(t *testing.T) {
	in := newInput(t)
	os.RemoveAll(in.LocalDir) // WriteDispatchPayload creates it
	in.Task.DispatchPayload = &state.DispatchPayloadConfig{File: "input/data.json"}
	in.Payload = []byte(`{"n":1}`)
	if err := WriteDispatchPayload(in); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(in.LocalDir, "input", "data.json")
	if got := readFile(t, p); got != `{"n":1}` {
		t.Fatalf("payload %q", got)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o644 {
		t.Fatalf("perms %v", info.Mode().Perm())
	}
	in.Task.DispatchPayload.File = "../../escape"
	if err := WriteDispatchPayload(in); !errors.Is(err, ErrEscapes) {
		t.Fatalf("escaping payload file: %v", err)
	}
	in.Task.DispatchPayload = nil
	if err := WriteDispatchPayload(in); err != nil {
		t.Fatalf("no payload block: %v", err)
	}
}

// artifactInput is an Input whose task fetches arts.
func artifactInput(t *testing.T, arts ...*state.TaskArtifact) *Input {
	in := newInput(t)
	in.Task.Artifacts = arts
	return in
}

// srcTree makes a source directory with a nested file and a relative
// symlink.
func srcTree(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "conf", "deep"), 0o755)
	os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(src, "conf", "deep", "a.txt"), []byte("A"), 0o600)
	os.Symlink("conf/deep/a.txt", filepath.Join(src, "a-link"))
	return src
}

func TestFetchFileArtifacts(t *testing.T) {
	src := srcTree(t)
	in := artifactInput(t,
		&state.TaskArtifact{GetterSource: "file://" + src},
		&state.TaskArtifact{GetterSource: src + "/run.sh", RelativeDest: "bin/"},
		&state.TaskArtifact{GetterSource: "file://" + src + "/conf/deep/a.txt", GetterMode: "file", RelativeDest: "local/renamed.txt",
			GetterOptions: map[string]string{"checksum": fmt.Sprintf("md5:%x", md5.Sum([]byte("A")))}},
	)
	if err := FetchArtifacts(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"local/run.sh": "#!/bin/sh\n", "local/conf/deep/a.txt": "A", "local/a-link": "A",
		"bin/run.sh": "#!/bin/sh\n", "local/renamed.txt": "A",
	} {
		if got := readFile(t, filepath.Join(in.TaskDir, rel)); got != want {
			t.Errorf("%s: %q, want %q", rel, got, want)
		}
	}
	if info, _ := os.Stat(filepath.Join(in.TaskDir, "local", "run.sh")); info.Mode().Perm() != 0o755 {
		t.Errorf("copied mode %v, want 0755", info.Mode().Perm())
	}
	if l, err := os.Readlink(filepath.Join(in.TaskDir, "local", "a-link")); err != nil || l != "conf/deep/a.txt" {
		t.Errorf("symlink %q, %v", l, err)
	}
	// Fetching again (a restarted task) overwrites in place.
	if err := FetchArtifacts(context.Background(), in); err != nil {
		t.Fatalf("second fetch: %v", err)
	}
}

func TestFetchFileArtifactErrors(t *testing.T) {
	src := srcTree(t)
	outside := t.TempDir()
	os.Symlink("/etc/passwd", filepath.Join(outside, "abs-link"))
	for name, a := range map[string]*state.TaskArtifact{
		"dest escapes":      {GetterSource: src, RelativeDest: "../../x"},
		"dir in file mode":  {GetterSource: src, GetterMode: "file", RelativeDest: "local/x"},
		"dir with checksum": {GetterSource: src, GetterOptions: map[string]string{"checksum": "md5:00000000000000000000000000000000"}},
		"file in dir mode":  {GetterSource: src + "/run.sh", GetterMode: "dir"},
		"missing":           {GetterSource: "file:///no/such/file"},
		"scheme":            {GetterSource: "s3://bucket/key"},
		"remote file host":  {GetterSource: "file://host/x"},
		"bad checksum type": {GetterSource: src + "/run.sh", GetterOptions: map[string]string{"checksum": "crc32:00"}},
		"bad checksum hex":  {GetterSource: src + "/run.sh", GetterOptions: map[string]string{"checksum": "sha256:zz"}},
		"bad archive":       {GetterSource: src + "/run.sh", GetterOptions: map[string]string{"archive": "rar"}},
		"abs symlink":       {GetterSource: outside},
	} {
		t.Run(name, func(t *testing.T) {
			in := artifactInput(t, a)
			err := FetchArtifacts(context.Background(), in)
			var ae *ArtifactError
			if !errors.As(err, &ae) || ae.Source != a.GetterSource {
				t.Fatalf("err %v, want an ArtifactError for %s", err, a.GetterSource)
			}
			if name == "dest escapes" && !errors.Is(err, ErrEscapes) {
				t.Fatalf("err %v, want ErrEscapes", err)
			}
			ev := ae.Event(time.Unix(1, 0))
			if ev.Type != EventDownloadingArtifacts || ev.DownloadError == "" {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

// tarGz builds a .tar.gz of files (name → content); a name ending in "/"
// is a directory.
func tarGz(t *testing.T, files map[string]string, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = tar.NewWriter(zw)
	} else {
		w = tar.NewWriter(&buf)
	}
	for name, body := range files {
		h := &tar.Header{Name: name, Mode: 0o640, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			h = &tar.Header{Name: name, Mode: 0o755, Typeflag: tar.TypeDir}
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	w.Close()
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for name, body := range files {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	w.Close()
	return buf.Bytes()
}

// server serves bodies by path and records the last request's headers.
func server(t *testing.T, bodies map[string][]byte) (*httptest.Server, *http.Header) {
	var last http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last = r.Header.Clone()
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

func TestFetchHTTPArtifacts(t *testing.T) {
	tgz := tarGz(t, map[string]string{"app/": "", "app/bin": "binary", "README": "read me"}, true)
	plainTar := tarGz(t, map[string]string{"t.txt": "from tar"}, false)
	zipped := zipOf(t, map[string]string{"z/inner.txt": "zipped"})
	srv, _ := server(t, map[string][]byte{
		"/app.tar.gz": tgz, "/b.tgz": tgz, "/c.tar": plainTar, "/d.zip": zipped, "/config.json": []byte(`{"a":1}`),
	})
	sum := fmt.Sprintf("sha256:%x", sha256.Sum256(tgz))
	in := artifactInput(t,
		&state.TaskArtifact{GetterSource: srv.URL + "/app.tar.gz", GetterOptions: map[string]string{"checksum": sum}},
		&state.TaskArtifact{GetterSource: srv.URL + "/b.tgz?archive=false", RelativeDest: "raw/"},
		&state.TaskArtifact{GetterSource: srv.URL + "/c.tar", RelativeDest: "tar/"},
		&state.TaskArtifact{GetterSource: srv.URL + "/d.zip", RelativeDest: "zip"},
		&state.TaskArtifact{GetterSource: srv.URL + "/config.json?checksum=" + fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(`{"a":1}`)))},
	)
	if err := FetchArtifacts(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"local/app/bin": "binary", "local/README": "read me", "raw/b.tgz": string(tgz),
		"tar/t.txt": "from tar", "zip/z/inner.txt": "zipped", "local/config.json": `{"a":1}`,
	} {
		if got := readFile(t, filepath.Join(in.TaskDir, rel)); got != want {
			t.Errorf("%s: %q, want %q", rel, got, want)
		}
	}
	if info, _ := os.Stat(filepath.Join(in.TaskDir, "local", "app", "bin")); info.Mode().Perm() != 0o640 {
		t.Errorf("unpacked mode %v, want 0640", info.Mode().Perm())
	}
}

func TestFetchHTTPHeadersSent(t *testing.T) {
	srv, hdr := server(t, map[string][]byte{"/f": []byte("x")})
	in := artifactInput(t, &state.TaskArtifact{GetterSource: srv.URL + "/f", GetterHeaders: map[string]string{"X-Token": "s3cret"}})
	if err := FetchArtifacts(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := hdr.Get("X-Token"); got != "s3cret" {
		t.Fatalf("X-Token %q", got)
	}
}

func TestFetchHTTPArtifactErrors(t *testing.T) {
	evil := tarGz(t, map[string]string{"../../evil": "x"}, true)
	evilZip := zipOf(t, map[string]string{"../evil": "x"})
	var linkTar bytes.Buffer
	tw := tar.NewWriter(&linkTar)
	tw.WriteHeader(&tar.Header{Name: "l", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink})
	tw.Close()
	srv, _ := server(t, map[string][]byte{
		"/a.bin": []byte("payload"), "/evil.tar.gz": evil, "/evil.zip": evilZip, "/link.tar": linkTar.Bytes(),
		"/big": bytes.Repeat([]byte("x"), 2048), "/junk.zip": []byte("not a zip"),
	})
	for name, tc := range map[string]struct {
		art  *state.TaskArtifact
		want error
	}{
		"checksum mismatch": {&state.TaskArtifact{GetterSource: srv.URL + "/a.bin",
			GetterOptions: map[string]string{"checksum": fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("other")))}}, ErrChecksum},
		"checksum mismatch in query": {&state.TaskArtifact{GetterSource: srv.URL + "/a.bin?checksum=md5:" + strings.Repeat("0", 32)}, ErrChecksum},
		"not found":                  {&state.TaskArtifact{GetterSource: srv.URL + "/missing"}, nil},
		"tar entry escapes":          {&state.TaskArtifact{GetterSource: srv.URL + "/evil.tar.gz"}, ErrEscapes},
		"zip entry escapes":          {&state.TaskArtifact{GetterSource: srv.URL + "/evil.zip"}, ErrEscapes},
		"tar symlink":                {&state.TaskArtifact{GetterSource: srv.URL + "/link.tar"}, nil},
		"too large":                  {&state.TaskArtifact{GetterSource: srv.URL + "/big"}, ErrTooLarge},
		"corrupt zip":                {&state.TaskArtifact{GetterSource: srv.URL + "/junk.zip"}, nil},
		"no file name":               {&state.TaskArtifact{GetterSource: srv.URL + "/"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			in := artifactInput(t, tc.art)
			f := &Fetcher{MaxBytes: 1024, Timeout: 5 * time.Second}
			err := f.FetchArtifacts(context.Background(), in)
			var ae *ArtifactError
			if !errors.As(err, &ae) {
				t.Fatalf("err %v, want an ArtifactError", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if ev := ae.Event(time.Now()); ev.DownloadError != err.Error() {
				t.Fatalf("event %+v", ev)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(in.TaskDir), "evil")); !os.IsNotExist(err) {
				t.Fatal("archive wrote outside the task dir")
			}
		})
	}
}

func TestFetchHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	in := artifactInput(t, &state.TaskArtifact{GetterSource: srv.URL + "/slow"})
	f := &Fetcher{Timeout: 50 * time.Millisecond}
	if err := f.FetchArtifacts(context.Background(), in); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want a deadline", err)
	}
}
