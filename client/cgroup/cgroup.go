// Package cgroup puts a task's processes in a control group of their own
// and enforces its limits there: CPU shares (cgroup v1 cpu.shares, v2
// cpu.weight), a memory limit (the hard limit, with a soft one below it
// when the task sets memory_max) and a cap on its process count. It also
// reads back what the group used (CPU time, memory, OOM kills) and kills
// and removes the group.
//
// Both hierarchies are supported through github.com/containerd/cgroups/v3:
// a unified (v2) host gets one directory under the unified mount; a
// legacy or hybrid host (v1 controllers, perhaps with an empty v2
// hierarchy beside them) gets one directory per v1 controller. A Group's
// Path is the same relative path in either case, which is what a client
// persists to find the group again after a restart.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	cgroups "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Mode is the cgroup layout of the host.
type Mode int

// The modes Detect reports.
const (
	// Unavailable: no cgroup file system is mounted.
	Unavailable Mode = iota
	// V1: legacy or hybrid, the controllers are in v1 hierarchies.
	V1
	// V2: the unified hierarchy holds the controllers.
	V2
)

// String names the mode as the node attribute unique.cgroup.version does.
func (m Mode) String() string {
	switch m {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return "unavailable"
}

// Detect reports the host's cgroup layout.
func Detect() Mode {
	switch cgroups.Mode() {
	case cgroups.Legacy, cgroups.Hybrid:
		return V1
	case cgroups.Unified:
		return V2
	}
	return Unavailable
}

// Limits are what a group enforces; a zero field is not limited.
type Limits struct {
	// CPUShares is the task's relative CPU weight (its cpu in MHz, as
	// Nomad uses it): cpu.shares on v1, the equivalent cpu.weight on v2.
	CPUShares uint64
	// MemoryBytes is the hard memory limit: over it the kernel's OOM
	// killer kills a process of the group.
	MemoryBytes int64
	// MemorySoftBytes, when below MemoryBytes (a task with memory_max),
	// is the memory the task reserved: v1's soft limit (the group is
	// reclaimed down to it first under pressure), v2's memory.low (it is
	// protected from reclaim up to it).
	MemorySoftBytes int64
	// PIDs caps the number of processes and threads.
	PIDs int64
}

// MaxNameLen bounds a group's relative path.
const MaxNameLen = 512

// Group is one task's control group.
type Group struct {
	path string // relative to the hierarchy root, starting with "/"
	v1   cgroup1.Cgroup
	v2   *cgroup2.Manager
}

// checkPath refuses a path that is not a clean absolute path below the
// root.
func checkPath(p string) error {
	if len(p) > MaxNameLen {
		return fmt.Errorf("cgroup path of %d bytes is longer than %d", len(p), MaxNameLen)
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" || strings.ContainsAny(p, "\x00\n") {
		return fmt.Errorf("cgroup path %q is not a clean absolute path below the root", p)
	}
	return nil
}

// Create makes the group at p (e.g. "/sched/<alloc>.<task>") with limits
// l. A group left at p by an earlier run is reused, its limits set anew.
func Create(p string, l Limits) (*Group, error) {
	if err := checkPath(p); err != nil {
		return nil, err
	}
	switch Detect() {
	case V1:
		cg, err := cgroup1.New(cgroup1.StaticPath(p), l.v1())
		if err != nil {
			return nil, fmt.Errorf("create cgroup %s (v1): %w", p, err)
		}
		return &Group{path: p, v1: cg}, nil
	case V2:
		m, err := cgroup2.NewManager("/sys/fs/cgroup", p, l.v2())
		if err != nil {
			return nil, fmt.Errorf("create cgroup %s (v2): %w", p, err)
		}
		return &Group{path: p, v2: m}, nil
	}
	return nil, errors.New("no cgroup file system is mounted")
}

// Load finds the group at p again (after a client restart). A group that
// is not there is an error wrapping os.ErrNotExist.
func Load(p string) (*Group, error) {
	if err := checkPath(p); err != nil {
		return nil, err
	}
	if !Exists(p) {
		return nil, fmt.Errorf("cgroup %s: %w", p, os.ErrNotExist)
	}
	switch Detect() {
	case V1:
		cg, err := cgroup1.Load(cgroup1.StaticPath(p))
		if err != nil {
			return nil, fmt.Errorf("load cgroup %s (v1): %w", p, err)
		}
		return &Group{path: p, v1: cg}, nil
	case V2:
		m, err := cgroup2.Load(p)
		if err != nil {
			return nil, fmt.Errorf("load cgroup %s (v2): %w", p, err)
		}
		return &Group{path: p, v2: m}, nil
	}
	return nil, errors.New("no cgroup file system is mounted")
}

// Path is the group's path relative to the hierarchy root.
func (g *Group) Path() string { return g.path }

// AddProc moves process pid (and its future children) into the group.
func (g *Group) AddProc(pid int) error {
	if g.v2 != nil {
		return g.v2.AddProc(uint64(pid))
	}
	return gone(g.v1.AddProc(uint64(pid)))
}

// gone maps the library's "deleted" error to os.ErrNotExist.
func gone(err error) error {
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return fmt.Errorf("%w: %w", os.ErrNotExist, err)
	}
	return err
}

