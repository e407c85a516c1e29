package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The client-path scenario measures, in one run, what a dev agent's real
// in-process client (mock driver) adds to the scheduler's work, so that
// its ratios do not depend on the hour's speed:
//
//   - scheduler alone: a count=N service job pinned to one simulated node
//     (registered over HTTP, never running anything): register -> all N
//     placed;
//   - the same job pinned to the dev agent's own client node: register ->
//     all N running;
//   - one client registering one-allocation batch jobs (mock run_for 1s)
//     one after the other: the p50 of a register's round trip;
//   - J one-allocation batch jobs (run_for 1s) pinned to the dev node,
//     registered by C concurrent writers: registers/s, and the time from
//     the first register until every job has a started allocation (one
//     the client reported running or complete);
//   - the same J jobs made unplaceable (a constraint no node meets):
//     registers/s. They run last: their evaluations stay blocked.
//
// With -profile-dir it saves a CPU and a heap profile of the agent taken
// while the count job starts (client-path-count-*.pprof), while the J
// placeable jobs are registered (client-path-*.pprof), and from the end
// of their registration, or of that profile, on (client-path-started-*).

// clientPathResult holds one run's figures.
type clientPathResult struct {
	schedAlone, allRunning     time.Duration
	serialP50                  time.Duration
	placeRate, unplaceRate     float64
	placeRegistered, lastStart time.Duration
	// lastSeen is when the follower read the last start; lastStart when
	// the servers recorded it (the report's ModifyTime).
	lastSeen time.Duration
	// lastPlaced is when the servers placed the last of the jobs'
	// allocations (their latest CreateTime).
	lastPlaced time.Duration
	// The agent's CPU time (user and system; zero without -spawn) over
	// each phase: the count job alone and on the client, the placeable
	// jobs' registration and until the last started, the unplaceable
	// jobs'. On a machine shared with other work they move less than the
	// times do.
	cpuAlone, cpuReal, cpuPlaceReg, cpuPlaceAll, cpuUnplace time.Duration
}

