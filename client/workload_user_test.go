package client

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/client/driver"
	"github.com/schedhq/sched/client/workloaduser"
	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// nobodyUID is the uid every task of a root agent ran as before workload
// users (raw_exec's default_user).
const nobodyUID = 65534

// testRange is a range of n uids no other test (nor another test binary
// running at the same time) is likely to use; every process still running
// as one of them is killed when the test ends.
func testRange(t *testing.T, n uint32) workloaduser.Range {
	base := 200000 + uint32(rand.N(1_000_000))*16
	r := workloaduser.Range{Min: base, Max: base + n - 1}
	t.Cleanup(func() {
		for uid := r.Min; uid <= r.Max; uid++ {
			_, _ = workloaduser.Kill(uid)
		}
	})
	return r
}

// workloadDataDir is a data dir whose parents let other uids through, as
// a real data dir's do (t.TempDir's parent is 0700).
func workloadDataDir(t *testing.T) string {
	dir := t.TempDir()
	for p := filepath.Dir(dir); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withWorkloadUsers gives the client range r, and a raw_exec driver
// configured as an agent's by default (tasks that name no user run as
// nobody, root denied): before workload users, every allocation's tasks
// ran as that same nobody.
func withWorkloadUsers(r workloaduser.Range) func(*Config) {
	return func(cfg *Config) {
		rx := driver.NewRawExec(nil)
		rx.Policy = driver.RawExecPolicy{DefaultUser: "nobody", DeniedUsers: []string{"root"}}
		cfg.Drivers = []driver.Driver{driver.NewMock(), rx}
		cfg.WorkloadUsers = r
	}
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching uids needs a root client")
	}
}

// idTask records who it runs as (uid, gid, groups, HOME) and its pid in
// its task directory, leaves a file there with the default umask, and
// runs until stopped.
func idTask() *state.Task {
	return sh("web", `echo secret > mine; echo "$(id -u)|$(id -g)|$(id -G)|$HOME" > ids; echo $$ > pid; exec sleep 300`)
}

// taskIDs waits for an idTask's pid and returns its recorded uid, the
// rest of its ids line, and its pid.
func taskIDs(t *testing.T, c *Client, allocID string) (uid uint32, ids []string, pid int) {
	t.Helper()
	pid = waitPID(t, allocPathOf(c, allocID, "web", "pid"))
	ids = strings.Split(strings.TrimSpace(readFile(t, allocPathOf(c, allocID, "web", "ids"))), "|")
	n, err := strconv.ParseUint(ids[0], 10, 32)
	if err != nil || len(ids) != 4 {
		t.Fatalf("ids of %s: %q", allocID, ids)
	}
	return uint32(n), ids, pid
}

// procUID is a process's real uid, from the Uid line of
// /proc/<pid>/status.
func procUID(t *testing.T, pid int) uint32 {
	t.Helper()
	for line := range strings.Lines(readFileQuiet(filepath.Join("/proc", strconv.Itoa(pid), "status"))) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.ParseUint(f[1], 10, 32)
			return uint32(n)
		}
	}
	t.Fatalf("no Uid line for pid %d", pid)
	return 0
}

