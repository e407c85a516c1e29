package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/client/cgroup"
	"github.com/schedhq/sched/client/driver/nsinit"
)

// TestMain lets the exec driver run this test binary as a task's init.
func TestMain(m *testing.M) {
	if nsinit.Requested() {
		nsinit.Main()
	}
	os.Exit(m.Run())
}

// execDriver is an exec driver whose cgroups go under a parent of the
// test's, and a task config running script with /bin/sh. At the end of
// the test no cgroup of it and no mount of its directory may be left.
func execDriver(t *testing.T, script string) (*Exec, *TaskConfig) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the exec driver needs root (namespaces, cgroups): run the tests as root to exercise it")
	}
	if cgroup.Detect() == cgroup.Unavailable {
		t.Skip("the exec driver needs cgroups, and none are mounted")
	}
	parent := fmt.Sprintf("/sched-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))
	d := &Exec{CgroupParent: parent, RecoverPollInterval: 10 * time.Millisecond}
	cfg := shTask(t, script)
	root := filepath.Dir(cfg.TaskDir)
	cfg.AllocID, cfg.ID = "0123456789abcdef", "0123456789abcdef/web"
	cfg.LocalDir, cfg.SecretsDir, cfg.AllocDir = filepath.Join(cfg.TaskDir, "local"), filepath.Join(cfg.TaskDir, "secrets"), filepath.Join(root, "alloc")
	for _, dir := range []string{cfg.LocalDir, cfg.SecretsDir} {
		os.MkdirAll(dir, 0o755)
	}
	cfg.MemoryMB, cfg.CPU = 64, 100
	t.Cleanup(func() {
		cgroup.RemoveEmpty(parent)
		if cgroup.Exists(parent) {
			t.Errorf("cgroup %s is left behind", parent)
		}
		if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), root) {
			t.Errorf("a mount under %s is left in the host's mount table", root)
		}
	})
	return d, cfg
}

func TestExecFingerprint(t *testing.T) {
	d := NewExec(nil)
	fp := d.Fingerprint()
	switch {
	case os.Geteuid() != 0:
		if fp.Healthy || !strings.Contains(fp.HealthDescription, "root") {
			t.Fatalf("fingerprint without root: %+v", fp)
		}
	case cgroup.Detect() != cgroup.Unavailable:
		if !fp.Healthy || fp.Attributes["driver.exec.cgroup"] != cgroup.Detect().String() {
			t.Fatalf("fingerprint as root with cgroups: %+v", fp)
		}
	}
}

