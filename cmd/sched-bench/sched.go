package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedhq/sched/state"
)

// simNode is a node the benchmark registers and keeps alive over HTTP, as a
// client agent would, without running anything.
type simNode struct {
	ID  string
	TTL time.Duration
}

// registerNodes registers n simulated nodes from c clients.
func (b *bench) registerNodes(n, c int) ([]*simNode, time.Duration, error) {
	nodes := make([]*simNode, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				id := state.NewID()
				body, _ := json.Marshal(map[string]any{"Node": map[string]any{
					"ID": id, "Name": fmt.Sprintf("sim-%05d", i), "Datacenter": "dc1",
					"NodeClass":     fmt.Sprintf("class-%d", i%8),
					"Attributes":    map[string]string{"kernel.name": "linux", "cpu.arch": "amd64"},
					"NodeResources": map[string]any{"CPU": 16000, "MemoryMB": 32768, "DiskMB": 200000},
					"Drivers":       map[string]any{"mock": map[string]any{"Detected": true, "Healthy": true}},
				}})
				resp, err := b.do(http.MethodPost, "/v1/node/register", body)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				var out struct{ HeartbeatTTL time.Duration }
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				nodes[i] = &simNode{ID: id, TTL: out.HeartbeatTTL}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return nil, 0, err
	}
	return nodes, time.Since(start), nil
}

// heartbeat keeps nodes alive until ctx ends, each at half its TTL.
func (b *bench) heartbeat(ctx context.Context, nodes []*simNode) {
	for _, n := range nodes {
		go func() {
			ttl := n.TTL
			if ttl <= 0 {
				ttl = 10 * time.Second
			}
			t := time.NewTicker(ttl / 2)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if resp, err := b.do(http.MethodPut, "/v1/node/"+n.ID+"/heartbeat", []byte("{}")); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}
		}()
	}
}

// serviceJob is a job of count allocations of a tiny mock task.
func (b *bench) serviceJob(id string, count int) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "service", "Datacenters": []string{"dc1"},
		"TaskGroups": []any{map[string]any{"Name": "g", "Count": count, "Tasks": []any{map[string]any{
			"Name": "t", "Driver": "mock", "Config": map[string]any{"run_for": "1h"},
			"Resources": map[string]any{"CPU": 20, "MemoryMB": 16},
		}}}},
	}})
	return body
}