// clientPath runs the scenario: count allocations for the count job, jobs
// batch jobs from clients writers, serial registers for the p50. pid is
// the spawned agent's (0: none, no CPU figures).
func (b *bench) clientPath(count, jobs, clients, serial, pid int) error {
	cpu := func() time.Duration {
		if pid == 0 {
			return 0
		}
		d, _ := cpuOf(pid)
		return d
	}
	devNode, err := b.waitNode("dev client node", isDevNode, 30*time.Second)
	if err != nil {
		return fmt.Errorf("client-path: the dev agent's client node: %w", err)
	}
	ns, _, err := b.registerNodes(1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.heartbeat(ctx, ns)
	var r clientPathResult

	// Scheduler alone: the count job on the simulated node, which never
	// starts anything; done when every allocation is placed.
	alone := "cp-" + b.run + "-alone"
	c0 := cpu()
	start := time.Now()
	if resp, err := b.do(http.MethodPost, "/v1/jobs", pinnedMockJob(alone, ns[0].ID, count)); err != nil {
		return err
	} else {
		resp.Body.Close()
	}
	end, err := b.waitCounts(alone, 5*time.Minute, 10*time.Millisecond, func(placed, _ int) bool { return placed >= count })
	if err != nil {
		return fmt.Errorf("client-path: scheduler alone: %w", err)
	}
	r.schedAlone = end.Sub(start)
	r.cpuAlone = cpu() - c0
	// Its purge is scheduled and written before the next job goes: that
	// job's figures are its own, not shared with a thousand stops.
	if err := b.purgeJobAndWait(alone, time.Minute); err != nil {
		return err
	}

	// The same on the real client: done when every allocation runs.
	real := "cp-" + b.run + "-count"
	var prof sync.WaitGroup
	if b.profileDir != "" {
		b.profileClientPath(&prof, "client-path-count")
	}
	c0 = cpu()
	start = time.Now()
	if r.allRunning, err = b.runOnNode(real, devNode, count); err != nil {
		return fmt.Errorf("client-path: count job on the dev client: %w", err)
	}
	r.cpuReal = cpu() - c0
	prof.Wait()
	if tl, err := b.countTimeline(real, start); err == nil {
		fmt.Println("client-path: count job on the client, from its register (ms, first/median/last): " + tl)
	}
	if err := b.stopJob(real); err != nil {
		return err
	}

	if b.countRepeat > 0 {
		if err := b.repeatCount(real, devNode, count, b.countRepeat, cpu); err != nil {
			return err
		}
	}

	// Serial register round trips of placeable one-allocation jobs.
	serialPrefix := "cp-" + b.run + "-serial-"
	lat := make([]time.Duration, 0, serial)
	for i := range serial {
		body := batchMockJob(serialPrefix+strconv.Itoa(i), devNode)
		t0 := time.Now()
		resp, err := b.do(http.MethodPost, "/v1/jobs", body)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r.serialP50 = pct(lat, 50)

	// Placeable jobs, followed to their start on the dev node.
	placePrefix := "cp-" + b.run + "-place-"
	tally := newRunTally()
	var registering atomic.Bool
	registering.Store(true)
	go b.followStarted(ctx, devNode, placePrefix, tally, &registering)
	bodies := make([][]byte, jobs)
	for i := range bodies {
		bodies[i] = batchMockJob(placePrefix+strconv.Itoa(i), devNode)
	}
	if b.profileDir != "" {
		b.profileClientPath(&prof, "client-path")
	}
	c0 = cpu()
	start = time.Now()
	if err := b.registerBodies(bodies, clients); err != nil {
		return err
	}
	r.placeRegistered = time.Since(start)
	r.cpuPlaceReg = cpu() - c0
	registering.Store(false)
	r.placeRate = float64(jobs) / r.placeRegistered.Seconds()
	if b.profileDir != "" {
		// Then the client's part alone: the runs, their reports, the
		// reads that follow them.
		prof.Wait()
		b.profileClientPath(&prof, "client-path-started")
	}
	seen, err := tally.wait(jobs, 5*time.Minute)
	if err != nil {
		return fmt.Errorf("client-path: placeable jobs started: %w", err)
	}
	r.lastStart, r.lastSeen = tally.lastAt().Sub(start), seen.Sub(start)
	r.cpuPlaceAll = cpu() - c0
	prof.Wait()
	if last, err := b.lastCreated(placePrefix); err == nil {
		r.lastPlaced = last.Sub(start)
	}

	// The same number of unplaceable jobs.
	unplace := "cp-" + b.run + "-none-"
	for i := range bodies {
		bodies[i] = batchMockJob(unplace+strconv.Itoa(i), "no-such-node")
	}
	c0 = cpu()
	start = time.Now()
	if err := b.registerBodies(bodies, clients); err != nil {
		return err
	}
	r.unplaceRate = float64(jobs) / time.Since(start).Seconds()
	r.cpuUnplace = cpu() - c0
	r.print(count, jobs, clients, serial)
	return nil
}

// print reports the figures and the three ratios the issue sets targets
// for.
func (r clientPathResult) print(count, jobs, clients, serial int) {
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	fmt.Printf("client-path: count=%d: scheduler alone (simulated node) placed in %s; real client: all running in %s (%.2fx; target <= 2x)\n",
		count, ms(r.schedAlone), ms(r.allRunning), r.allRunning.Seconds()/r.schedAlone.Seconds())
	fmt.Printf("client-path: %d one-alloc batch jobs (run_for 1s), %d clients: %.0f registers/s while placing (%s), last started after %s (%.2fx the registration; target <= 1.5x; seen by the follower after %s)\n",
		jobs, clients, r.placeRate, ms(r.placeRegistered), ms(r.lastStart), r.lastStart.Seconds()/r.placeRegistered.Seconds(), ms(r.lastSeen))
	if r.lastPlaced > 0 {
		fmt.Printf("client-path: the last of them placed after %s (%.2fx the registration)\n", ms(r.lastPlaced), r.lastPlaced.Seconds()/r.placeRegistered.Seconds())
	}
	fmt.Printf("client-path: %d unplaceable jobs, %d clients: %.0f registers/s; placing/unplaceable %.0f%% (target >= 90%%)\n",
		jobs, clients, r.unplaceRate, 100*r.placeRate/r.unplaceRate)
	fmt.Printf("client-path: 1 client, %d serial registers: p50 %s\n", serial, r.serialP50)
	if r.cpuUnplace > 0 {
		per := func(d time.Duration, n int) string {
			return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000/float64(n))
		}
		fmt.Printf("client-path: agent CPU: count job alone %s, on the client %s (%.2fx); per placeable job %s while registering, %s until the last started; per unplaceable job %s (placeable/unplaceable %.2fx, %.2fx)\n",
			ms(r.cpuAlone), ms(r.cpuReal), r.cpuReal.Seconds()/max(r.cpuAlone.Seconds(), 0.001),
			per(r.cpuPlaceReg, jobs), per(r.cpuPlaceAll, jobs), per(r.cpuUnplace, jobs),
			r.cpuPlaceReg.Seconds()/r.cpuUnplace.Seconds(), r.cpuPlaceAll.Seconds()/r.cpuUnplace.Seconds())
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("client-path: load average at the end: %s", la)
	}
}

// batchMockJob is a batch job of one mock allocation that runs for one
// second, pinned to nodeID (no node has the ID "no-such-node", so that
// one is unplaceable).
func batchMockJob(id, nodeID string) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "batch", "Datacenters": []string{"*"},
		"Constraints": []any{map[string]any{"LTarget": "${node.unique.id}", "RTarget": nodeID, "Operand": "="}},
		"TaskGroups": []any{map[string]any{
			"Name": "g", "Count": 1,
			"EphemeralDisk": map[string]any{"SizeMB": 2},
			"Tasks": []any{map[string]any{
				"Name": "t", "Driver": "mock", "Config": map[string]any{"run_for": "1s"},
				"Resources": map[string]any{"CPU": 1, "MemoryMB": 10},
				"LogConfig": map[string]any{"MaxFiles": 1, "MaxFileSizeMB": 1},
			}},
		}},
	}})
	return body
}

