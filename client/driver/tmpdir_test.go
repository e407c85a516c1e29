package driver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRawExecTmpDir: a raw_exec task's TMPDIR is tmp/ in its task
// directory, which exists, is the task's and takes its files; a TMPDIR of
// the task's own env wins.
func TestRawExecTmpDir(t *testing.T) {
	cfg := shTask(t, `echo "tmpdir:$TMPDIR"; echo scratch > "$TMPDIR/f" && echo wrote`)
	_, ch := start(t, NewRawExec(nil), cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v: %s", r, readLog(t, cfg, "stderr"))
	}
	want := filepath.Join(cfg.TaskDir, "tmp")
	out := readLog(t, cfg, "stdout")
	if !strings.Contains(out, "tmpdir:"+want+"\n") || !strings.Contains(out, "wrote") {
		t.Fatalf("stdout %q, want TMPDIR %s written to", out, want)
	}
	fi, err := os.Stat(want)
	if err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
		t.Fatalf("%s: %v %v", want, fi.Mode(), err)
	}
	if b, err := os.ReadFile(filepath.Join(want, "f")); err != nil || string(b) != "scratch\n" {
		t.Fatalf("the task's file in its tmp dir: %q %v", b, err)
	}

	own := shTask(t, `echo "tmpdir:$TMPDIR"`)
	own.Env["TMPDIR"] = "/somewhere/else"
	_, ch = start(t, NewRawExec(nil), own)
	result(t, ch)
	if out := readLog(t, own, "stdout"); !strings.Contains(out, "tmpdir:/somewhere/else") {
		t.Fatalf("the task's own TMPDIR was replaced: %q", out)
	}
}

// TestExecTmpDir: an exec task's TMPDIR is /tmp in its root, which is
// tmp/ of its task directory on the host.
func TestExecTmpDir(t *testing.T) {
	d, cfg := execDriver(t, `echo "tmpdir:$TMPDIR"; echo scratch > "$TMPDIR/f" && echo wrote`)
	cfg.WorkloadUID = 81235
	_, ch := start(t, d, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v: %s", r, readLog(t, cfg, "stderr"))
	}
	if out := readLog(t, cfg, "stdout"); !strings.Contains(out, "tmpdir:/tmp\n") || !strings.Contains(out, "wrote") {
		t.Fatalf("stdout %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.TaskDir, "tmp", "f")); err != nil || string(b) != "scratch\n" {
		t.Fatalf("the task's file on the host: %q %v", b, err)
	}
}