// jobCounts sums, over the jobs with prefix, the summary counts: allocations
// placed (any client status) and running. It blocks on the list's index.
func (b *bench) jobCounts(prefix string, index string) (placed, running int, next string, err error) {
	path := "/v1/jobs?prefix=" + prefix
	if index != "" {
		path += "&wait=5s&index=" + index
	}
	resp, err := b.do(http.MethodGet, path, nil)
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	var list []struct {
		JobSummary *struct {
			Summary map[string]struct{ Starting, Running, Complete, Failed, Lost int }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, 0, "", err
	}
	for _, j := range list {
		if j.JobSummary == nil {
			continue
		}
		for _, s := range j.JobSummary.Summary {
			placed += s.Starting + s.Running + s.Complete + s.Failed + s.Lost
			running += s.Running
		}
	}
	return placed, running, resp.Header.Get("X-Sched-Index"), nil
}

// waitCounts blocks until done(placed, running) holds or the limit passes,
// returning when it held. It lists the jobs at most once every interval.
func (b *bench) waitCounts(prefix string, limit, every time.Duration, done func(placed, running int) bool) (time.Time, error) {
	deadline := time.Now().Add(limit)
	index := ""
	var polled, failing time.Time
	for time.Now().Before(deadline) {
		// At most one list every interval: listing every job at every
		// placement would make the measuring a load of its own on the
		// agent; the interval is the precision of the times reported.
		if wait := every - time.Since(polled); wait > 0 {
			time.Sleep(wait)
		}
		polled = time.Now()
		placed, running, next, err := b.jobCounts(prefix, index)
		if err != nil {
			// A busy agent may fail one read (a consistent read's barrier
			// timing out while it writes a multi-GB snapshot): asked
			// again until a minute of failures in a row.
			if failing.IsZero() {
				failing = time.Now()
			}
			if time.Since(failing) > time.Minute {
				return time.Time{}, err
			}
			fmt.Fprintln(os.Stderr, "sched-bench: counting placements (asked again):", err)
			continue
		}
		failing = time.Time{}
		if done(placed, running) {
			return time.Now(), nil
		}
		index = next
	}
	placed, running, _, _ := b.jobCounts(prefix, "")
	return time.Time{}, fmt.Errorf("not done after %v: %d placed, %d running", limit, placed, running)
}

// placement registers nodes, then jobs totalling allocs allocations, and
// reports placements committed per second until the last one is placed.
func (b *bench) placement(nodes, jobs, perJob, clients int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, dur, err := b.registerNodesAlive(ctx, nodes, clients) // c2m.go
	if err != nil {
		return err
	}
	fmt.Printf("placement: %d nodes registered over HTTP in %v (%.0f/s)\n", nodes, dur.Round(time.Millisecond), float64(nodes)/dur.Seconds())

	prefix := "place-" + b.run + "-"
	start := time.Now()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(clients, jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= jobs {
					return
				}
				if resp, err := b.do(http.MethodPost, "/v1/jobs", b.serviceJob(prefix+strconv.Itoa(i), perJob)); err != nil {
					fmt.Fprintln(os.Stderr, "register:", err)
				} else {
					resp.Body.Close()
				}
			}
		}()
	}
	// The jobs are counted while they are still being registered: the
	// registrations compete with the placements they start, and the
	// curve is measured from the first.
	go func() {
		wg.Wait()
		fmt.Printf("placement: %d jobs registered after %v\n", jobs, time.Since(start).Round(time.Millisecond))
	}()
	total := jobs * perJob
	// A line per step of placements (100,000, or a tenth of a smaller
	// run) with the rate over that step: a flat curve is the goal.
	step := 100_000
	if total < 10*step {
		step = max(total/10, 1)
	}
	nextStep, lastMark, lastCount := step, start, 0
	var rates []float64
	// With -spawn, the agent's CPU time per placement over each step too:
	// unlike the rate, it does not move with what else the machine runs,
	// so it shows whether the cost per placement stays flat.
	var cpuPer []time.Duration
	lastCPU := time.Duration(-1)
	if spawned != nil {
		if c, err := cpuOf(spawned.cmd.Process.Pid); err == nil {
			lastCPU = c
		}
	}
	// The snapshots the agent finished writing, per step: a step that
	// pays for one is slower for it.
	lastSnaps, _, _, _ := b.snapshotStats()
	profileAt := []int{total / 10, total * 3 / 10, total * 6 / 10, total * 9 / 10}
	var profiles sync.WaitGroup
	defer profiles.Wait()
	// One list every 100 ms: a list of a thousand jobs costs the agent
	// ~6 ms, so at the 20 ms of the other scenarios the measuring took
	// some 15% of a two-core agent, a cost per second that weighed more
	// on every placement the slower the step (issue 19's curve). Steps
	// last seconds: 100 ms is precise enough.
	last, err := b.waitCounts(prefix, 30*time.Minute, 100*time.Millisecond, func(placed, _ int) bool {
		for b.profileDir != "" && len(profileAt) > 0 && placed >= profileAt[0] && placed < total {
			profiles.Add(1)
			go b.profile(&profiles, placed)
			profileAt = profileAt[1:]
		}
		for placed >= nextStep && nextStep <= total {
			now := time.Now()
			r := float64(placed-lastCount) / now.Sub(lastMark).Seconds()
			rates = append(rates, r)
			cpuNote := ""
			if lastCPU >= 0 {
				if c, err := cpuOf(spawned.cmd.Process.Pid); err == nil {
					per := (c - lastCPU) / time.Duration(max(placed-lastCount, 1))
					cpuPer = append(cpuPer, per)
					cpuNote = fmt.Sprintf(", agent CPU %v per placement", per.Round(100*time.Nanosecond))
					lastCPU = c
				}
			}
			if n, secs, size, err := b.snapshotStats(); err == nil && n > lastSnaps {
				cpuNote += fmt.Sprintf(", %d snapshot(s) written (the last %.0f MB in %.1fs)", n-lastSnaps, float64(size)/1e6, secs)
				lastSnaps = n
			}
			fmt.Printf("placement: %7d/%d placed at %8v: %6.0f placements/s over the last %d%s\n",
				placed, total, now.Sub(start).Round(time.Millisecond), r, placed-lastCount, cpuNote)
			lastMark, lastCount = now, placed
			nextStep = (placed/step + 1) * step
		}
		return placed >= total
	})
	if err != nil {
		return err
	}
	took := last.Sub(start)
	if b.figures != nil { // c2m.go
		b.figures.total, b.figures.took = total, took
		if len(rates) >= 2 {
			b.figures.firstRate, b.figures.lastRate = rates[0], rates[len(rates)-1]
		}
	}
	fmt.Printf("placement: %d allocations (%d jobs × %d) on %d nodes: last placed after %v: %.0f placements/s\n",
		total, jobs, perJob, nodes, took.Round(time.Millisecond), float64(total)/took.Seconds())
	if len(rates) >= 2 {
		fmt.Printf("placement: last step at %.0f%% of the first step's rate\n", 100*rates[len(rates)-1]/rates[0])
	}
	if len(cpuPer) >= 2 && len(cpuPer) == len(rates) {
		first, last := cpuPer[0], cpuPer[len(cpuPer)-1]
		fmt.Printf("placement: agent CPU per placement %v in the first step, %v in the last (%.0f%%)\n",
			first.Round(100*time.Nanosecond), last.Round(100*time.Nanosecond), 100*float64(last)/float64(max(first, 1)))
	}
	profiles.Wait()
	if spawned != nil {
		if rss, err := rssOf(spawned.cmd.Process.Pid); err == nil {
			fmt.Printf("placement: agent RSS %.1f MiB with %d allocations: %.2f KiB per allocation (dev agent: server and client)\n",
				float64(rss)/(1<<20), total, float64(rss)/1024/float64(total))
		}
		// Once placing is over the agent returns its heap's free headroom
		// to the system (agent/memory.go): the steady state.
		if rss, after, err := settledRSS(spawned.cmd.Process.Pid, 60*time.Second); err == nil {
			if b.figures != nil {
				b.figures.settledRSS = rss
			}
			fmt.Printf("placement: agent RSS %.1f MiB %v after the last placement: %.2f KiB per allocation (settled)\n",
				float64(rss)/(1<<20), after.Round(time.Second), float64(rss)/1024/float64(total))
		}
	}
	if !b.atScale {
		return nil
	}
	return b.atScaleReport(total)
}