// registerBodies registers bodies from clients concurrent writers and
// fails on the first error.
func (b *bench) registerBodies(bodies [][]byte, clients int) error {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) || firstErr.Load() != nil {
					return
				}
				resp, err := b.do(http.MethodPost, "/v1/jobs", bodies[i])
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	return nil
}

// followStarted follows a real client's node by blocking query on its
// allocations' changes and counts, once each, the allocations of jobs
// with prefix that the client reported started (running or complete).
//
// It reads at most once per followGather, followGatherSlow while
// registering is set: every answer carries whole each allocation changed
// since the previous answer, client reports included (delta=true: it does
// not name the node's others; compact=true: its ID, job ID and statuses
// alone, where the whole allocation with its task events took some 3 KB
// of the agent's JSON encoding per change), and a read at every
// write to them made the follower a good part of the agent's CPU, which
// the scenario then charged to the registers while placing. A start's
// time is the servers' record of the report (the compact entry's
// ModifyTime, on this machine's clock: noteAt), not the read's, which
// comes up to a gather later.
func (b *bench) followStarted(ctx context.Context, nodeID, prefix string, tally *runTally, registering *atomic.Bool) {
	index := "0"
	started := map[string]bool{}
	var polled time.Time
	for ctx.Err() == nil {
		gather := followGather
		if registering.Load() {
			gather = followGatherSlow
		}
		if wait := gather - time.Since(polled); wait > 0 {
			time.Sleep(wait)
		}
		polled = time.Now()
		resp, err := b.do(http.MethodGet, "/v1/node/"+nodeID+"/allocations/changes?delta=true&compact=true&wait=30s&index="+index+"&since="+index, nil)
		if err != nil {
			time.Sleep(100 * time.Millisecond) // retry pacing after a failed read
			continue
		}
		var changes struct {
			Changed []struct {
				ID, JobID, ClientStatus string
				ModifyTime              int64
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&changes)
		resp.Body.Close()
		if err != nil {
			time.Sleep(100 * time.Millisecond) // retry pacing after a failed read
			continue
		}
		index = resp.Header.Get("X-Sched-Index")
		d := 0
		for _, a := range changes.Changed {
			if !strings.HasPrefix(a.JobID, prefix) || started[a.ID] {
				continue
			}
			if a.ClientStatus == "running" || a.ClientStatus == "complete" {
				started[a.ID] = true
				d++
				// When the servers recorded the report, on this
				// machine's clock: the start's time to the
				// millisecond, where the read comes up to a gather
				// later. An allocation first seen complete was
				// started before that, so it bounds the start from
				// above. A server without ModifyTime in its compact
				// entries: the read's time, as before.
				at := time.Now()
				if a.ModifyTime != 0 {
					at = time.Unix(0, a.ModifyTime)
				}
				tally.noteAt(at)
			}
		}
		tally.add(d)
	}
}

// profileClientPath saves a CPU profile (profileSeconds long) and then a
// heap profile of the agent into profileDir as name-cpu.pprof and
// name-heap.pprof, in the background; wg is done when both are saved.
func (b *bench) profileClientPath(wg *sync.WaitGroup, name string) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, p := range []struct{ name, query string }{
			{name + "-cpu.pprof", "/v1/agent/pprof/profile?seconds=" + strconv.Itoa(b.profileSeconds)},
			{name + "-heap.pprof", "/v1/agent/pprof/heap"},
		} {
			resp, err := b.do(http.MethodGet, p.query, nil)
			if err != nil {
				fmt.Fprintln(os.Stderr, "client-path: profile:", err)
				return
			}
			f, err := os.Create(filepath.Join(b.profileDir, p.name))
			if err == nil {
				io.Copy(f, resp.Body)
				f.Close()
			}
			resp.Body.Close()
		}
	}()
}