func TestExecIsolation(t *testing.T) {
	d, cfg := execDriver(t, `echo "pids:$(ls /proc | grep -E '^[0-9]+$' | tr '\n' ' ')"
echo "uid:$(id -u) gid:$(id -g)"
echo "host:$(hostname)"
echo "root:$(ls / | tr '\n' ' ')"
echo "taskdir:$SCHED_TASK_DIR alloc:$SCHED_ALLOC_DIR"
test -e `+"/proc/1/root/"+` && echo "outside:$(ls /proc/1/root/ 2>&1 | head -1)"
test -e /etc/passwd && echo etc-ok
echo hi > /alloc/shared && echo alloc-ok
echo done`)
	secret := filepath.Join(filepath.Dir(filepath.Dir(cfg.TaskDir)), "host-secret")
	os.WriteFile(secret, []byte("x"), 0o644)
	cfg.WorkloadUID = 81234
	cfg.Env["SCHED_TASK_DIR"], cfg.Env["SCHED_ALLOC_DIR"] = cfg.LocalDir, cfg.AllocDir
	os.MkdirAll(cfg.AllocDir, 0o755)
	_, ch := start(t, d, cfg)
	r := result(t, ch)
	out := readLog(t, cfg, "stdout")
	if r.ExitCode != 0 {
		t.Fatalf("exit %+v\nstdout:\n%s\nstderr:\n%s", r, out, readLog(t, cfg, "stderr"))
	}
	for _, want := range []string{"pids:1 ", "uid:81234 gid:81234", "host:01234567", "taskdir:/local alloc:/alloc", "etc-ok", "alloc-ok", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The task sees only its own processes: init (1) and its shell.
	// (pid 1 is the init; the others are the shell's pipeline.)
	pids := strings.Fields(strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "pids:"))
	if len(pids) > 16 || slices.Contains(pids, strconv.Itoa(os.Getpid())) {
		t.Errorf("the task sees %d processes (%v): the host's leak into its PID namespace", len(pids), pids)
	}
	if strings.Contains(out, "host-secret") || strings.Contains(out, filepath.Base(filepath.Dir(filepath.Dir(cfg.TaskDir)))) {
		t.Errorf("the task sees the host's files outside its root:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.AllocDir, "shared")); err != nil || string(b) != "hi\n" {
		t.Errorf("alloc/shared on the host: %q, %v", b, err)
	}
}

func TestExecOOMKilled(t *testing.T) {
	d, cfg := execDriver(t, `a=x; while :; do a="$a$a"; done`)
	cfg.MemoryMB = 32
	_, ch := start(t, d, cfg)
	r := result(t, ch)
	if !r.OOMKilled || !errors.Is(r.Err, ErrOOMKilled) || r.Err.Error() != "OOM Killed" {
		t.Fatalf("exit %+v: want OOM Killed", r)
	}
	if r.Successful() {
		t.Fatal("an OOM-killed task counts as successful")
	}
}

func TestExecStatsStopAndCleanup(t *testing.T) {
	d, cfg := execDriver(t, `trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
	_, ch := start(t, d, cfg)
	waitLog(t, cfg, "stdout", "ready")
	u, err := d.Stats(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.ResourceUsage.MemoryStats.RSS == 0 || u.ResourceUsage.CpuStats.TotalTime <= 0 {
		t.Errorf("stats %+v %+v: want memory and CPU time from the cgroup", u.ResourceUsage.MemoryStats, u.ResourceUsage.CpuStats)
	}
	if err := d.StopTask(cfg.ID, 10*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); r.ExitCode != 7 || r.OOMKilled {
		t.Fatalf("exit %+v, want 7 from the trap", r)
	}
	waitLog(t, cfg, "stdout", "got-term")
	if err := d.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if cgroup.Exists(d.CgroupParent + "/" + cfg.AllocID + ".web") {
		t.Error("the task's cgroup outlived DestroyTask")
	}
}

func TestExecKillAfterTimeout(t *testing.T) {
	d, cfg := execDriver(t, `trap '' TERM INT; echo ready; while :; do sleep 0.05; done`)
	_, ch := start(t, d, cfg)
	waitLog(t, cfg, "stdout", "ready")
	if err := d.StopTask(cfg.ID, 100*time.Millisecond, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if r := result(t, ch); r.Signal != int(syscall.SIGKILL) {
		t.Fatalf("exit %+v, want killed by SIGKILL", r)
	}
}

func TestExecRecover(t *testing.T) {
	d, cfg := execDriver(t, `trap 'echo got-usr1' USR1; trap 'exit 9' TERM; echo ready; while :; do sleep 0.05; done`)
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, cfg, "stdout", "ready")
	// The client goes away, leaving the task; a new one finds it.
	d.Shutdown()
	d2 := &Exec{CgroupParent: d.CgroupParent, RecoverPollInterval: 10 * time.Millisecond}
	if err := d2.RecoverTask(h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	t.Cleanup(func() { d2.DestroyTask(cfg.ID, true) })
	ch, err := d2.WaitTask(t.Context(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.SignalTask(cfg.ID, "USR1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", readLog(t, cfg, "stdout"), readLog(t, cfg, "stderr"))
		}
	})
	waitLog(t, cfg, "stdout", "got-usr1")
	if _, err := d2.Stats(cfg.ID); err != nil {
		t.Errorf("stats of the recovered task: %v", err)
	}
	if err := d2.StopTask(cfg.ID, 10*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	// The init wrote the task's status: a recovered task's exit is known.
	if r := result(t, ch); r.ExitCode != 9 || r.Err != nil {
		t.Fatalf("exit %+v, want 9", r)
	}
	if err := d2.RecoverTask(h); !errors.Is(err, ErrTaskExists) {
		t.Fatalf("RecoverTask of a known task: %v", err)
	}
}

func TestExecRecoverGone(t *testing.T) {
	d, cfg := execDriver(t, `exit 0`)
	h, ch := start(t, d, cfg)
	result(t, ch)
	d2 := &Exec{CgroupParent: d.CgroupParent}
	if err := d2.RecoverTask(h); !errors.Is(err, ErrTaskGone) {
		t.Fatalf("RecoverTask of an exited task: %v, want ErrTaskGone", err)
	}
}

func TestExecBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(cfg *TaskConfig)
		want string
		bad  bool // ErrBadConfig
	}{
		{"command outside the root", func(c *TaskConfig) { c.Config["command"] = "sched-no-such-command" }, `command "sched-no-such-command" not found in the task's root`, false},
		{"no command", func(c *TaskConfig) { delete(c.Config, "command") }, "command is required", true},
		{"bridge network without the client's namespace", func(c *TaskConfig) { c.NetworkMode = "bridge" }, "network mode bridge needs the allocation's network namespace", true},
		{"unknown network mode", func(c *TaskConfig) { c.NetworkMode = "cni/mynet" }, "network mode host, bridge or none", true},
		{"network namespace that is not there", func(c *TaskConfig) { c.NetworkMode, c.NetNS = "bridge", "/sched-no-such-netns" }, "network namespace /sched-no-such-netns", false},
		{"denied user", func(c *TaskConfig) { c.User = "root" }, `user "root" (uid 0) may not run exec tasks`, true},
		{"volume that is not there", func(c *TaskConfig) {
			c.Mounts = []*MountConfig{{Volume: "v", HostPath: "/sched-no-such-dir", TaskPath: "/data"}}
		}, "mount /sched-no-such-dir", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, cfg := execDriver(t, `echo should-not-run`)
			d.DeniedUsers = []string{"root"}
			c.edit(cfg)
			_, err := d.StartTask(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrBadConfig) != c.bad {
				t.Fatalf("StartTask: %v; want an error with %q (bad config %v)", err, c.want, c.bad)
			}
			if _, err := d.tasks.get(cfg.ID); !errors.Is(err, ErrTaskNotFound) {
				t.Errorf("a task that did not start is known: %v", err)
			}
		})
	}
}

