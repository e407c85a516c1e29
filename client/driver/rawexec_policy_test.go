package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// A root client runs a task that names no user as its allocation's
// workload uid, ahead of DefaultUser: gid the same number, no
// supplementary group (root's are dropped), HOME its task directory,
// which it owns with mode 0700; alloc/ becomes the allocation group's,
// mode 1770. A task that names a user gets the workload gid as a
// supplementary group, to share alloc/. Exec into the task runs as the
// workload uid too.
func TestRawExecWorkloadUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running tasks as another uid needs a root client")
	}
	const uid = 3_999_999_101
	d := NewRawExec(nil)
	d.Policy = RawExecPolicy{DefaultUser: "nobody", DeniedUsers: []string{"root"}}
	cfg := shTask(t, `echo "$(id -u)|$(id -g)|$(id -G)|$HOME"; echo hi > local/made; exec sleep 300`)
	cfg.WorkloadUID = uid
	cfg.AllocDir = filepath.Join(filepath.Dir(cfg.TaskDir), "alloc")
	os.MkdirAll(cfg.LocalDir, 0o755)
	for p := filepath.Dir(cfg.TaskDir); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	start(t, d, cfg)
	want := fmt.Sprintf("%d|%d|%d|%s", uid, uid, uid, cfg.TaskDir)
	waitLog(t, cfg, "stdout", want)
	if _, ok := cfg.Env["HOME"]; ok {
		t.Error("StartTask changed its caller's environment")
	}
	for _, x := range []struct {
		path string
		mode os.FileMode
		uid  uint32
		gid  uint32
	}{
		{cfg.TaskDir, os.ModeDir | 0o700, uid, uid},
		{cfg.LocalDir, os.ModeDir | 0o700, uid, uid},
		{cfg.AllocDir, os.ModeDir | os.ModeSticky | 0o770, 0, uid},
	} {
		info, err := os.Stat(x.path)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if info.Mode() != x.mode || st.Uid != x.uid || st.Gid != x.gid {
			t.Errorf("%s: %v %d:%d, want %v %d:%d", x.path, info.Mode(), st.Uid, st.Gid, x.mode, x.uid, x.gid)
		}
	}
	var out bytes.Buffer
	code, err := d.ExecTask(context.Background(), &ExecRequest{TaskID: cfg.ID, Command: []string{"id", "-u"},
		Env: cfg.Env, Dir: cfg.TaskDir, WorkloadUID: uid, Stdout: &out, Stderr: &out})
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != strconv.Itoa(uid) {
		t.Fatalf("exec: %d %v %q, want uid %d", code, err, out.String(), uid)
	}

	named := shTask(t, `id -G`)
	named.ID = "a1/named"
	named.User = "nobody"
	named.WorkloadUID = uid
	for p := filepath.Dir(named.TaskDir); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		os.Chmod(p, 0o711)
	}
	_, ch := start(t, d, named)
	if r := result(t, ch); !r.Successful() {
		t.Fatalf("named user: %+v, %q", r, readLog(t, named, "stderr"))
	}
	if groups := strings.Fields(readLog(t, named, "stdout")); !slices.Contains(groups, strconv.Itoa(uid)) {
		t.Fatalf("a named user's groups %v lack the allocation's %d", groups, uid)
	}
}
