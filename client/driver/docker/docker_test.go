package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/internal/testutil/dockertest"
	"github.com/schedhq/sched/state"
)

// env is one test's driver, engine and image.
type env struct {
	t      *testing.T
	d      *Driver
	engine *client.Client
	image  string
	allocs []string
}

// newEnv builds a driver against the local engine; every allocation the
// test makes (newTask) must have no container left at the end.
func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	image := dockertest.BusyboxImage(t)
	e := &env{t: t, engine: dockertest.Engine(t), image: image}
	e.d = e.driver(cfg)
	t.Cleanup(func() {
		for _, a := range e.allocs {
			dockertest.AssertNoContainers(t, e.engine, LabelAllocID, a)
		}
	})
	return e
}

func (e *env) driver(cfg Config) *Driver {
	e.t.Helper()
	d, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(d.Shutdown)
	return d
}

func randomID(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newTask is a task config of a new allocation with its directories.
func (e *env) newTask(config map[string]any) *driver.TaskConfig {
	e.t.Helper()
	alloc := "test-" + randomID(e.t)
	e.allocs = append(e.allocs, alloc)
	dir := e.t.TempDir()
	for _, s := range []string{"alloc/logs", "web/local", "web/secrets"} {
		if err := os.MkdirAll(filepath.Join(dir, s), 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
	if _, ok := config["image"]; !ok {
		config["image"] = e.image
	}
	return &driver.TaskConfig{ID: alloc + "/web", AllocID: alloc, TaskName: "web", JobID: "job", Namespace: "default",
		Config: config, Env: map[string]string{"GREETING": "hello"},
		TaskDir: filepath.Join(dir, "web"), LocalDir: filepath.Join(dir, "web/local"),
		SecretsDir: filepath.Join(dir, "web/secrets"), AllocDir: filepath.Join(dir, "alloc"),
		LogDir: filepath.Join(dir, "alloc/logs"), CPU: 100, MemoryMB: 64}
}

// waitExit waits up to d for the task's exit.
func (e *env) waitExit(d *Driver, id string, within time.Duration) *driver.ExitResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	res, ok := <-ch
	if !ok {
		e.t.Fatalf("task %s did not exit within %v", id, within)
	}
	return res
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readLog(t *testing.T, cfg *driver.TaskConfig, stream string) string {
	b, _ := os.ReadFile(filepath.Join(cfg.LogDir, cfg.TaskName+"."+stream+".0"))
	return string(b)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRunLogsAndRemove: a task's output reaches its log files, its exit
// code is reported, and destroying it removes the container.
func TestRunLogsAndRemove(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.newTask(map[string]any{"command": "sh", "args": []any{"-c", "echo out $GREETING $SCHED_ALLOC_DIR; echo err >&2; exit 3"},
		"labels": []any{map[string]any{"team": "a"}}})
	h, err := e.d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h.Driver != Name || len(h.State) == 0 {
		t.Fatalf("handle %+v", h)
	}
	cs := dockertest.Containers(t, e.engine, LabelAllocID, cfg.AllocID)
	if len(cs) != 1 || cs[0].Labels["team"] != "a" || cs[0].Labels[LabelTaskName] != "web" {
		t.Fatalf("containers of the allocation: %+v", cs)
	}
	res := e.waitExit(e.d, cfg.ID, time.Minute)
	if res.ExitCode != 3 || res.OOMKilled {
		t.Fatalf("exit %+v, want code 3", res)
	}
	if got := readLog(t, cfg, "stdout"); got != "out hello /alloc\n" {
		t.Fatalf("stdout %q", got)
	}
	if got := readLog(t, cfg, "stderr"); got != "err\n" {
		t.Fatalf("stderr %q", got)
	}
	if err := e.d.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if cs := dockertest.Containers(t, e.engine, LabelAllocID, cfg.AllocID); len(cs) != 0 {
		t.Fatalf("container left after destroy: %+v", cs)
	}
	if _, err := e.d.WaitTask(context.Background(), cfg.ID); !errors.Is(err, driver.ErrTaskNotFound) {
		t.Fatalf("wait after destroy: %v", err)
	}
}

// TestPortMappedHTTP: a group port with `to` is mapped to the container
// port, and busybox httpd answers on the host port; StopTask ends it.
func TestPortMappedHTTP(t *testing.T) {
	e := newEnv(t, Config{})
	host := freePort(t)
	cfg := e.newTask(map[string]any{"command": "sh", "args": []any{"-c", "echo sched-ok > /local/index.html; exec httpd -f -p $SCHED_PORT_http -h /local"},
		"ports": []any{"http"}})
	cfg.Ports = []state.AllocatedPort{{Label: "http", Value: host, To: 8080, HostIP: "127.0.0.1"}}
	if _, err := e.d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/index.html", host)
	var body string
	waitFor(t, time.Minute, "httpd to answer on "+url, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200
	})
	if body != "sched-ok\n" {
		t.Fatalf("body %q", body)
	}
	if err := e.d.StopTask(cfg.ID, 2*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if res := e.waitExit(e.d, cfg.ID, time.Minute); res.Successful() && res.ExitCode == 0 && res.Signal == 0 && res.Err == nil {
		// httpd as pid 1 may exit 0 on SIGTERM or be SIGKILLed (137):
		// either way it exited.
		t.Logf("httpd exited cleanly")
	}
	if err := e.d.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
}

// TestOOMKilled: a task over its memory limit is killed by the kernel
// and reported as such.
func TestOOMKilled(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.newTask(map[string]any{"command": "tail", "args": []any{"/dev/zero"}})
	cfg.MemoryMB = 16
	if _, err := e.d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	res := e.waitExit(e.d, cfg.ID, 2*time.Minute)
	if !res.OOMKilled || !errors.Is(res.Err, driver.ErrOOMKilled) || res.Err.Error() != "OOM Killed" {
		t.Fatalf("exit %+v, want OOM Killed", res)
	}
	if err := e.d.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
}

// TestBadInputFailsCleanly: each bad config fails the start with an
// error naming the cause, and leaves no container.
func TestBadInputFailsCleanly(t *testing.T) {
	e := newEnv(t, Config{})
	cases := []struct {
		name   string
		config map[string]any
		ports  []state.AllocatedPort
		want   string
		bad    bool // a config error (fails the task without restarts)
	}{
		{name: "image missing, registry unreachable", config: map[string]any{"image": "registry.invalid/sched/none:1", "image_pull_timeout": "20s"},
			want: `pull image "registry.invalid/sched/none:1"`},
		{name: "bad ports label", config: map[string]any{"ports": []any{"nope"}},
			ports: []state.AllocatedPort{{Label: "http", Value: 20000}}, want: `ports: "nope" is not a port of the group's network`, bad: true},
		{name: "privileged forbidden", config: map[string]any{"privileged": true}, want: "privileged containers are not allowed", bad: true},
		{name: "cap not allowed", config: map[string]any{"cap_add": []any{"SYS_ADMIN"}}, want: "cap_add: SYS_ADMIN is not in this client's allowed capabilities", bad: true},
		{name: "unknown key", config: map[string]any{"imagee": "x"}, want: "unknown key(s) imagee", bad: true},
		{name: "host volume not enabled", config: map[string]any{"volumes": []any{"/etc:/host-etc"}}, want: "needs client.docker.volumes_enabled", bad: true},
		{name: "no such command", config: map[string]any{"command": "/no/such/program"}, want: "start container"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := e.newTask(c.config)
			cfg.Ports = c.ports
			_, err := e.d.StartTask(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start: %v, want an error containing %q", err, c.want)
			}
			if got := errors.Is(err, driver.ErrBadConfig); got != c.bad {
				t.Fatalf("errors.Is(ErrBadConfig) = %v, want %v (%v)", got, c.bad, err)
			}
			if cs := dockertest.Containers(t, e.engine, LabelAllocID, cfg.AllocID); len(cs) != 0 {
				t.Fatalf("container left after a failed start: %+v", cs)
			}
			if _, err := e.d.WaitTask(context.Background(), cfg.ID); !errors.Is(err, driver.ErrTaskNotFound) {
				t.Fatalf("failed task still known: %v", err)
			}
		})
	}
}

// TestRecoverAfterRestart: a new driver (a restarted client) re-attaches
// to the running container from its handle, keeps copying its output,
// signals, measures and stops it.
func TestRecoverAfterRestart(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.newTask(map[string]any{"command": "sh", "args": []any{"-c",
		`trap 'echo got-usr1' USR1; trap 'exit 0' TERM; echo before; while true; do sleep 0.2; done`}})
	h, err := e.d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the first line", func() bool { return strings.Contains(readLog(t, cfg, "stdout"), "before") })
	e.d.Shutdown()

	d2 := e.driver(Config{})
	if err := d2.RecoverTask(h); err != nil {
		t.Fatal(err)
	}
	if err := d2.SignalTask(cfg.ID, "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the signal's line", func() bool { return strings.Contains(readLog(t, cfg, "stdout"), "got-usr1") })
	if got := readLog(t, cfg, "stdout"); strings.Count(got, "before") != 1 {
		t.Fatalf("stdout after recovery %q: the first line copied twice or lost", got)
	}
	u, err := d2.Stats(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.ResourceUsage.MemoryStats.RSS == 0 || u.ResourceUsage.CpuStats.TotalTime <= 0 {
		t.Fatalf("stats %+v %+v", u.ResourceUsage.MemoryStats, u.ResourceUsage.CpuStats)
	}
	if err := d2.StopTask(cfg.ID, 30*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if res := e.waitExit(d2, cfg.ID, time.Minute); res.ExitCode != 0 || res.Err != nil {
		t.Fatalf("exit after SIGTERM %+v, want 0 (the trap)", res)
	}
	if err := d2.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	// The handle of a removed container is gone.
	d3 := e.driver(Config{})
	if err := d3.RecoverTask(h); !errors.Is(err, driver.ErrTaskGone) {
		t.Fatalf("recover a removed container: %v, want ErrTaskGone", err)
	}
}

// TestKillTimeout: a task that ignores the stop signal is SIGKILLed
// after the timeout.
func TestKillTimeout(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.newTask(map[string]any{"command": "sh", "args": []any{"-c", `trap '' INT TERM; echo up; while true; do sleep 0.2; done`}})
	if _, err := e.d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the task to trap", func() bool { return strings.Contains(readLog(t, cfg, "stdout"), "up") })
	if err := e.d.StopTask(cfg.ID, 300*time.Millisecond, ""); err != nil {
		t.Fatal(err)
	}
	if res := e.waitExit(e.d, cfg.ID, time.Minute); res.ExitCode != 137 {
		t.Fatalf("exit %+v, want 137 (SIGKILL)", res)
	}
	if err := e.d.DestroyTask(cfg.ID, true); err != nil {
		t.Fatal(err)
	}
}

// TestExec: a command runs inside the container, with its output and
// exit code.
func TestExec(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.newTask(map[string]any{"command": "sh", "args": []any{"-c", "echo ready; while true; do sleep 0.2; done"}})
	if _, err := e.d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.d.DestroyTask(cfg.ID, true)
	var out, errb bytes.Buffer
	code, err := e.d.ExecTask(context.Background(), &driver.ExecRequest{TaskID: cfg.ID,
		Command: []string{"sh", "-c", "cat; echo $GREETING; echo e >&2; exit 4"}, Stdin: strings.NewReader("in\n"),
		Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if code != 4 || out.String() != "in\nhello\n" || errb.String() != "e\n" {
		t.Fatalf("exec: code %d stdout %q stderr %q", code, out.String(), errb.String())
	}
	if _, err := e.d.ExecTask(context.Background(), &driver.ExecRequest{TaskID: "none/x", Command: []string{"true"}}); !errors.Is(err, driver.ErrTaskNotFound) {
		t.Fatalf("exec in an unknown task: %v", err)
	}
}

// TestResourcesOnContainer: cpu shares, memory and memory_max reach the
// container.
func TestResourcesOnContainer(t *testing.T) {
	e := newEnv(t, Config{})
	cfg := e.newTask(map[string]any{"command": "sleep", "args": []any{"60"}})
	cfg.CPU, cfg.MemoryMB, cfg.MemoryMaxMB, cfg.Cores = 250, 32, 48, 1
	if _, err := e.d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.d.DestroyTask(cfg.ID, true)
	cs := dockertest.Containers(t, e.engine, LabelAllocID, cfg.AllocID)
	if len(cs) != 1 {
		t.Fatalf("containers %+v", cs)
	}
	info, err := e.engine.ContainerInspect(context.Background(), cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	r := info.HostConfig.Resources
	if r.CPUShares != 250 || r.Memory != 48<<20 || r.MemoryReservation != 32<<20 || r.MemorySwap != 48<<20 || r.NanoCPUs != 1e9 {
		t.Fatalf("resources: shares %d memory %d reservation %d swap %d nanocpus %d", r.CPUShares, r.Memory, r.MemoryReservation, r.MemorySwap, r.NanoCPUs)
	}
}

// TestFingerprint: healthy only when the engine answers; disabled is
// not detected.
func TestFingerprint(t *testing.T) {
	d, err := New(Config{Endpoint: "unix://" + filepath.Join(t.TempDir(), "none.sock")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown()
	if fp := d.Fingerprint(); fp.Healthy || fp.Detected || !strings.Contains(fp.HealthDescription, "unreachable") {
		t.Fatalf("fingerprint without an engine: %+v", fp)
	}
	off, _ := New(Config{Disabled: true})
	defer off.Shutdown()
	if fp := off.Fingerprint(); fp.Detected || fp.Healthy {
		t.Fatalf("disabled: %+v", fp)
	}
	if _, err := off.StartTask(&driver.TaskConfig{ID: "a/b", Config: map[string]any{"image": "x"}}); !errors.Is(err, ErrDisabled) {
		t.Fatalf("start on a disabled driver: %v", err)
	}
	e := newEnv(t, Config{})
	fp := e.d.Fingerprint()
	if !fp.Healthy || !fp.Detected || fp.Attributes["driver.docker.version"] == "" {
		t.Fatalf("fingerprint with an engine: %+v", fp)
	}
	if _, err := strconv.ParseBool(fp.Attributes["driver.docker.privileged.enabled"]); err != nil {
		t.Fatal(err)
	}
}

// TestHostVolumeMount: a host volume the client resolved for the task is
// bound at its destination, read-only when asked.
func TestHostVolumeMount(t *testing.T) {
	e := newEnv(t, Config{})
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "data.txt"), []byte("from-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := e.newTask(map[string]any{"command": "sh", "args": []any{"-c", "cat /data/data.txt; echo x > /data/new || echo read-only"}})
	cfg.Mounts = []*driver.MountConfig{{Volume: "shared", HostPath: hostDir, TaskPath: "/data", ReadOnly: true}}
	if _, err := e.d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	if res := e.waitExit(e.d, cfg.ID, time.Minute); res.ExitCode != 0 {
		t.Fatalf("exit %+v", res)
	}
	if got := readLog(t, cfg, "stdout"); got != "from-host\nread-only\n" {
		t.Fatalf("stdout %q", got)
	}
	if err := e.d.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
}