// Procs lists the group's processes.
func (g *Group) Procs() ([]int, error) {
	var out []int
	if g.v2 != nil {
		pids, err := g.v2.Procs(true)
		if err != nil {
			return nil, err
		}
		for _, p := range pids {
			out = append(out, int(p))
		}
		return out, nil
	}
	ps, err := g.v1.Processes(cgroup1.Memory, true)
	if err != nil {
		return nil, gone(err)
	}
	for _, p := range ps {
		out = append(out, p.Pid)
	}
	return out, nil
}

// Usage is what a group used.
type Usage struct {
	// CPU is the total CPU time of its processes, alive and gone.
	CPU time.Duration
	// RSS is its resident anonymous memory; MemoryBytes everything
	// charged to it (page cache included), MaxMemoryBytes the peak.
	RSS, MemoryBytes, MaxMemoryBytes uint64
	// OOMKills counts the processes the OOM killer killed in the group.
	OOMKills uint64
}

// Usage reads the group's counters.
func (g *Group) Usage() (*Usage, error) {
	if g.v2 != nil {
		m, err := g.v2.Stat()
		if err != nil {
			return nil, err
		}
		u := &Usage{}
		if m.CPU != nil {
			u.CPU = time.Duration(m.CPU.UsageUsec) * time.Microsecond
		}
		if m.Memory != nil {
			u.RSS, u.MemoryBytes, u.MaxMemoryBytes = m.Memory.Anon, m.Memory.Usage, m.Memory.MaxUsage
		}
		if m.MemoryEvents != nil {
			u.OOMKills = m.MemoryEvents.OomKill
		}
		return u, nil
	}
	m, err := g.v1.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return nil, gone(err)
	}
	u := &Usage{}
	if m.CPU != nil && m.CPU.Usage != nil {
		u.CPU = time.Duration(m.CPU.Usage.Total)
	}
	if m.Memory != nil {
		u.RSS = m.Memory.TotalRSS
		if m.Memory.Usage != nil {
			u.MemoryBytes, u.MaxMemoryBytes = m.Memory.Usage.Usage, m.Memory.Usage.Max
		}
	}
	if m.MemoryOomControl != nil {
		u.OOMKills = m.MemoryOomControl.OomKill
	}
	return u, nil
}

// Kill sends SIGKILL to every process of the group.
func (g *Group) Kill() error {
	if g.v2 != nil {
		return g.v2.Kill()
	}
	// v1 has no cgroup.kill: freeze, kill each, thaw, so a process that
	// forks meanwhile cannot escape.
	ps, err := g.Procs()
	if errors.Is(err, os.ErrNotExist) {
		return err
	}
	frozen := g.v1.Freeze() == nil
	for _, pid := range ps {
		if kerr := syscall.Kill(pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) && err == nil {
			err = kerr
		}
	}
	if frozen {
		if terr := g.v1.Thaw(); terr != nil && err == nil {
			err = terr
		}
	}
	return err
}

