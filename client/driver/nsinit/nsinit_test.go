package nsinit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInsideStaysInTheRoot(t *testing.T) {
	for _, c := range []struct{ p, want string }{
		{"/data", "/r/data"}, {"data", "/r/data"}, {"../../etc", "/r/etc"}, {"/a/../../b", "/r/b"}, {"/", "/r"},
	} {
		if got := inside("/r", c.p); got != c.want {
			t.Errorf("inside(/r, %q) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "data"), []byte("x"), 0o644)
	if p, err := lookPath("tool", "relative:"+bin, "/"); err != nil || p != filepath.Join(bin, "tool") {
		t.Errorf("tool in PATH: %q, %v", p, err)
	}
	if p, err := lookPath("bin/tool", "", dir); err != nil || p != filepath.Join(bin, "tool") {
		t.Errorf("relative to the working directory: %q, %v", p, err)
	}
	for _, c := range []struct{ cmd, want string }{
		{"data", `command "data" not found in the task's root`},
		{filepath.Join(bin, "data"), "not an executable file"},
		{"nope", "not found"},
	} {
		if _, err := lookPath(c.cmd, bin, "/"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("lookPath(%q) = %v, want an error with %q", c.cmd, err, c.want)
		}
	}
}

func TestEnvPath(t *testing.T) {
	if got := envPath([]string{"A=1", "PATH=/x:/y"}); got != "/x:/y" {
		t.Errorf("envPath = %q", got)
	}
	if got := envPath(nil); !strings.Contains(got, "/usr/bin") {
		t.Errorf("default PATH %q", got)
	}
}

func TestRequested(t *testing.T) {
	if Requested() {
		t.Fatal("a test binary is not the task's init")
	}
}