// execIn runs script with /bin/sh inside allocation allocID's web task,
// as an operator's exec does, and returns its exit code and output.
func execIn(t *testing.T, c *Client, allocID, script string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	code, err := c.ExecTask(ctx, allocID, &ExecOptions{Task: "web", Command: []string{"/bin/sh", "-c", script}, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec in %s: %v", allocID, err)
	}
	return code, out.String()
}

// Two allocations' tasks run as two uids of the range, each with no
// supplementary group and its task directory as HOME; neither can signal
// the other's process nor read the files it left in its task directory.
// Before workload users both ran as nobody, and could do both.
func TestAllocationsRunAsTheirOwnWorkloadUsers(t *testing.T) {
	needRoot(t)
	r := testRange(t, 10)
	fs := newFakeServer(t)
	c := testClient(t, fs, workloadDataDir(t), withWorkloadUsers(r))
	a := allocFor(c, job(state.JobTypeService, idTask()))
	b := allocFor(c, job(state.JobTypeService, idTask()))
	fs.addAlloc(a)
	fs.addAlloc(b)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	waitAllocStatus(t, fs, b.ID, state.AllocClientStatusRunning)
	uidA, idsA, pidA := taskIDs(t, c, a.ID)
	uidB, idsB, pidB := taskIDs(t, c, b.ID)

	if uidA == uidB {
		t.Fatalf("both allocations' tasks run as uid %d", uidA)
	}
	for _, x := range []struct {
		id   string
		uid  uint32
		ids  []string
		pid  int
		home string
	}{{a.ID, uidA, idsA, pidA, allocPathOf(c, a.ID, "web")}, {b.ID, uidB, idsB, pidB, allocPathOf(c, b.ID, "web")}} {
		if x.uid < r.Min || x.uid > r.Max || x.uid == nobodyUID {
			t.Errorf("alloc %s runs as uid %d, want one of %s", x.id, x.uid, r)
		}
		if got := procUID(t, x.pid); got != x.uid {
			t.Errorf("alloc %s: /proc says uid %d, the task says %d", x.id, got, x.uid)
		}
		u := strconv.FormatUint(uint64(x.uid), 10)
		if x.ids[1] != u || x.ids[2] != u {
			t.Errorf("alloc %s: gid %q, groups %q; want gid %s and no other group (root's dropped)", x.id, x.ids[1], x.ids[2], u)
		}
		if x.ids[3] != x.home {
			t.Errorf("alloc %s: HOME %q, want the task dir %s", x.id, x.ids[3], x.home)
		}
	}

	// Its own process and files: allowed (so the refusals below are not
	// a broken exec).
	if code, out := execIn(t, c, a.ID, fmt.Sprintf("id -u; kill -0 %d && cat %s", pidA, allocPathOf(c, a.ID, "web", "mine"))); code != 0 || !strings.Contains(out, "secret") || !strings.HasPrefix(out, strconv.FormatUint(uint64(uidA), 10)) {
		t.Fatalf("exec in A on A's own process and file: exit %d, %q", code, out)
	}
	// B's process: EPERM.
	if code, out := execIn(t, c, a.ID, fmt.Sprintf("kill -0 %d", pidB)); code == 0 || !strings.Contains(strings.ToLower(out), "not permitted") {
		t.Fatalf("A's task signalled B's process %d: exit %d, %q", pidB, code, out)
	}
	// B's file, written with the default umask: EACCES.
	if code, out := execIn(t, c, a.ID, "cat "+allocPathOf(c, b.ID, "web", "mine")); code == 0 || strings.Contains(out, "secret") || !strings.Contains(out, "Permission denied") {
		t.Fatalf("A's task read B's file: exit %d, %q", code, out)
	}
	// Nor B's shared alloc/ directory.
	if code, out := execIn(t, c, a.ID, "ls "+allocPathOf(c, b.ID, "alloc")); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("A's task listed B's alloc dir: exit %d, %q", code, out)
	}
	// Its own alloc/ it can write (the group's tasks share it), and the
	// task's logs it can read.
	if code, out := execIn(t, c, a.ID, `echo shared > "$SCHED_ALLOC_DIR/f" && cat "$SCHED_ALLOC_DIR"/logs/web.stdout.0`); code != 0 {
		t.Fatalf("A's task cannot use its own alloc dir: exit %d, %q", code, out)
	}
}

// A uid is freed when its allocation is destroyed, after whatever still
// runs as it (a daemon that left the task's process group) is killed, and
// handed to the next allocation; with every uid of the range held, an
// allocation fails with a clear error.
func TestWorkloadUserRangeExhaustedReleasedAndReused(t *testing.T) {
	needRoot(t)
	r := testRange(t, 2)
	fs := newFakeServer(t)
	c := testClient(t, fs, workloadDataDir(t), withWorkloadUsers(r))
	daemonTask := sh("web", `setsid sleep 300 & echo $! > daemon; echo "$(id -u)|||" > ids; echo $$ > pid; exec sleep 300`)
	a := allocFor(c, job(state.JobTypeService, daemonTask))
	b := allocFor(c, job(state.JobTypeService, idTask()))
	fs.addAlloc(a)
	fs.addAlloc(b)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	waitAllocStatus(t, fs, b.ID, state.AllocClientStatusRunning)
	uidA, _, _ := taskIDs(t, c, a.ID)
	uidB, _, _ := taskIDs(t, c, b.ID)
	daemon := waitPID(t, allocPathOf(c, a.ID, "web", "daemon"))
	if uidA == uidB || procUID(t, daemon) != uidA {
		t.Fatalf("uids: A %d, B %d, A's daemon %d", uidA, uidB, procUID(t, daemon))
	}

	full := allocFor(c, job(state.JobTypeService, idTask()))
	fs.addAlloc(full)
	got := waitAllocStatus(t, fs, full.ID, state.AllocClientStatusFailed)
	if !strings.Contains(got.ClientDescription, "no workload uid free") || !strings.Contains(got.ClientDescription, r.String()) {
		t.Fatalf("exhausted range: description %q", got.ClientDescription)
	}
	if ts := got.TaskStates["web"]; ts == nil || !ts.Failed || eventOf(ts, state.TaskSetupFailure) == nil {
		t.Fatalf("exhausted range: task state %s", statusOf(got))
	}

	fs.removeAlloc(a.ID)
	testutil.WaitForErr(t, 10*time.Second, "A destroyed and its uid freed", func() error {
		if n := c.users.InUse(); n != 1 {
			return fmt.Errorf("%d uids in use", n)
		}
		return nil
	})
	if pidAlive(daemon) {
		t.Fatalf("A's daemon %d survived A's destruction, as uid %d", daemon, procUID(t, daemon))
	}
	d := allocFor(c, job(state.JobTypeService, idTask()))
	fs.addAlloc(d)
	waitAllocStatus(t, fs, d.ID, state.AllocClientStatusRunning)
	if uidD, _, _ := taskIDs(t, c, d.ID); uidD != uidA {
		t.Fatalf("the next allocation runs as uid %d, want A's freed %d", uidD, uidA)
	}
}

