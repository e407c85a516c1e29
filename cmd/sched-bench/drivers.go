package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The drivers scenario measures real task drivers on a real client:
//
//   - start latency: one task at a time, pinned to the dev agent's client
//     node, the time from registering its job to the task running; the
//     p50 and p90 of -driver-starts samples, and the p50 of its phases
//     (startPhases); for docker, interleaved with the engine's floor, the
//     same container created and started straight through the API
//     (drivers_engine.go);
//   - density: one job of -driver-tasks tasks on a client-only agent
//     (with -spawn): placed -> all running, then the client agent's
//     resident memory and CPU per running task, and the memory of the
//     processes the tasks cost on the host outside the agent (for docker,
//     the containerd shims; for exec, the inits and the tasks; for raw_exec,
//     the tasks themselves), and the heartbeats meanwhile; for docker,
//     first the engine's floor for as many containers, at each
//     concurrency of -docker-floor-parallel.
//
// Each task runs `sleep 3600` (docker: in -docker-image, which must be on
// the engine already; the docker driver's tests build sched-test-busybox:1).

// driverTask is the task of one driver's measurement.
func driverTask(driver, image string) map[string]any {
	t := map[string]any{"Name": "t", "Driver": driver, "KillTimeout": int64(time.Second),
		"Resources": map[string]any{"CPU": 20, "MemoryMB": 16},
		"LogConfig": map[string]any{"MaxFiles": 1, "MaxFileSizeMB": 1}}
	switch driver {
	case "docker":
		t["Config"] = map[string]any{"image": image, "command": "sleep", "args": []string{"3600"}}
	default:
		t["Config"] = map[string]any{"command": "/bin/sleep", "args": []string{"3600"}}
	}
	return t
}

// pinnedDriverJob is a service job of count tasks of driver on nodeID.
func pinnedDriverJob(id, nodeID, driver, image string, count int) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "service", "Datacenters": []string{"*"},
		"Constraints": []any{map[string]any{"LTarget": "${node.unique.id}", "RTarget": nodeID, "Operand": "="}},
		"TaskGroups": []any{map[string]any{
			"Name": "g", "Count": count, "EphemeralDisk": map[string]any{"SizeMB": 2},
			"RestartPolicy": map[string]any{"Attempts": 0, "Mode": "fail", "Interval": int64(time.Minute), "Delay": int64(time.Second)},
			"Tasks":         []any{driverTask(driver, image)},
		}},
	}})
	return body
}

// runDriverJob registers the job and returns when all count run: the
// time from the register and from the last placement.
func (b *bench) runDriverJob(id, nodeID, driver, image string, count int, limit time.Duration) (fromRegister, fromPlaced time.Duration, err error) {
	start := time.Now()
	resp, err := b.do(http.MethodPost, "/v1/jobs", pinnedDriverJob(id, nodeID, driver, image, count))
	if err != nil {
		return 0, 0, err
	}
	resp.Body.Close()
	placedAt, err := b.waitCounts(id, limit, 10*time.Millisecond, func(placed, _ int) bool { return placed >= count })
	if err != nil {
		return 0, 0, fmt.Errorf("%s: placement: %w", id, err)
	}
	end, err := b.waitCounts(id, limit, 10*time.Millisecond, func(_, running int) bool { return running >= count })
	if err != nil {
		return 0, 0, fmt.Errorf("%s: running: %w", id, err)
	}
	return end.Sub(start), end.Sub(placedAt), nil
}

// startPhases splits one task's register -> running by the times the
// servers and the client recorded: until the client received the task
// (scheduling, plan, the client's pickup), until its driver had started it
// (the task's "Started" event: the driver's StartTask, the engine's work
// for docker), and until the servers had it running (the client's status
// report and the benchmark's poll).
type startPhases struct{ received, started, reported time.Duration }

