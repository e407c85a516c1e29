package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// needRoot skips a test that creates cgroups where it cannot.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root: run the tests as root to exercise them")
	}
	if Detect() == Unavailable {
		t.Skip("no cgroup file system is mounted")
	}
}

// testPath is a group path of this test, asserted gone at its end.
func testPath(t *testing.T) string {
	parent := fmt.Sprintf("/sched-test-%d", os.Getpid())
	p := parent + "/" + t.Name()
	t.Cleanup(func() {
		RemoveEmpty(parent)
		if Exists(p) || Exists(parent) {
			t.Errorf("cgroup %s is left behind", p)
		}
	})
	return p
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"", "/", "sched/x", "/sched/../x", "/sched/x/", "/a\x00b", "/" + string(make([]byte, MaxNameLen))} {
		if _, err := Create(p, Limits{}); err == nil {
			t.Errorf("Create(%q) succeeded", p)
		}
		if Exists(p) {
			t.Errorf("Exists(%q) for a bad path", p)
		}
	}
}

func TestSharesToWeight(t *testing.T) {
	for _, c := range []struct{ shares, weight uint64 }{{0, 1}, {2, 1}, {1024, 39}, {262144, 10000}, {1 << 30, 10000}} {
		if got := SharesToWeight(c.shares); got != c.weight {
			t.Errorf("SharesToWeight(%d) = %d, want %d", c.shares, got, c.weight)
		}
	}
}

func TestGroupLifecycle(t *testing.T) {
	needRoot(t)
	p := testPath(t)
	g, err := Create(p, Limits{CPUShares: 500, MemoryBytes: 64 << 20, MemorySoftBytes: 32 << 20, PIDs: 64})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	ps, err := g.Procs()
	if err != nil || len(ps) != 1 || ps[0] != cmd.Process.Pid {
		t.Fatalf("Procs = %v, %v; want [%d]", ps, err, cmd.Process.Pid)
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.OOMKills != 0 {
		t.Errorf("OOMKills = %d before anything ran out of memory", u.OOMKills)
	}
	again, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Destroy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the process in the destroyed group exited 0: it was not killed")
	}
	if Exists(p) {
		t.Errorf("group %s still exists after Destroy", p)
	}
	if err := g.Destroy(time.Second); err != nil {
		t.Errorf("Destroy of a group already gone: %v", err)
	}
}

func TestMemoryLimitOOMKills(t *testing.T) {
	needRoot(t)
	p := testPath(t)
	g, err := Create(p, Limits{MemoryBytes: 32 << 20, PIDs: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy(10 * time.Second)
	// The shell doubles a string until the kernel kills it; it waits on
	// its stdin first so that it is in the group before it grows.
	cmd := exec.Command("sh", "-c", `read go; a=x; while :; do a="$a$a"; done`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	in.Write([]byte("go\n"))
	err = cmd.Wait()
	if err == nil {
		t.Fatal("the shell outgrew its memory limit and exited 0")
	}
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.OOMKills == 0 {
		t.Errorf("OOMKills = 0 after the shell was killed (%v)", cmd.ProcessState)
	}
	if u.MaxMemoryBytes > 33<<20 {
		t.Errorf("peak memory %d is over the 32 MiB limit", u.MaxMemoryBytes)
	}
}