// A restarted client keeps each restored allocation's uid: its running
// task is recovered as it, exec into it runs as it, and a new allocation
// is not given it.
func TestRestoredAllocationKeepsItsWorkloadUser(t *testing.T) {
	needRoot(t)
	r := testRange(t, 2)
	fs := newFakeServer(t)
	dir := workloadDataDir(t)
	c1 := testClient(t, fs, dir, withWorkloadUsers(r), keepTasks)
	a := allocFor(c1, job(state.JobTypeService, idTask()))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	uidA, _, pidA := taskIDs(t, c1, a.ID)
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}

	c2 := testClient(t, fs, dir, withWorkloadUsers(r))
	ar, err := c2.runner(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := ar.workloadUID(); got != uidA {
		t.Fatalf("restored allocation has uid %d, want %d", got, uidA)
	}
	if !pidAlive(pidA) || procUID(t, pidA) != uidA {
		t.Fatalf("the recovered task %d is gone or changed uid", pidA)
	}
	testutil.WaitForErr(t, 10*time.Second, "the driver to recover the task", func() error {
		tr := ar.tasks[0]
		_, err := tr.drv.Stats(tr.id)
		return err
	})
	if code, out := execIn(t, c2, a.ID, "id -u"); code != 0 || strings.TrimSpace(out) != strconv.FormatUint(uint64(uidA), 10) {
		t.Fatalf("exec into the restored task: exit %d, %q; want uid %d", code, out, uidA)
	}
	// The pool starts again at the range's start: only A's claim keeps
	// a new allocation off A's uid.
	b := allocFor(c2, job(state.JobTypeService, idTask()))
	fs.addAlloc(b)
	waitAllocStatus(t, fs, b.ID, state.AllocClientStatusRunning)
	if uidB, _, _ := taskIDs(t, c2, b.ID); uidB == uidA {
		t.Fatalf("a new allocation got the restored allocation's uid %d", uidA)
	}
	// The directories a restarted client builds over are handed back.
	if info, err := os.Stat(allocPathOf(c2, a.ID, "web")); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("restored task dir: %v, %v", info.Mode(), err)
	}
}

// An allocation a client without workload users started keeps running
// as it was once a restarted client hands them out: it gets no uid (its
// running task would lose its own directories); a new allocation does.
func TestAllocationStartedWithoutWorkloadUsersKeepsItsUser(t *testing.T) {
	needRoot(t)
	r := testRange(t, 2)
	fs := newFakeServer(t)
	dir := workloadDataDir(t)
	c1 := testClient(t, fs, dir, withWorkloadUsers(workloaduser.Range{}), keepTasks)
	a := allocFor(c1, job(state.JobTypeService, idTask()))
	fs.addAlloc(a)
	waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
	uidA, _, pidA := taskIDs(t, c1, a.ID)
	if uidA != nobodyUID {
		t.Fatalf("without workload users the task runs as %d, want nobody", uidA)
	}
	c1.Shutdown()

	c2 := testClient(t, fs, dir, withWorkloadUsers(r))
	ar, err := c2.runner(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	b := allocFor(c2, job(state.JobTypeService, idTask()))
	fs.addAlloc(b)
	waitAllocStatus(t, fs, b.ID, state.AllocClientStatusRunning)
	if uidB, _, _ := taskIDs(t, c2, b.ID); uidB < r.Min || uidB > r.Max {
		t.Fatalf("a new allocation runs as %d, want one of %s", uidB, r)
	}
	if uid := ar.workloadUID(); uid != 0 || !pidAlive(pidA) || procUID(t, pidA) != nobodyUID {
		t.Fatalf("the old allocation: uid %d, its task alive %v", uid, pidAlive(pidA))
	}
	if info, err := os.Stat(allocPathOf(c2, a.ID, "web")); err != nil || info.Sys().(*syscall.Stat_t).Uid != nobodyUID {
		t.Fatalf("the old allocation's task dir was taken from its task: %v", err)
	}
}
