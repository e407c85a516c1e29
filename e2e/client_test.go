package e2e

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// TestClientServiceJob is issue 4's end-to-end test: `sched agent -dev`
// runs a service job of 3 raw_exec HTTP servers on their dynamic ports;
// their services are listed; one killed from outside is restarted; the
// job stopped leaves no process behind.
func TestClientServiceJob(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	ctx := context.Background()

	if _, _, err := c.Jobs().Register(ctx, httpServerJob("web", 3), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, "web", 3)
	var ports []int
	for _, al := range allocs {
		ports = append(ports, allocPort(al, "http"))
	}
	t.Cleanup(func() { killServers(ports) })
	for _, p := range ports {
		if p == 0 {
			t.Fatalf("an allocation has no http port: %v", ports)
		}
		testutil.WaitForErr(t, 20*time.Second, fmt.Sprintf("HTTP on port %d", p), func() error { return serves(p) })
	}

	// The three services are registered with their ports.
	testutil.WaitForErr(t, 20*time.Second, "3 registered services", func() error {
		regs, _, err := c.Jobs().Services(ctx, "web", nil)
		if err != nil {
			return err
		}
		var got []int
		for _, r := range regs {
			got = append(got, r.Port)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(ports))
		if !slices.Equal(got, want) {
			return fmt.Errorf("service ports %v, want %v", got, want)
		}
		return nil
	})

	// Kill one server from outside: the client restarts it.
	victim := allocs[0]
	port := allocPort(victim, "http")
	pids := serverPIDs(port)
	if len(pids) != 1 {
		t.Fatalf("processes on port %d: %v", port, pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, 30*time.Second, "the killed task to be restarted", func() error {
		al, _, err := c.Allocations().Info(ctx, victim.ID, nil)
		if err != nil {
			return err
		}
		ts := al.TaskStates["server"]
		if ts == nil || ts.Restarts != 1 || ts.State != state.TaskStateRunning {
			return fmt.Errorf("task state %+v", ts)
		}
		if now := serverPIDs(port); len(now) != 1 || now[0] == pids[0] {
			return fmt.Errorf("processes on port %d: %v (killed %d)", port, now, pids[0])
		}
		return serves(port)
	})

	// Stop the job: every process goes, and so do the services.
	var all []int
	for _, p := range ports {
		all = append(all, serverPIDs(p)...)
	}
	if len(all) != 3 {
		t.Fatalf("%d server processes before the stop, want 3: %v", len(all), all)
	}
	if _, _, err := c.Jobs().Deregister(ctx, "web", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, 30*time.Second, "every process to be gone", func() error {
		for _, pid := range all {
			if alive(pid) {
				return fmt.Errorf("pid %d is alive", pid)
			}
		}
		for _, p := range ports {
			if pids := serverPIDs(p); len(pids) > 0 {
				return fmt.Errorf("port %d still served by %v", p, pids)
			}
		}
		return nil
	})
	testutil.WaitForErr(t, 20*time.Second, "allocations complete and services gone", func() error {
		allocs, _, err := c.Jobs().Allocations(ctx, "web", false, nil)
		if err != nil {
			return err
		}
		for _, al := range allocs {
			if al.ClientStatus != state.AllocClientStatusComplete {
				return fmt.Errorf("alloc %s is %s", al.ID, al.ClientStatus)
			}
		}
		regs, _, err := c.Jobs().Services(ctx, "web", nil)
		if err != nil {
			return err
		}
		if len(regs) != 0 {
			return fmt.Errorf("%d services still registered", len(regs))
		}
		return nil
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestClientRestartKeepsTasks SIGKILLs a dev agent that runs raw_exec
// tasks, restarts it on the same data dir, and checks that the tasks
// were found again, not started twice, and are still managed.
func TestClientRestartKeepsTasks(t *testing.T) {
	a := newDevAgent(t)
	a.startDev()
	c := a.client()
	ctx := context.Background()
	if _, _, err := c.Jobs().Register(ctx, httpServerJob("keep", 2), nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs := runningAllocs(t, c, "keep", 2)
	before := map[string]int{}
	var ports []int
	for _, al := range allocs {
		p := allocPort(al, "http")
		ports = append(ports, p)
		testutil.WaitForErr(t, 20*time.Second, fmt.Sprintf("HTTP on port %d", p), func() error { return serves(p) })
		pids := serverPIDs(p)
		if len(pids) != 1 {
			t.Fatalf("processes on port %d: %v", p, pids)
		}
		before[al.ID] = pids[0]
	}
	t.Cleanup(func() { killServers(ports) })
	nodeBefore := allocs[0].NodeID

	a.kill()
	for id, pid := range before {
		if !alive(pid) {
			t.Fatalf("task of %s (pid %d) died with the agent", id, pid)
		}
	}

	a.startDev()
	after := runningAllocs(t, c, "keep", 2)
	for _, al := range after {
		if _, ok := before[al.ID]; !ok || al.NodeID != nodeBefore {
			t.Fatalf("allocation %s on node %s is new: the restarted client was not the same node", al.ID, al.NodeID)
		}
	}
	// Wait past the client's first sync and status report: a duplicate
	// would have been started by then.
	testutil.WaitForErr(t, 20*time.Second, "the restarted client to report", func() error {
		al, _, err := c.Allocations().Info(ctx, allocs[0].ID, nil)
		if err != nil {
			return err
		}
		if al.ModifyIndex <= allocs[0].ModifyIndex {
			return fmt.Errorf("no report yet")
		}
		return nil
	})
	for _, al := range allocs {
		p := allocPort(al, "http")
		pids := serverPIDs(p)
		if len(pids) != 1 || pids[0] != before[al.ID] {
			t.Fatalf("port %d: processes %v after the restart, want only the original %d", p, pids, before[al.ID])
		}
		got, _, err := c.Allocations().Info(ctx, al.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ts := got.TaskStates["server"]; ts.Restarts != 0 || ts.State != state.TaskStateRunning {
			t.Fatalf("task state after restart: %+v", ts)
		}
	}
	// The recovered tasks are still under control: stopping kills them.
	if _, _, err := c.Jobs().Deregister(ctx, "keep", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitForErr(t, 30*time.Second, "the recovered processes to be killed", func() error {
		for _, pid := range before {
			if alive(pid) {
				return fmt.Errorf("pid %d alive", pid)
			}
		}
		return nil
	})
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := readProcStat(pid)
	return err == nil && !isZombie(stat)
}
