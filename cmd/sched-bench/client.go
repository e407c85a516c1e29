package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The client scenario measures a real client agent running mock tasks:
//
//   - the time from registering one job of count allocations, pinned to
//     the dev agent's own client node, to all of them running (the
//     client learns them by blocking query, starts each through the mock
//     driver and reports back in batches);
//   - with -spawn, the same on a client-only agent attached to the dev
//     agent, and that agent's resident memory per running allocation (its
//     RSS once they run, less its RSS before, over count): the client
//     alone, without the server's copy of the allocations.

// clientNode is a node as GET /v1/nodes lists it.
type clientNode struct {
	ID, Name, Status string
}

// nodes lists the registered nodes.
func (b *bench) nodes() ([]clientNode, error) {
	resp, err := b.do(http.MethodGet, "/v1/nodes", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []clientNode
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// waitNode waits until a ready node whose name pick accepts is
// registered.
func (b *bench) waitNode(what string, pick func(name string) bool, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ns, err := b.nodes()
		if err != nil {
			return "", err
		}
		for _, n := range ns {
			if pick(n.Name) && n.Status == "ready" {
				return n.ID, nil
			}
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a deadline-bounded wait
	}
	return "", fmt.Errorf("no ready %s after %v", what, limit)
}

// clientOnlyName names the client-only agent the scenario spawns.
const clientOnlyName = "bench-client"

// isDevNode picks the dev agent's own client node: not a simulated node
// of the other scenarios, not the spawned client-only agent.
func isDevNode(name string) bool { return name != clientOnlyName && !strings.HasPrefix(name, "sim-") }

// freePorts returns n TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		out = append(out, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	return out, nil
}

// pinnedMockJob is a service job of count mock tasks that run until
// stopped, all on one node, each asking for the least the validator
// allows.
func pinnedMockJob(id, nodeID string, count int) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "service", "Datacenters": []string{"*"},
		"Constraints": []any{map[string]any{"LTarget": "${node.unique.id}", "RTarget": nodeID, "Operand": "="}},
		"TaskGroups": []any{map[string]any{
			"Name": "g", "Count": count,
			"EphemeralDisk": map[string]any{"SizeMB": 2},
			"Tasks": []any{map[string]any{
				"Name": "t", "Driver": "mock", "Config": map[string]any{},
				"Resources": map[string]any{"CPU": 1, "MemoryMB": 10},
				"LogConfig": map[string]any{"MaxFiles": 1, "MaxFileSizeMB": 1},
			}},
		}},
	}})
	return body
}

// runOnNode registers count mock allocations pinned to nodeID and returns
// how long they took to all run.
func (b *bench) runOnNode(jobID, nodeID string, count int) (time.Duration, error) {
	start := time.Now()
	resp, err := b.do(http.MethodPost, "/v1/jobs", pinnedMockJob(jobID, nodeID, count))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	end, err := b.waitCounts(jobID, 5*time.Minute, 20*time.Millisecond, func(_, running int) bool { return running >= count })
	if err != nil {
		return 0, err
	}
	return end.Sub(start), nil
}

// stopJob stops a job and waits until none of its allocations runs.
func (b *bench) stopJob(jobID string) error {
	resp, err := b.do(http.MethodDelete, "/v1/job/"+jobID+"?purge=true", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// clientScenario runs the client measurements; bin and pid are the
// spawned dev agent's binary and process (empty and 0 without -spawn).
func (b *bench) clientScenario(count int, bin string, pid int) error {
	nodeID, err := b.waitNode("dev client node", isDevNode, 30*time.Second)
	if err != nil {
		return fmt.Errorf("client: the dev agent's client node: %w", err)
	}
	var before int64
	if pid != 0 {
		before, _ = rssOf(pid)
	}
	d, err := b.runOnNode("client-"+b.run+"-dev", nodeID, count)
	if err != nil {
		return err
	}
	fmt.Printf("client: %d mock allocations on the dev agent's client: register -> all running in %v\n", count, d.Round(time.Millisecond))
	if pid != 0 {
		after, _ := rssOf(pid)
		fmt.Printf("client: dev agent (server + client) RSS %.1f MiB -> %.1f MiB: %.1f KiB per running allocation\n",
			float64(before)/(1<<20), float64(after)/(1<<20), float64(after-before)/1024/float64(count))
	}
	if err := b.stopJob("client-" + b.run + "-dev"); err != nil {
		return err
	}
	if bin == "" {
		return nil
	}

	// A client-only agent: its memory is the client's alone.
	cpid, stop, err := spawnClient(bin, b.addr)
	if err != nil {
		return err
	}
	defer stop()
	cnode, err := b.waitNode("client-only node", func(n string) bool { return n == clientOnlyName }, 30*time.Second)
	if err != nil {
		return err
	}
	idle, err := rssOf(cpid)
	if err != nil {
		return err
	}
	d, err = b.runOnNode("client-"+b.run+"-only", cnode, count)
	if err != nil {
		return err
	}
	time.Sleep(time.Second) // let the last batch of reports settle before reading memory
	busy, err := rssOf(cpid)
	if err != nil {
		return err
	}
	fmt.Printf("client: %d mock allocations on a client-only agent: register -> all running in %v\n", count, d.Round(time.Millisecond))
	fmt.Printf("client: client-only agent RSS %.1f MiB idle -> %.1f MiB with %d running: %.1f KiB per running mock allocation\n",
		float64(idle)/(1<<20), float64(busy)/(1<<20), count, float64(busy-idle)/1024/float64(count))
	return b.stopJob("client-" + b.run + "-only")
}

// spawnClient starts `bin agent` as a client-only agent of server.
func spawnClient(bin, server string) (int, func(), error) {
	dir, err := os.MkdirTemp("", "sched-bench-client-")
	if err != nil {
		return 0, nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return 0, nil, err
	}
	cfg := filepath.Join(dir, "client.hcl")
	body := fmt.Sprintf("name = %q\ndata_dir = %q\nlog_level = \"warn\"\nports {\n http = %d\n raft = %d\n gossip = %d\n}\nclient {\n enabled = true\n servers = [%q]\n}\n",
		clientOnlyName, filepath.Join(dir, "data"), ports[0], ports[1], ports[2], server)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return 0, nil, err
	}
	cmd := exec.Command(bin, "agent", "-config", cfg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	if cmd.Process == nil {
		return 0, nil, errors.New("client agent did not start")
	}
	return cmd.Process.Pid, stop, nil
}