// snapshotStats reads how many snapshots the agent has written since it
// started, and how long the newest took to write and its size.
func (b *bench) snapshotStats() (n int, secs float64, size int64, err error) {
	resp, err := b.do(http.MethodGet, "/v1/agent/self", nil)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	var self struct {
		Stats struct{ Raft map[string]string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&self); err != nil {
		return 0, 0, 0, err
	}
	r := self.Stats.Raft
	n, err = strconv.Atoi(r["snapshots_persisted"])
	if err != nil {
		return 0, 0, 0, fmt.Errorf("agent stats: snapshots_persisted %q: %w", r["snapshots_persisted"], err)
	}
	secs, _ = strconv.ParseFloat(r["last_persist_seconds"], 64)
	size, _ = strconv.ParseInt(r["last_persist_bytes"], 10, 64)
	return n, secs, size, nil
}

// settledRSS reads a process's RSS every second for up to limit and
// returns the lowest it saw and when, stopping early once it has fallen by
// a fifth or more and held for 5 s.
func settledRSS(pid int, limit time.Duration) (int64, time.Duration, error) {
	start := time.Now()
	first, err := rssOf(pid)
	if err != nil {
		return 0, 0, err
	}
	low, at := first, time.Duration(0)
	for time.Since(start) < limit {
		time.Sleep(time.Second)
		rss, err := rssOf(pid)
		if err != nil {
			return 0, 0, err
		}
		if rss < low {
			low, at = rss, time.Since(start)
		}
		if low < first*4/5 && time.Since(start)-at >= 5*time.Second {
			break
		}
	}
	return low, at, nil
}

// profile saves a CPU profile (b.profileSeconds long) and then a heap
// profile of the agent into the profile directory, named after placed.
func (b *bench) profile(wg *sync.WaitGroup, placed int) {
	defer wg.Done()
	for _, p := range []struct{ path, name string }{
		{fmt.Sprintf("/v1/agent/pprof/profile?seconds=%d", b.profileSeconds), "cpu"},
		{"/v1/agent/pprof/heap", "heap"},
	} {
		resp, err := b.do(http.MethodGet, p.path, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		file := filepath.Join(b.profileDir, fmt.Sprintf("%s-%07d.pprof", p.name, placed))
		f, err := os.Create(file)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			f.Close()
		}
		resp.Body.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		fmt.Printf("placement: %s profile at %d placed: %s\n", p.name, placed, file)
	}
}

// atScaleReport reports, once the placement scenario has placed total
// allocations: (with -spawn) the time a restart after a crash takes to
// serve a consistent read again, the size and
// time of a snapshot saved and restored through the API, and (with
// -spawn) the time a restart takes to serve a consistent read again.
func (b *bench) atScaleReport(total int) error {
	if spawned != nil {
		// A crash first: the restart restores the last snapshot Raft took
		// on its own and replays every entry since.
		spawned.kill()
		took, err := spawned.start(10 * time.Minute)
		if err != nil {
			return err
		}
		if b.figures != nil {
			b.figures.restart = took
		}
		fmt.Printf("placement: restart after SIGKILL with %d allocations (last snapshot + log replay): serving consistent reads after %v\n", total, took.Round(time.Millisecond))
	}
	began := time.Now()
	resp, err := b.do(http.MethodGet, "/v1/operator/snapshot", nil)
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	snap, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	saved := time.Since(began)
	began = time.Now()
	if resp, err := b.do(http.MethodPut, "/v1/operator/snapshot", snap); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	} else {
		resp.Body.Close()
	}
	fmt.Printf("placement: snapshot %.1f MiB (gzip): saved in %v, restored in %v\n",
		float64(len(snap))/(1<<20), saved.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	if spawned == nil {
		return nil
	}
	// A restore builds the new store beside the old one; the agent gives
	// the old one's memory back once it is quiet.
	if rss, after, err := settledRSS(spawned.cmd.Process.Pid, 60*time.Second); err == nil {
		fmt.Printf("placement: agent RSS %.1f MiB %v after the snapshot restore: %.2f KiB per allocation (settled)\n",
			float64(rss)/(1<<20), after.Round(time.Second), float64(rss)/1024/float64(total))
	}
	spawned.stop()
	took, err := spawned.start(10 * time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("placement: restart after SIGTERM with %d allocations: serving consistent reads after %v\n", total, took.Round(time.Millisecond))
	return nil
}

// running registers nodes that act as clients (they learn their
// allocations by blocking query and report them running), then jobs of one
// allocation each from clients concurrent writers, and reports the time
// until the last allocation is running.
func (b *bench) running(nodes, jobs, clients int) error {
	ns, _, err := b.registerNodes(nodes, clients)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.heartbeat(ctx, ns)

	prefix := "run-" + b.run + "-"
	// The tally of allocations running, kept as they start rather than
	// by listing every job every few milliseconds: the simulated clients
	// count what they report, and the other nodes (the dev agent's own
	// client) are followed through their allocation changes.
	tally := newRunTally()
	others, err := b.nodes()
	if err != nil {
		return err
	}
	for _, n := range others {
		if !strings.HasPrefix(n.Name, "sim-") {
			go b.followRunning(ctx, n.ID, prefix, tally)
		}
	}
	for _, n := range ns {
		go b.simulateClient(ctx, n, tally)
	}

	// The bodies are made before the clock starts, as the api
	// scenario's are: what is timed is the agent's work.
	bodies := make([][]byte, jobs)
	for i := range bodies {
		bodies[i] = b.serviceJob(prefix+strconv.Itoa(i), 1)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= jobs {
					return
				}
				if resp, err := b.do(http.MethodPost, "/v1/jobs", bodies[i]); err != nil {
					fmt.Fprintln(os.Stderr, "register:", err)
				} else {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	registered := time.Since(start)
	last, err := tally.wait(jobs, 5*time.Minute)
	if err != nil {
		return err
	}
	// The servers' job summaries must agree with the tally.
	if _, running, _, err := b.jobCounts(prefix, ""); err != nil {
		return err
	} else if running < jobs {
		return fmt.Errorf("the clients reported %d allocations running, the job summaries count %d of %d", jobs, running, jobs)
	}
	fmt.Printf("running: %d one-alloc jobs from %d clients on %d simulated nodes: registered in %v, last running after %v\n",
		jobs, clients, nodes, registered.Round(time.Millisecond), last.Sub(start).Round(time.Millisecond))
	return nil
}

// simulateClient follows a node's allocations by blocking query and
// reports each new one running, in one batch per wake-up, as a client
// agent does: it reads them as changes since its previous answer
// (/allocations/changes?server_changes=true), so each allocation is read whole once per
// change, and with stale=true, as a client agent does (client/watcher.go):
// no read barrier through the leader for every wake-up.
func (b *bench) simulateClient(ctx context.Context, n *simNode, tally *runTally) {
	index := "0"
	reported := map[string]bool{}
	for ctx.Err() == nil {
		resp, err := b.do(http.MethodGet, "/v1/node/"+n.ID+"/allocations/changes?server_changes=true&stale=true&wait=30s&index="+index+"&since="+index, nil)
		if err != nil {
			return
		}
		var changes struct {
			Changed []struct{ ID, DesiredStatus, ClientStatus string }
		}
		json.NewDecoder(resp.Body).Decode(&changes)
		resp.Body.Close()
		index = resp.Header.Get("X-Sched-Index")
		var updates []map[string]string
		for _, a := range changes.Changed {
			if a.DesiredStatus == "run" && a.ClientStatus == "pending" && !reported[a.ID] {
				reported[a.ID] = true
				updates = append(updates, map[string]string{"ID": a.ID, "ClientStatus": "running"})
			}
		}
		if len(updates) == 0 {
			continue
		}
		body, _ := json.Marshal(map[string]any{"Allocs": updates})
		if r, err := b.do(http.MethodPost, "/v1/node/"+n.ID+"/allocations", body); err == nil {
			r.Body.Close()
			// Applied when the POST answers: the servers hold them
			// running now.
			tally.add(len(updates))
		}
	}
}

// runTally counts the allocations of the running scenario that the
// servers hold as running.
type runTally struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced at every change
	// last is the latest time the servers recorded for a counted
	// change (noteAt), when the follower knows it.
	last time.Time
}

// noteAt records that a counted change was recorded by the servers at
// at.
func (t *runTally) noteAt(at time.Time) {
	t.mu.Lock()
	if at.After(t.last) {
		t.last = at
	}
	t.mu.Unlock()
}

// lastAt is the latest time noteAt was given (zero if never).
func (t *runTally) lastAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func newRunTally() *runTally { return &runTally{changed: make(chan struct{})} }

// add changes the count by d.
func (t *runTally) add(d int) {
	if d == 0 {
		return
	}
	t.mu.Lock()
	t.n += d
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// wait returns when the count reached n, or an error after limit.
func (t *runTally) wait(n int, limit time.Duration) (time.Time, error) {
	deadline := time.After(limit)
	for {
		t.mu.Lock()
		got, changed := t.n, t.changed
		t.mu.Unlock()
		if got >= n {
			return time.Now(), nil
		}
		select {
		case <-changed:
		case <-deadline:
			return time.Time{}, fmt.Errorf("not done after %v: %d of %d running", limit, got, n)
		}
	}
}

// followRunning follows a real client's node by blocking query on its
// allocations' changes and keeps tally of those of jobs with prefix that
// it reports running.
func (b *bench) followRunning(ctx context.Context, nodeID, prefix string, tally *runTally) {
	index := "0"
	running := map[string]bool{}
	for ctx.Err() == nil {
		resp, err := b.do(http.MethodGet, "/v1/node/"+nodeID+"/allocations/changes?wait=30s&index="+index+"&since="+index, nil)
		if err != nil {
			// Asked again from the same index: a read that failed
			// must not leave the tally short for the rest of the run.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var changes struct {
			Changed []struct{ ID, JobID, ClientStatus string }
		}
		err = json.NewDecoder(resp.Body).Decode(&changes)
		resp.Body.Close()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		index = resp.Header.Get("X-Sched-Index")
		d := 0
		for _, a := range changes.Changed {
			if !strings.HasPrefix(a.JobID, prefix) {
				continue
			}
			now := a.ClientStatus == "running"
			if now != running[a.ID] {
				running[a.ID] = now
				if now {
					d++
				} else {
					d--
				}
			}
		}
		tally.add(d)
	}
}