// purgeJobAndWait purges a job and waits, within limit, until the
// evaluation of its purge is complete (its plan, the allocations' stops,
// written).
func (b *bench) purgeJobAndWait(id string, limit time.Duration) error {
	resp, err := b.do(http.MethodDelete, "/v1/job/"+id+"?purge=true", nil)
	if err != nil {
		return err
	}
	var out struct{ EvalID string }
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("purge %s: %w", id, err)
	}
	if out.EvalID == "" {
		return nil
	}
	if _, err := b.waitEvalComplete(out.EvalID, limit); err != nil {
		return fmt.Errorf("purge %s: %w", id, err)
	}
	return nil
}

// clientPathSerial is how many serial registers the p50 is taken over.
const clientPathSerial = 200

// followGather and followGatherSlow (while the jobs are registered) are
// the least time between two reads of followStarted.
const (
	followGather     = 250 * time.Millisecond
	followGatherSlow = time.Second
)

// repeatCount runs the count job on the dev node n more times, each time
// from an empty node: register, wait until all run (the agent's CPU is
// taken over that), stop, wait until none runs, purge, wait until the
// node has none left running and collect them (waitNodeEmpty). One run's CPU moves with what else the
// machine does; the median of many moves less, and a build compared with
// another by interleaved runs of this is the client path's figure with
// the least noise.
func (b *bench) repeatCount(prefix, nodeID string, count, n int, cpu func() time.Duration) error {
	if err := b.waitNodeEmpty(nodeID, 2*time.Minute); err != nil {
		return err
	}
	runs := make([]time.Duration, 0, n)
	walls := make([]time.Duration, 0, n)
	stops := make([]time.Duration, 0, n)
	for i := range n {
		id := fmt.Sprintf("%s-r%d", prefix, i)
		c0 := cpu()
		d, err := b.runOnNode(id, nodeID, count)
		if err != nil {
			return fmt.Errorf("client-path: repeated count job %d: %w", i, err)
		}
		runs = append(runs, cpu()-c0)
		walls = append(walls, d)
		t0 := time.Now()
		if err := b.stopJobAndWait(id); err != nil {
			return err
		}
		stops = append(stops, time.Since(t0))
		if err := b.waitNodeEmpty(nodeID, 2*time.Minute); err != nil {
			return err
		}
	}
	inOrder := make([]string, len(runs))
	for i, d := range runs {
		inOrder[i] = strconv.FormatInt(d.Milliseconds(), 10)
	}
	slices.Sort(runs)
	slices.Sort(walls)
	slices.Sort(stops)
	med := runs[len(runs)/2]
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	fmt.Printf("client-path: count=%d on the client, %d more runs: agent CPU median %s (%s to %s), %.0f µs per allocation; all running median %s; stopped (none running, purged) median %s\n",
		count, n, ms(med), ms(runs[0]), ms(runs[len(runs)-1]), float64(med.Microseconds())/float64(count), walls[len(walls)/2].Round(time.Millisecond), stops[len(stops)/2].Round(time.Millisecond))
	fmt.Printf("client-path: the repeated runs' agent CPU in order, ms: %s\n", strings.Join(inOrder, " "))
	return nil
}