// phasesOf reads the phases of job id's one allocation, registered at
// registered and seen running after total.
func (b *bench) phasesOf(id string, registered time.Time, total time.Duration) (startPhases, error) {
	resp, err := b.do(http.MethodGet, "/v1/job/"+id+"/allocations", nil)
	if err != nil {
		return startPhases{}, err
	}
	var allocs []struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&allocs)
	resp.Body.Close()
	if err != nil || len(allocs) == 0 {
		return startPhases{}, fmt.Errorf("%s: allocations: %v (%d)", id, err, len(allocs))
	}
	resp, err = b.do(http.MethodGet, "/v1/allocation/"+allocs[0].ID, nil)
	if err != nil {
		return startPhases{}, err
	}
	var a struct {
		TaskStates map[string]struct {
			Events []struct {
				Type string
				Time int64
			}
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if err != nil {
		return startPhases{}, err
	}
	var ph startPhases
	for _, e := range a.TaskStates["t"].Events {
		at := time.Unix(0, e.Time).Sub(registered)
		switch e.Type {
		case "Received":
			ph.received = at
		case "Started":
			ph.started = at
		}
	}
	if ph.received == 0 || ph.started == 0 {
		return startPhases{}, fmt.Errorf("%s: no Received or Started event", id)
	}
	ph.started -= ph.received
	ph.reported = total - ph.received - ph.started
	return ph, nil
}

// driversOptions are the drivers scenario's flags.
type driversOptions struct {
	drivers       []string
	starts, tasks int
	image, bin    string
	// floorParallel are the concurrencies at which the engine floor
	// starts -driver-tasks containers (docker only).
	floorParallel []int
}

// driversScenario measures each driver of o.drivers.
func (b *bench) driversScenario(o driversOptions) error {
	nodeID, err := b.waitNode("dev client node", isDevNode, 30*time.Second)
	if err != nil {
		return fmt.Errorf("drivers: the dev agent's client node: %w", err)
	}
	for _, drv := range o.drivers {
		var floor *engineFloor
		if drv == "docker" {
			if floor, err = newEngineFloor(o.image); err != nil {
				return fmt.Errorf("drivers: %w", err)
			}
			defer floor.close()
		}
		var lat, floorLat []time.Duration
		var phases []startPhases
		for i := range o.starts {
			// The engine floor and sched's start take turns, each first
			// every other time, so that both see the same engine.
			if floor != nil && i%2 == 1 {
				d, err := floor.one()
				if err != nil {
					return err
				}
				floorLat = append(floorLat, d)
			}
			id := fmt.Sprintf("drv-%s-%s-start-%02d", b.run, strings.ReplaceAll(drv, "_", ""), i)
			registered := time.Now()
			d, _, err := b.runDriverJob(id, nodeID, drv, o.image, 1, 2*time.Minute)
			if err != nil {
				return err
			}
			lat = append(lat, d)
			if ph, err := b.phasesOf(id, registered, d); err == nil {
				phases = append(phases, ph)
			} else {
				fmt.Fprintln(os.Stderr, "sched-bench: drivers:", err)
			}
			// Stopped (its container removed) before the next: the next
			// start does not share the engine with this one's removal,
			// and the last one is not left behind when the agent stops.
			if err := b.stopJobAndWait(id); err != nil {
				return err
			}
			if floor != nil && i%2 == 0 {
				d, err := floor.one()
				if err != nil {
					return err
				}
				floorLat = append(floorLat, d)
			}
		}
		if len(lat) > 0 {
			slices.Sort(lat)
			fmt.Printf("drivers: %s: register -> running, one task at a time (%d samples): p50 %v, p90 %v, max %v\n",
				drv, len(lat), pct(lat, 50).Round(time.Millisecond), pct(lat, 90).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
		}
		if len(phases) > 0 {
			var rec, st, rep []time.Duration
			for _, ph := range phases {
				rec, st, rep = append(rec, ph.received), append(st, ph.started), append(rep, ph.reported)
			}
			for _, s := range [][]time.Duration{rec, st, rep} {
				slices.Sort(s)
			}
			fmt.Printf("drivers: %s: p50 of the phases: register -> client received %v, received -> started by the driver %v, started -> running on the servers %v\n",
				drv, pct(rec, 50).Round(time.Millisecond), pct(st, 50).Round(time.Millisecond), pct(rep, 50).Round(time.Millisecond))
		}
		if len(floorLat) > 0 {
			slices.Sort(floorLat)
			fmt.Printf("drivers: %s: engine floor, create + start of the same container through the API, interleaved (%d samples): p50 %v, p90 %v, max %v\n",
				drv, len(floorLat), pct(floorLat, 50).Round(time.Millisecond), pct(floorLat, 90).Round(time.Millisecond), floorLat[len(floorLat)-1].Round(time.Millisecond))
		}
		if o.tasks <= 0 {
			continue
		}
		if floor != nil {
			for _, k := range o.floorParallel {
				d, err := floor.many(o.tasks, k)
				if err != nil {
					return err
				}
				fmt.Printf("drivers: %s: engine floor, %d containers created and started %d at a time: all running after %v\n",
					drv, o.tasks, k, d.Round(time.Millisecond))
			}
		}
		if o.bin == "" {
			continue // the density needs a client-only agent of -spawn's binary
		}
		if err := b.driverDensity(drv, o.tasks, o.image, o.bin); err != nil {
			return err
		}
	}
	return nil
}

// driverDensity runs tasks tasks of drv on a client-only agent.
func (b *bench) driverDensity(drv string, tasks int, image, bin string) error {
	// The previous driver's client-only node stays "ready" until its
	// heartbeat TTL passes: the new agent's node is the one not seen
	// before (a job pinned to the old one was lost).
	before, err := b.nodes()
	if err != nil {
		return err
	}
	old := map[string]bool{}
	for _, n := range before {
		old[n.ID] = true
	}
	cpid, cport, stop, err := spawnDriverClient(bin, b.addr)
	if err != nil {
		return err
	}
	defer stop()
	var cnode string
	for deadline := time.Now().Add(30 * time.Second); cnode == "" && time.Now().Before(deadline); {
		ns, err := b.nodes()
		if err != nil {
			return err
		}
		for _, n := range ns {
			if n.Name == clientOnlyName && n.Status == "ready" && !old[n.ID] {
				cnode = n.ID
			}
		}
		if cnode == "" {
			time.Sleep(50 * time.Millisecond) // poll interval of a deadline-bounded wait
		}
	}
	if cnode == "" {
		return fmt.Errorf("no new ready %s node after 30s", clientOnlyName)
	}
	idle, err := rssOf(cpid)
	if err != nil {
		return err
	}
	hostBefore := hostTaskRSS(drv)
	hb := watchHeartbeats(fmt.Sprintf("http://127.0.0.1:%d/v1/metrics?format=prometheus", cport), b.addr+"/v1/node/"+cnode)
	id := fmt.Sprintf("drv-%s-%s-density", b.run, strings.ReplaceAll(drv, "_", ""))
	total, fromPlaced, err := b.runDriverJob(id, cnode, drv, image, tasks, 10*time.Minute)
	if err != nil {
		hb.stop()
		return err
	}
	// Steady state: the client's CPU over 10 s with every task running.
	const window = 10 * time.Second
	cpu0, _ := cpuOf(cpid)
	time.Sleep(window) // the measuring window itself
	cpu1, _ := cpuOf(cpid)
	busy, err := rssOf(cpid)
	if err != nil {
		return err
	}
	hostAfter := hostTaskRSS(drv)
	hbs := hb.stop()
	fmt.Printf("drivers: %s: %d tasks on a client-only agent: register -> all running %v (placed -> all running %v)\n",
		drv, tasks, total.Round(time.Millisecond), fromPlaced.Round(time.Millisecond))
	fmt.Printf("drivers: %s: client agent RSS %.1f MiB idle -> %.1f MiB: %.0f KiB per running task; client CPU %.3f%% of a core per running task\n",
		drv, float64(idle)/(1<<20), float64(busy)/(1<<20), float64(busy-idle)/1024/float64(tasks),
		100*float64(cpu1-cpu0)/float64(window)/float64(tasks))
	fmt.Printf("drivers: %s: host processes per task outside the agent (%s): %.1f MiB proportional (PSS)\n",
		drv, hostProcessKind(drv), float64(hostAfter-hostBefore)/(1<<20)/float64(tasks))
	fmt.Printf("drivers: %s: heartbeats from register to the end of the window: %d ok, %d failed, answered at most %v after due, longest gap between two answered %v, node not ready %d times\n",
		drv, hbs.ok, hbs.failed, hbs.maxDelay.Round(time.Millisecond), hbs.maxGap.Round(10*time.Millisecond), hbs.notReady)
	return b.stopJobAndWait(id)
}

// stopJobAndWait stops a job, waits until none of its tasks runs (so a
// client agent stopped next leaves nothing behind), then purges it.
func (b *bench) stopJobAndWait(id string) error {
	resp, err := b.do(http.MethodDelete, "/v1/job/"+id, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if _, err := b.waitCounts(id, 5*time.Minute, 100*time.Millisecond, func(_, running int) bool { return running == 0 }); err != nil {
		return fmt.Errorf("%s: stopping: %w", id, err)
	}
	return b.stopJob(id)
}

// hostProcessKind names what hostTaskRSS sums for drv.
func hostProcessKind(drv string) string {
	switch drv {
	case "docker":
		return "containerd-shim, fuse-overlayfs where the engine stores on it, and the container's process"
	case "exec":
		return "the task's init (sched-task-init) and its process"
	}
	return "the task's process"
}

// pssOf is pid's proportional set size: its resident memory with each
// shared page (the sched binary's text mapped by a hundred inits, a
// shim's by a hundred shims) split between the processes that map it,
// so that a sum over processes counts every page once.
func pssOf(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no Pss in /proc/%d/smaps_rollup", pid)
}

// hostTaskRSS sums the proportional memory (pssOf) of the processes a
// task of drv costs outside the agent: every containerd shim (and
// fuse-overlayfs, the file system of each container's root on an engine
// storing on it, as this machine's), exec init and sleep process.
func hostTaskRSS(drv string) int64 {
	entries, _ := os.ReadDir("/proc")
	var sum int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if drv == "exec" {
			// The init is the sched binary run as sched-task-init.
			if argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.HasPrefix(string(argv), "sched-task-init\x00") {
				name = "sched-task-init"
			}
		}
		if name == "sleep" || (drv == "docker" && (strings.HasPrefix(name, "containerd-shim") || name == "fuse-overlayfs")) || name == "sched-task-init" {
			if pss, err := pssOf(pid); err == nil {
				sum += pss
			}
		}
	}
	return sum
}

// spawnDriverClient starts a client-only agent of server with raw_exec
// as the dev agent has it: enabled, tasks as the agent's own user (its
// temporary data dir lets no other user in).
func spawnDriverClient(bin, server string) (int, int, func(), error) {
	dir, err := os.MkdirTemp("", "sched-bench-drivers-")
	if err != nil {
		return 0, 0, nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return 0, 0, nil, err
	}
	cfg := filepath.Join(dir, "client.hcl")
	body := fmt.Sprintf("name = %q\ndata_dir = %q\nlog_level = \"warn\"\nports {\n http = %d\n raft = %d\n gossip = %d\n}\nclient {\n enabled = true\n servers = [%q]\n raw_exec {\n  enabled = true\n  default_user = \"\"\n  denied_users = []\n }\n users {\n  dynamic = false\n }\n}\n",
		clientOnlyName, filepath.Join(dir, "data"), ports[0], ports[1], ports[2], server)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return 0, 0, nil, err
	}
	cmd := exec.Command(bin, "agent", "-config", cfg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	return cmd.Process.Pid, ports[0], stop, nil
}

// heartbeatStats is what watchHeartbeats saw.
type heartbeatStats struct {
	ok, failed int
	// maxGap is the longest time between two increments of the client's
	// answered-heartbeat count, as sampled every heartbeatSample.
	maxGap time.Duration
	// notReady counts the samples of the node's status (on the servers)
	// that were not "ready".
	notReady int
	// maxDelay is the client's own sched_client_heartbeat_delay_max_seconds
	// at the end: the longest a heartbeat was answered after it was due.
	maxDelay time.Duration
}

// heartbeatSample is how often watchHeartbeats reads the counters.
const heartbeatSample = 100 * time.Millisecond

// heartbeatWatch samples a client agent's heartbeat counters (its
// Prometheus metrics) and its node's status on the servers until stop.
type heartbeatWatch struct {
	done chan struct{}
	res  chan heartbeatStats
}

func (w *heartbeatWatch) stop() heartbeatStats {
	close(w.done)
	return <-w.res
}

func watchHeartbeats(metricsURL, nodeURL string) *heartbeatWatch {
	w := &heartbeatWatch{done: make(chan struct{}), res: make(chan heartbeatStats, 1)}
	hc := &http.Client{Timeout: 2 * time.Second}
	read := func(url string) string {
		resp, err := hc.Get(url)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return string(b)
	}
	counter := func(body, result string) (int, bool) {
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "sched_client_heartbeats_total{") && strings.Contains(l, `result="`+result+`"`) {
				f := strings.Fields(l)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				return int(v), err == nil
			}
		}
		return 0, false
	}
	go func() {
		var st heartbeatStats
		ok0, failed0, last, lastAt := -1, -1, -1, time.Now()
		tick := time.NewTicker(heartbeatSample)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				if ok0 >= 0 {
					st.ok = last - ok0
				}
				w.res <- st
				return
			case <-tick.C:
			}
			body := read(metricsURL)
			ok, okFound := counter(body, "ok")
			failed, _ := counter(body, "failed")
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, "sched_client_heartbeat_delay_max_seconds{") {
					f := strings.Fields(l)
					if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
						st.maxDelay = time.Duration(v * float64(time.Second))
					}
				}
			}
			if okFound {
				now := time.Now()
				if ok0 < 0 {
					ok0, failed0, last, lastAt = ok, failed, ok, now
				}
				if ok != last {
					st.maxGap = max(st.maxGap, now.Sub(lastAt))
					last, lastAt = ok, now
				}
				// A heartbeat still outstanding counts as a gap too.
				st.maxGap = max(st.maxGap, now.Sub(lastAt))
				st.failed = failed - failed0
			}
			var n struct{ Status string }
			if json.Unmarshal([]byte(read(nodeURL)), &n) == nil && n.Status != "" && n.Status != "ready" {
				st.notReady++
			}
		}
	}()
	return w
}
