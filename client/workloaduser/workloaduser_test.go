package workloaduser

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestRangeValidate(t *testing.T) {
	for _, tc := range []struct {
		r  Range
		ok bool
	}{
		{Range{DefaultMin, DefaultMax}, true},
		{Range{5, 5}, true},
		{Range{0, 10}, false}, // would hand out root
		{Range{10, 9}, false},
	} {
		if err := tc.r.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.r, err)
		}
		if _, err := NewPool(tc.r); (err == nil) != tc.ok {
			t.Errorf("NewPool(%s): %v", tc.r, err)
		}
	}
	if !(Range{}).IsZero() || (Range{1, 1}).IsZero() {
		t.Error("IsZero")
	}
}

// Each owner gets its own uid, the same one when it asks again; a full
// range fails with ErrExhausted; a freed uid is handed out again only
// after the rest of the range.
func TestPoolAcquireReleaseReuse(t *testing.T) {
	p, err := NewPool(Range{100, 102})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint32{}
	for _, o := range []string{"a", "b", "c"} {
		if got[o], err = p.Acquire(o); err != nil {
			t.Fatal(err)
		}
	}
	if got["a"] != 100 || got["b"] != 101 || got["c"] != 102 {
		t.Fatalf("uids %v", got)
	}
	if again, _ := p.Acquire("b"); again != 101 {
		t.Fatalf("b asked again and got %d", again)
	}
	if _, err := p.Acquire("d"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("full range: %v", err)
	}
	p.Release("b")
	p.Release("nobody-holds-this")
	if uid, err := p.Acquire("d"); err != nil || uid != 101 {
		t.Fatalf("after b's release: %d, %v", uid, err)
	}
	p.Release("a")
	p.Release("d")
	// 100 was freed first, but the search goes on from after 101.
	if uid, _ := p.Acquire("e"); uid != 100 {
		t.Fatalf("e got %d, want 100 (102 is held)", uid)
	}
	if uid, _ := p.Acquire("f"); uid != 101 {
		t.Fatalf("f got %d, want 101", uid)
	}
	if n := p.InUse(); n != 3 {
		t.Fatalf("in use %d", n)
	}
}

// A restored owner's claim keeps its uid from others; a uid held by
// another owner cannot be claimed; a claim outside the range is kept.
func TestPoolClaim(t *testing.T) {
	p, _ := NewPool(Range{100, 101})
	if err := p.Claim("a", 100); err != nil {
		t.Fatal(err)
	}
	if err := p.Claim("a", 100); err != nil {
		t.Fatalf("claiming again: %v", err)
	}
	if err := p.Claim("b", 100); !errors.Is(err, ErrClaimed) {
		t.Fatalf("b claimed a's uid: %v", err)
	}
	if uid, _ := p.Acquire("c"); uid != 101 {
		t.Fatalf("c got %d, want 101", uid)
	}
	if err := p.Claim("old", 5000); err != nil {
		t.Fatal(err)
	}
	if uid, ok := p.Held("old"); !ok || uid != 5000 {
		t.Fatalf("Held: %d %v", uid, ok)
	}
	p.Release("old")
	if _, ok := p.Held("old"); ok {
		t.Fatal("released claim still held")
	}
}

func TestStatusUIDs(t *testing.T) {
	status := "Name:\tsleep\nState:\tS (sleeping)\nTgid:\t42\nUid:\t80001\t80002\t80003\t80004\nGid:\t1\t1\t1\t1\n"
	ids, zombie := statusUIDs([]byte(status))
	if ids != [3]uint32{80001, 80002, 80003} || zombie {
		t.Fatalf("%v %v", ids, zombie)
	}
	if _, zombie := statusUIDs([]byte("State:\tZ (zombie)\nUid:\t1\t1\t1\t1\n")); !zombie {
		t.Fatal("zombie not seen")
	}
}

// Kill finds and kills a process running as the uid, wherever it is
// (here: a child the test started as that uid, in its own session).
func TestKill(t *testing.T) {
	if _, err := Kill(0); err == nil {
		t.Fatal("Kill(0) accepted")
	}
	if os.Geteuid() != 0 {
		t.Skip("starting a process as another uid needs root")
	}
	const uid = 3_999_999_001
	cmd := exec.Command("/bin/sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	n, err := Kill(uid)
	if err != nil || n != 1 {
		t.Fatalf("Kill: %d, %v", n, err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the process survived")
	}
	if n, err := Kill(uid); n != 0 || err != nil {
		t.Fatalf("second Kill: %d, %v", n, err)
	}
}