func TestExecHostVolume(t *testing.T) {
	d, cfg := execDriver(t, `cat /data/hello; cat /ro/hello; echo new > /data/written && echo rw-ok; echo x > /ro/x || echo ro-refused`)
	vol := t.TempDir()
	os.WriteFile(filepath.Join(vol, "hello"), []byte("from-the-host\n"), 0o644)
	os.Chmod(vol, 0o777)
	cfg.Mounts = []*MountConfig{
		{Volume: "data", HostPath: vol, TaskPath: "/data"},
		{Volume: "ro", HostPath: vol, TaskPath: "/ro", ReadOnly: true},
	}
	_, ch := start(t, d, cfg)
	result(t, ch)
	out := readLog(t, cfg, "stdout")
	if strings.Count(out, "from-the-host") != 2 || !strings.Contains(out, "rw-ok") || !strings.Contains(out, "ro-refused") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out, readLog(t, cfg, "stderr"))
	}
	if _, err := os.Stat(filepath.Join(vol, "x")); err == nil {
		t.Error("the task wrote through a read-only mount")
	}
	if b, _ := os.ReadFile(filepath.Join(vol, "written")); string(b) != "new\n" {
		t.Errorf("the host does not see the task's write: %q", b)
	}
}

func TestExecLimits(t *testing.T) {
	d := &Exec{}
	l := d.limits(&TaskConfig{CPU: 500, MemoryMB: 100, MemoryMaxMB: 300})
	if l.CPUShares != 500 || l.MemoryBytes != 300<<20 || l.MemorySoftBytes != 100<<20 || l.PIDs != DefaultPIDsLimit {
		t.Errorf("limits with memory_max: %+v", l)
	}
	l = d.limits(&TaskConfig{MemoryMB: 100})
	if l.MemoryBytes != 100<<20 || l.MemorySoftBytes != 0 {
		t.Errorf("limits without memory_max: %+v", l)
	}
}

// TestRawExecVolumeEnv: a raw_exec task, which cannot have a directory
// bound, learns where its volumes are from its environment.
func TestRawExecVolumeEnv(t *testing.T) {
	cfg := shTask(t, `echo "data=$SCHED_HOST_VOLUME_my_data"`)
	cfg.Mounts = []*MountConfig{{Volume: "my-data", HostPath: "/srv/data", TaskPath: "/data"}}
	_, ch := start(t, NewRawExec(nil), cfg)
	if r := result(t, ch); r.ExitCode != 0 {
		t.Fatalf("exit %+v", r)
	}
	if out := readLog(t, cfg, "stdout"); out != "data=/srv/data\n" {
		t.Fatalf("stdout %q", out)
	}
	if _, ok := cfg.Env[VolumeEnvPrefix+"my_data"]; ok {
		t.Error("the driver changed its caller's environment")
	}
}

func TestExecExecTask(t *testing.T) {
	d, cfg := execDriver(t, `echo ready; while :; do sleep 0.1; done`)
	cfg.WorkloadUID = 81235
	_, _ = start(t, d, cfg)
	waitLog(t, cfg, "stdout", "ready")
	var out, errOut strings.Builder
	code, err := d.ExecTask(t.Context(), &ExecRequest{TaskID: cfg.ID, WorkloadUID: cfg.WorkloadUID,
		Command: []string{"/bin/sh", "-c", `echo "uid:$(id -u) host:$(hostname) dir:$SCHED_TASK_DIR pids:$(ls /proc | grep -cE '^[0-9]+$')"; test -e /proc/1/cmdline && echo init-visible; grep -q 0123456789abcdef.web /proc/self/cgroup && echo in-cgroup; exit 3`},
		Env:     map[string]string{"SCHED_TASK_DIR": cfg.LocalDir}, Dir: cfg.TaskDir, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Fatalf("exit code %d, want 3; stdout %q stderr %q", code, out.String(), errOut.String())
	}
	for _, want := range []string{"uid:81235", "host:01234567", "dir:/local", "init-visible", "in-cgroup"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout %q lacks %q (stderr %q)", out.String(), want, errOut.String())
		}
	}
	if _, err := d.ExecTask(t.Context(), &ExecRequest{TaskID: "nope/x", Command: []string{"true"}}); !errors.Is(err, ErrTaskNotFound) {
		t.Errorf("exec into an unknown task: %v", err)
	}
}