// waitNodeEmpty waits until every allocation on the node has stopped on
// the client, then collects them (PUT /v1/system/gc) and waits until the
// node lists none, so that every repeated run starts from the same state
// as the first. It reads the node's allocations in their compact form
// (ID, job and statuses), every 100 ms.
func (b *bench) waitNodeEmpty(nodeID string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	collected := false
	for time.Now().Before(deadline) {
		resp, err := b.do(http.MethodGet, "/v1/node/"+nodeID+"/allocations/changes?compact=true", nil)
		if err != nil {
			return err
		}
		var changes struct {
			Changed []struct{ ClientStatus string }
		}
		err = json.NewDecoder(resp.Body).Decode(&changes)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(changes.Changed) == 0 {
			return nil
		}
		live := 0
		for _, a := range changes.Changed {
			switch a.ClientStatus {
			case "complete", "failed", "lost":
			default:
				live++
			}
		}
		if live == 0 && !collected {
			resp, err := b.do(http.MethodPut, "/v1/system/gc", nil)
			if err != nil {
				return err
			}
			resp.Body.Close()
			collected = true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("node %s still lists allocations after %s", nodeID, limit)
}

// lastCreated is the latest CreateTime of the allocations of the jobs
// whose IDs start with prefix (one read of every allocation's stub, after
// the measured phase).
func (b *bench) lastCreated(prefix string) (time.Time, error) {
	resp, err := b.do(http.MethodGet, "/v1/allocations?namespace=*&prefix=&filter="+url.QueryEscape(`JobID matches "^`+prefix+`"`), nil)
	if err != nil {
		return time.Time{}, err
	}
	defer resp.Body.Close()
	var stubs []struct {
		JobID      string
		CreateTime int64
	}
	if err := json.NewDecoder(resp.Body).Decode(&stubs); err != nil {
		return time.Time{}, err
	}
	var last int64
	for _, a := range stubs {
		if strings.HasPrefix(a.JobID, prefix) {
			last = max(last, a.CreateTime)
		}
	}
	if last == 0 {
		return time.Time{}, fmt.Errorf("no allocation of %s*", prefix)
	}
	return time.Unix(0, last), nil
}

// countTimeline reads the job's allocations once and tells where the
// time from start (its register) to all running went: when the servers
// placed them (CreateTime, the plan's clock), when the client took each
// (its Received event), started each task (Started), and when the
// servers recorded the client's report of it (ModifyTime, the report's
// clock before it is written), as first, median and last in ms.
func (b *bench) countTimeline(jobID string, start time.Time) (string, error) {
	resp, err := b.do(http.MethodGet, "/v1/job/"+jobID+"/allocations", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var stubs []struct {
		CreateTime, ModifyTime int64
		TaskStates             map[string]struct {
			Events []struct {
				Type string
				Time int64
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&stubs); err != nil {
		return "", err
	}
	if len(stubs) == 0 {
		return "", fmt.Errorf("job %s has no allocations", jobID)
	}
	var placed, received, started, reported []int64
	for _, a := range stubs {
		placed = append(placed, a.CreateTime)
		reported = append(reported, a.ModifyTime)
		for _, ts := range a.TaskStates {
			for _, e := range ts.Events {
				switch e.Type {
				case "Received":
					received = append(received, e.Time)
				case "Started":
					started = append(started, e.Time)
				}
			}
		}
	}
	span := func(name string, ts []int64) string {
		if len(ts) == 0 {
			return name + " -"
		}
		slices.Sort(ts)
		ms := func(ns int64) string { return strconv.FormatInt(time.Unix(0, ns).Sub(start).Milliseconds(), 10) }
		return fmt.Sprintf("%s %s/%s/%s", name, ms(ts[0]), ms(ts[len(ts)/2]), ms(ts[len(ts)-1]))
	}
	return strings.Join([]string{span("placed", placed), span("received", received), span("started", started), span("reported", reported)}, ", "), nil
}
