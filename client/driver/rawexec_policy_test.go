package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client that has not enabled raw_exec neither advertises it nor runs
// it: any token that may submit a job used to get the client's user (root)
// on every node (issue 13, hole 4).
func TestRawExecDisabledRefuses(t *testing.T) {
	d := NewRawExec(nil)
	d.Policy = RawExecPolicy{Disabled: true}
	if fp := d.Fingerprint(); fp.Detected || fp.Healthy {
		t.Errorf("a disabled raw_exec fingerprints as %+v", fp)
	}
	cfg := shTask(t, `touch "$0.ran"`)
	if _, err := d.StartTask(cfg); !errors.Is(err, ErrRawExecDisabled) {
		t.Fatalf("StartTask: %v, want ErrRawExecDisabled", err)
	}
}

// A denied user runs nothing, whether the task names it or it is the
// client's own.
func TestRawExecDeniedUsers(t *testing.T) {
	d := NewRawExec(nil)
	d.Policy = RawExecPolicy{DeniedUsers: []string{"root", "nobody"}}
	cfg := shTask(t, `true`)
	cfg.User = "nobody"
	if _, err := d.StartTask(cfg); err == nil || !strings.Contains(err.Error(), "denied_users") {
		t.Fatalf("a denied task user: %v", err)
	}
	if os.Geteuid() == 0 {
		cfg2 := shTask(t, `true`)
		if _, err := d.StartTask(cfg2); err == nil || !strings.Contains(err.Error(), "denied_users") {
			t.Fatalf("a root client with root denied and no default user ran a task: %v", err)
		}
	}
}

// A root client runs a task that names no user as DefaultUser, in
// directories handed to it.
func TestRawExecDefaultUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running tasks as another user needs a root client")
	}
	d := NewRawExec(nil)
	d.Policy = RawExecPolicy{DefaultUser: "nobody", DeniedUsers: []string{"root"}}
	cfg := shTask(t, `id -u; echo hi > local/made`)
	os.MkdirAll(cfg.LocalDir, 0o755)
	for p := cfg.TaskDir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // t.TempDir is 0700: let nobody in, as the client does for its data dir
	}
	_, ch := start(t, d, cfg)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("exit %+v, stderr %q", r, readLog(t, cfg, "stderr"))
	}
	if got := strings.TrimSpace(readLog(t, cfg, "stdout")); got == "0" || got == "" {
		t.Fatalf("task ran as uid %q, want nobody's", got)
	}
	if _, err := os.Stat(filepath.Join(cfg.LocalDir, "made")); err != nil {
		t.Errorf("the task could not write its own local dir: %v", err)
	}
	if cfg.User != "" {
		t.Errorf("StartTask changed its caller's config: User %q", cfg.User)
	}
	root := shTask(t, `true`)
	root.User = "root"
	if _, err := d.StartTask(root); err == nil {
		t.Fatal("a task named user root and ran")
	}
}