// Destroy kills what is left in the group, waits up to wait for the
// processes to be gone and removes the group. A group already gone is
// not an error.
func (g *Group) Destroy(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		ps, err := g.Procs()
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err == nil && len(ps) == 0 {
			break
		}
		if err := g.Kill(); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("kill cgroup %s: %w", g.path, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still has processes %v after %s", g.path, ps, wait)
		}
		// Killed processes leave the group once the kernel has torn
		// them down; there is no event to wait on for that.
		time.Sleep(delay)
	}
	var err error
	if g.v2 != nil {
		err = g.v2.Delete()
	} else {
		err = g.v1.Delete()
	}
	if err = gone(err); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", g.path, err)
	}
	return nil
}

// Exists reports whether anything of the group at p is left in any
// hierarchy (v1: any controller's directory).
func Exists(p string) bool {
	if checkPath(p) != nil {
		return false
	}
	for _, root := range roots() {
		if _, err := os.Stat(root + p); err == nil {
			return true
		}
	}
	return false
}

// RemoveEmpty removes the directory p (a parent of groups, such as
// "/sched") in every hierarchy where it is empty of groups; what still
// holds a group is left.
func RemoveEmpty(p string) {
	if checkPath(p) != nil {
		return
	}
	for _, root := range roots() {
		os.Remove(root + p)
	}
}

// roots are the mount points of the hierarchies groups are created in.
func roots() []string {
	switch Detect() {
	case V2:
		return []string{"/sys/fs/cgroup"}
	case V1:
		ss, err := cgroup1.Default()
		if err != nil {
			return nil
		}
		var out []string
		for _, s := range ss {
			if pt, ok := s.(interface{ Path(string) string }); ok {
				out = append(out, pt.Path("/"))
			}
		}
		return out
	}
	return nil
}

// v1 is l as a v1 resource spec.
func (l Limits) v1() *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if l.CPUShares > 0 {
		s := max(l.CPUShares, 2)
		r.CPU = &specs.LinuxCPU{Shares: &s}
	}
	if l.MemoryBytes > 0 {
		limit := l.MemoryBytes
		r.Memory = &specs.LinuxMemory{Limit: &limit}
		if l.MemorySoftBytes > 0 && l.MemorySoftBytes < l.MemoryBytes {
			soft := l.MemorySoftBytes
			r.Memory.Reservation = &soft
		}
	}
	if l.PIDs > 0 {
		n := l.PIDs
		r.Pids = &specs.LinuxPids{Limit: &n}
	}
	return r
}

// v2 is l as v2 resources. The soft limit becomes memory.low, the
// amount the kernel protects from reclaim while the group is under it.
func (l Limits) v2() *cgroup2.Resources {
	r := &cgroup2.Resources{}
	if l.CPUShares > 0 {
		w := SharesToWeight(l.CPUShares)
		r.CPU = &cgroup2.CPU{Weight: &w}
	}
	if l.MemoryBytes > 0 {
		limit, noSwap := l.MemoryBytes, int64(0)
		r.Memory = &cgroup2.Memory{Max: &limit, Swap: &noSwap}
		if l.MemorySoftBytes > 0 && l.MemorySoftBytes < l.MemoryBytes {
			low := l.MemorySoftBytes
			r.Memory.Low = &low
		}
	}
	if l.PIDs > 0 {
		r.Pids = &cgroup2.Pids{Max: l.PIDs}
	}
	return r
}

// SharesToWeight maps v1 cpu.shares [2, 262144] onto v2 cpu.weight
// [1, 10000] linearly, as the OCI runtimes do, so that the default 1024
// shares is about the default weight 100.
func SharesToWeight(shares uint64) uint64 {
	shares = min(max(shares, 2), 262144)
	return 1 + ((shares-2)*9999)/262142
}
