package mgmt

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// tarball packs entries (name → content; a content starting "->" makes a
// symbolic link to the rest, "/" at a name's end a directory).
func tarball(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e[0], Mode: 0o644}
		switch {
		case strings.HasSuffix(e[0], "/"):
			h.Typeflag = tar.TypeDir
		case strings.HasPrefix(e[1], "->"):
			h.Typeflag, h.Linkname = tar.TypeSymlink, strings.TrimPrefix(e[1], "->")
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e[1]))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e[1]))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestCheckConfigurationArchive(t *testing.T) {
	ok := [][2]string{{"main.tf", `output "x" { value = 1 }`}, {"modules/", ""}, {"modules/a/b.tf", "x"}, {"link.tf", "->modules/a/b.tf"}}
	if err := CheckConfigurationArchive(tarball(t, ok...)); err != nil {
		t.Fatalf("a good archive: %v", err)
	}
	for _, c := range []struct {
		name    string
		archive []byte
		want    string
	}{
		{"not gzip", []byte("plain text"), "not a gzip archive"},
		{"dot-dot", tarball(t, [2]string{"../etc/passwd", "x"}), "escapes"},
		{"inner dot-dot", tarball(t, [2]string{"a/../../b", "x"}), "escapes"},
		{"absolute", tarball(t, [2]string{"/etc/passwd", "x"}), "absolute"},
		{"link out", tarball(t, [2]string{"a/l", "->../../etc/passwd"}), "links to"},
		{"absolute link", tarball(t, [2]string{"l", "->/etc/passwd"}), "links to"},
		{"empty", tarball(t), "no entries"},
		{"truncated", truncated(tarball(t, [2]string{"main.tf", strings.Repeat("x", 5000)})), ""},
	} {
		err := CheckConfigurationArchive(c.archive)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// truncated is the first half of b.
func truncated(b []byte) []byte { return b[:len(b)/2] }
