// Command sched-bench measures a running sched agent end to end, over HTTP,
// the way clients use it:
//
//   - register throughput: N distinct small jobs from C concurrent clients;
//   - read throughput: GET /v1/job/:id over K keep-alive connections;
//   - blocking-read wake-up latency: from a write's acknowledgement to the
//     response of a reader blocked on that job;
//   - resident memory of the agent once M jobs are registered;
//   - a client agent running mock allocations (client.go);
//   - a rolling update through a deployment (rollout.go).
//
// With -spawn it starts `BIN agent -dev` on free ports itself (and can read
// the agent's memory); otherwise it targets -address. It is a benchmark,
// not a test: it reports figures and never fails on them. An https://
// -address takes -ca-cert, -client-cert, -client-key and -tls-server-name.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schedhq/sched/http/api"
)

func main() {
	var (
		spawn     = flag.String("spawn", "", "path of a sched binary to start as `agent -dev` on free ports")
		address   = flag.String("address", "http://127.0.0.1:4646", "agent to measure when not spawning")
		jobs      = flag.Int("jobs", 5000, "jobs registered for the throughput figure")
		clients   = flag.Int("clients", 16, "concurrent registering clients")
		readConns = flag.Int("read-conns", 32, "connections for the read figure")
		readFor   = flag.Duration("read-for", 5*time.Second, "how long to measure reads")
		wakeups   = flag.Int("wakeups", 300, "blocking-read wake-ups to time")
		memJobs   = flag.Int("mem-jobs", 10000, "jobs registered in total before reading resident memory")
		scenario  = flag.String("scenario", "all", "api (register/read/wake-up/memory), placement, c1m (placement of 1,000 × 1,000 on 5,000 nodes), running, client, client-path (the real client's cost per allocation, not in all), rollout, dispatch, drivers, preempt (preempting evaluations on -nodes full nodes), queue (queue-order latency on -nodes full nodes), churn (half of -nodes nodes down then back), many-clients (-mc-clients real client agents), three-servers (a real three-server cluster and a leader kill), c2m (2,000,000 on 10,000 nodes), or all")
		preEvals  = flag.Int("preempt-evals", 100, "preempting evaluations of the preempt scenario")
		roCount   = flag.Int("rollout-count", 1000, "allocations of the rollout scenario's job")
		roPar     = flag.Int("rollout-max-parallel", 100, "update.max_parallel of the rollout scenario")
		roNodes   = flag.Int("rollout-nodes", 50, "simulated client nodes of the rollout scenario")
		dispatchN = flag.Int("dispatches", 10000, "dispatches of the dispatch scenario")
		clAllocs  = flag.Int("client-allocs", 1000, "mock allocations of the client scenario")
		cpRepeat  = flag.Int("cp-count-repeat", 0, "client-path: run the count job on the client this many more times and report the agent's CPU per run (median and spread), stopping it and waiting for the node to empty between runs")
		nodes     = flag.Int("nodes", 5000, "simulated nodes for the placement scenario")
		placeJobs = flag.Int("place-jobs", 100, "jobs of the placement scenario")
		perJob    = flag.Int("per-job", 1000, "allocations per job in the placement scenario")
		runJobs   = flag.Int("run-jobs", 2000, "one-allocation jobs of the running scenario")
		runNodes  = flag.Int("run-nodes", 50, "simulated client nodes of the running scenario")
		atScale   = flag.Bool("at-scale", true, "after the placement scenario, save and restore a snapshot and (with -spawn) restart the agent")
		profDir   = flag.String("profile-dir", "", "during the placement scenario, save CPU profiles (-profile-seconds long) and heap profiles of the agent here at 10%, 30%, 60% and 90% of the placements")
		profSecs  = flag.Int("profile-seconds", 10, "length of each CPU profile of -profile-dir, in seconds (a C1M step lasts 3-6 s on a fast machine)")
		selfProf  = flag.String("self-profile", "", "write sched-bench's own CPU profile to this file (what the measuring costs the machine)")
		agentHCL  = flag.String("agent-config", "", "with -spawn, HCL appended to the spawned agent's config file (e.g. 'server { num_schedulers = 4 }')")
		drvList   = flag.String("drivers", "docker,raw_exec,exec", "drivers of the drivers scenario")
		drvStarts = flag.Int("driver-starts", 20, "one-task starts per driver in the drivers scenario (p50 of them)")
		drvTasks  = flag.Int("driver-tasks", 100, "tasks per driver on one client-only agent in the drivers scenario (with -spawn)")
		drvImage  = flag.String("docker-image", "sched-test-busybox:1", "image of the drivers scenario's docker tasks (must be on the engine)")
		drvFloorK = flag.String("docker-floor-parallel", "4", "concurrencies (comma-separated) at which the drivers scenario's engine floor starts -driver-tasks containers straight through the Engine API; empty for none")
		churnJobs = flag.Int("churn-jobs", 1000, "jobs of the churn scenario (on -nodes nodes)")
		churnPer  = flag.Int("churn-per-job", 5, "allocations per job of the churn scenario")
		qBlocked  = flag.Int("queue-blocked", 1000, "blocked priority-50 jobs of the queue scenario")
		qRounds   = flag.Int("queue-rounds", 20, "rounds of the queue scenario (each: a priority-90 job blocks, room for one frees)")
		mcClients = flag.Int("mc-clients", 100, "client-only agents (real processes) of the many-clients scenario")
		mcAllocs  = flag.Int("mc-allocs", 10000, "mock allocations the many-clients scenario places over its clients")
		mcJobs    = flag.Int("mc-jobs", 10, "jobs the many-clients scenario's allocations are split into")
		mcServers = flag.Int("mc-servers", 1, "servers of the many-clients scenario: 1, or 3 (the three-servers scenario's cluster)")
		mcWindow  = flag.Duration("mc-window", 20*time.Second, "how long the many-clients scenario measures its idle cluster, before and after placing")
		tsFor     = flag.Duration("ts-for", 20*time.Second, "length of each write load of the three-servers scenario (the leader is killed a third into the second)")
		tsSerial  = flag.Int("ts-serial", 300, "serial registers through the leader and through a follower each (three-servers)")
		c2mNodes  = flag.Int("c2m-nodes", 10000, "simulated nodes of the c2m scenario")
		c2mJobs   = flag.Int("c2m-jobs", 2000, "jobs of the c2m scenario (of -c2m-per-job allocations each)")
		c2mPer    = flag.Int("c2m-per-job", 1000, "allocations per job of the c2m scenario")
		runID     = flag.String("run", strconv.FormatInt(time.Now().UnixNano()%1e6, 36), "prefix that keeps job IDs of this run distinct")
	)
	var tlsCfg api.TLSConfig
	flag.StringVar(&tlsCfg.CACert, "ca-cert", "", "CA of an https:// -address")
	flag.StringVar(&tlsCfg.ClientCert, "client-cert", "", "client certificate for an agent with verify_https_client")
	flag.StringVar(&tlsCfg.ClientKey, "client-key", "", "key of -client-cert")
	flag.StringVar(&tlsCfg.ServerName, "tls-server-name", "", "name the agent's certificate carries; default: the address's host")
	flag.Parse()

	if *selfProf != "" {
		f, err := os.Create(*selfProf)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if *scenario == "many-clients" || *scenario == "three-servers" {
		// manyclients.go, threeservers.go: they start their own servers
		// (and clients) from -spawn and stop them all on return.
		b := &bench{run: *runID, profileDir: *profDir, profileSeconds: max(*profSecs, 1),
			client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}}
		var err error
		if *scenario == "many-clients" {
			err = b.manyClients(*spawn, manyClientsConfig{clients: *mcClients, allocs: *mcAllocs, jobs: *mcJobs, servers: *mcServers, window: *mcWindow})
		} else {
			err = b.threeServers(*spawn, *clients, *tsSerial, *tsFor)
		}
		if err != nil {
			fatal(err)
		}
		return
	}
	pid := 0
	if *spawn != "" {
		addr, p, stop, err := spawnAgent(*spawn, *agentHCL)
		if err != nil {
			fatal(err)
		}
		defer stop()
		*address, pid = addr, p
	}
	b := &bench{addr: strings.TrimRight(*address, "/"), run: *runID, atScale: *atScale, profileDir: *profDir, profileSeconds: max(*profSecs, 1),
		countRepeat: *cpRepeat}
	tr := &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}
	if !tlsCfg.IsZero() {
		var err error
		if tr.TLSClientConfig, err = tlsCfg.Build(); err != nil {
			fatal(err)
		}
	}
	b.client = &http.Client{Transport: tr}

	fmt.Printf("sched-bench against %s\n", b.addr)
	if *scenario == "all" || *scenario == "client" {
		if err := b.clientScenario(*clAllocs, *spawn, pid); err != nil { // client.go
			fatal(err)
		}
	}
	if *scenario == "all" || *scenario == "running" {
		if err := b.running(*runNodes, *runJobs, *clients); err != nil {
			fatal(err)
		}
	}
	if *scenario == "all" || *scenario == "rollout" {
		if err := b.rollout(*roNodes, *roCount, *roPar, *clients); err != nil { // rollout.go
			fatal(err)
		}
	}
	if *scenario == "all" || *scenario == "dispatch" {
		if err := b.dispatch(*runNodes, *dispatchN, *clients, pid); err != nil {
			fatal(err)
		}
	}
	if *scenario == "client-path" { // clientpath.go; not in "all": its unplaceable jobs stay blocked
		if err := b.clientPath(*clAllocs, *runJobs, *clients, clientPathSerial, pid); err != nil {
			fatal(err)
		}
		return
	}
	if *scenario == "drivers" { // drivers.go; not in "all": it needs the engine and the image
		floorK, err := intList(*drvFloorK)
		if err != nil {
			fatal(fmt.Errorf("-docker-floor-parallel: %w", err))
		}
		if err := b.driversScenario(driversOptions{drivers: strings.Split(*drvList, ","), starts: *drvStarts, tasks: *drvTasks,
			image: *drvImage, bin: *spawn, floorParallel: floorK}); err != nil {
			fatal(err)
		}
		return
	}
	if *scenario == "all" || *scenario == "placement" {
		if err := b.placement(*nodes, *placeJobs, *perJob, *clients); err != nil {
			fatal(err)
		}
	}
	if *scenario == "preempt" { // preempt.go; not in "all"
		if err := b.preempt(*nodes, *preEvals, *clients); err != nil {
			fatal(err)
		}
		return
	}
	if *scenario == "queue" { // queue.go; not in "all"
		if err := b.queueScenario(*nodes, *qBlocked, *qRounds, *clients); err != nil {
			fatal(err)
		}
		return
	}
	if *scenario == "churn" { // churn.go; not in "all": it takes minutes of heartbeats
		if err := b.churn(*nodes, *churnJobs, *churnPer, *clients); err != nil {
			fatal(err)
		}
		return
	}
	if *scenario == "c1m" {
		// Nomad's C1M on one box: a million allocations, 5,000 nodes.
		if err := b.placement(5000, 1000, 1000, *clients); err != nil {
			fatal(err)
		}
		return
	}
	if *scenario == "c2m" { // c2m.go
		if err := b.c2m(*c2mNodes, *c2mJobs, *c2mPer, *clients); err != nil {
			fatal(err)
		}
		return
	}
	if *scenario != "all" && *scenario != "api" {
		return
	}
	n, dur := b.register(0, *jobs, *clients)
	fmt.Printf("register: %d jobs, %d clients: %.0f jobs/s (%v)\n", n, *clients, float64(n)/dur.Seconds(), dur.Round(time.Millisecond))

	reqs, rdur, rerr := b.reads(*readConns, *readFor, n)
	fmt.Printf("read: GET /v1/job/:id, %d connections: %.0f requests/s (%d requests, %d errors, %v)\n",
		*readConns, float64(reqs)/rdur.Seconds(), reqs, rerr, rdur.Round(time.Millisecond))

	lat, err := b.wakeups(*wakeups)
	if err != nil {
		fatal(err)
	}
	fmt.Printf("blocking-read wake-up after write ack (%d samples): p50 %v, p99 %v, max %v\n",
		len(lat), pct(lat, 50), pct(lat, 99), lat[len(lat)-1])

	if *memJobs > n {
		m, _ := b.register(n, *memJobs-n, *clients)
		n += m
	}
	if pid != 0 {
		rss, err := rssOf(pid)
		if err != nil {
			fatal(err)
		}
		fmt.Printf("memory: %d jobs registered: agent RSS %.1f MiB\n", n, float64(rss)/(1<<20))
	} else {
		fmt.Printf("memory: %d jobs registered (run with -spawn to read the agent's RSS)\n", n)
	}
}

type bench struct {
	addr   string
	run    string
	client *http.Client
	// atScale runs atScale after the placement scenario.
	atScale bool
	// profileDir, when set, is where the placement scenario saves
	// profiles of the agent.
	profileDir string
	// profileSeconds is the length of each CPU profile saved into
	// profileDir.
	profileSeconds int
	// figures, when set, receives the placement scenario's figures
	// (c2m.go).
	figures *placementFigures
	// countRepeat is how many more times client-path runs its count job
	// on the client (-cp-count-repeat).
	countRepeat int
}

func (b *bench) jobID(i int) string { return fmt.Sprintf("bench-%s-%06d", b.run, i) }

// jobBody is a small, realistic batch job in the register request shape.
func (b *bench) jobBody(i int, meta string) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": b.jobID(i), "Type": "batch", "Meta": map[string]string{"m": meta},
		"TaskGroups": []any{map[string]any{"Name": "g", "Count": 1, "Tasks": []any{map[string]any{
			"Name": "t", "Driver": "mock", "Config": map[string]any{"run_for": "10s"},
			"Resources": map[string]any{"CPU": 100, "MemoryMB": 64},
		}}}},
	}})
	return body
}

func (b *bench) do(method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, b.addr+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	resp.Body = drainOnClose{resp.Body}
	return resp, nil
}

// drainOnClose reads what is left of a response body before closing it,
// as the Go client (http/api) does: net/http reuses a connection only
// after its response was read to the end. The register loops closed the
// answer unread, so every register dialled a new connection, and the
// agent accepted one: a cost of the benchmark, not of the agent's work,
// that real clients do not pay.
type drainOnClose struct{ io.ReadCloser }

// Close drains the body (at most 1 MiB more) and closes it.
func (d drainOnClose) Close() error {
	_, _ = io.Copy(io.Discard, io.LimitReader(d.ReadCloser, 1<<20))
	return d.ReadCloser.Close()
}

// register registers jobs [from, from+n) from c clients and returns how
// many succeeded and how long it took.
func (b *bench) register(from, n, c int) (int, time.Duration) {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = b.jobBody(from+i, "v0")
	}
	var next, ok atomic.Int64
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
				resp, err := b.do(http.MethodPost, "/v1/jobs", bodies[i])
				if err != nil {
					fmt.Fprintln(os.Stderr, "register:", err)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(ok.Load()), time.Since(start)
}

// reads issues GET /v1/job/:id over conns connections for d.
func (b *bench) reads(conns int, d time.Duration, jobs int) (int64, time.Duration, int64) {
	var count, errs atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	start := time.Now()
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(deadline); i += conns {
				resp, err := b.do(http.MethodGet, "/v1/job/"+b.jobID(i%max(jobs, 1)), nil)
				if err != nil {
					errs.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	return count.Load(), time.Since(start), errs.Load()
}

// wakeups times, n times over, a reader blocked on GET /v1/job/:id?index=
// against a writer updating that job: the figure is the reader's response
// time minus the moment the writer's register was acknowledged (zero when
// the reader answered first).
func (b *bench) wakeups(n int) ([]time.Duration, error) {
	id := b.jobID(999999)
	resp, err := b.do(http.MethodPost, "/v1/jobs", b.jobBody(999999, "w"))
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	var out []time.Duration
	for i := range n {
		r, err := b.do(http.MethodGet, "/v1/job/"+id, nil)
		if err != nil {
			return nil, err
		}
		r.Body.Close()
		index := r.Header.Get("X-Sched-Index")

		woke := make(chan time.Time, 1)
		errc := make(chan error, 1)
		go func() {
			r, err := b.do(http.MethodGet, "/v1/job/"+id+"?wait=30s&index="+index, nil)
			if err != nil {
				errc <- err
				return
			}
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			woke <- time.Now()
		}()
		// Give the reader time to park on its watch set before writing;
		// this is a benchmark's pacing, not a wait for state.
		time.Sleep(3 * time.Millisecond)
		w, err := b.do(http.MethodPost, "/v1/jobs", b.jobBody(999999, fmt.Sprint("w", i)))
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, w.Body)
		w.Body.Close()
		acked := time.Now()
		select {
		case t := <-woke:
			out = append(out, max(0, t.Sub(acked)))
		case err := <-errc:
			return nil, err
		case <-time.After(30 * time.Second):
			return nil, errors.New("blocked reader never woke")
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// spawnedAgent is the `agent -dev` sched-bench started (-spawn): its
// data dir survives a restart.
type spawnedAgent struct {
	bin, dir, cfg, addr string
	cmd                 *exec.Cmd
}

// spawned is the agent of -spawn, nil against -address.
var spawned *spawnedAgent

// spawnAgent starts `bin agent -dev` on free ports and waits for it to
// serve.
func spawnAgent(bin, extraHCL string) (string, int, func(), error) {
	dir, err := os.MkdirTemp("", "sched-bench-")
	if err != nil {
		return "", 0, nil, err
	}
	ports := make([]int, 3)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", 0, nil, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	a := &spawnedAgent{bin: bin, dir: dir, cfg: filepath.Join(dir, "bench.hcl"), addr: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	os.WriteFile(a.cfg, []byte(fmt.Sprintf("data_dir = %q\nlog_level = \"warn\"\nports {\n http = %d\n raft = %d\n gossip = %d\n}\n%s\n",
		filepath.Join(dir, "data"), ports[0], ports[1], ports[2], extraHCL)), 0o600)
	stop := func() {
		a.stop()
		os.RemoveAll(dir)
	}
	if _, err := a.start(30 * time.Second); err != nil {
		stop()
		return "", 0, nil, err
	}
	spawned = a
	return a.addr, a.cmd.Process.Pid, stop, nil
}

// start runs the agent and waits until it serves a consistent read,
// returning how long that took.
func (a *spawnedAgent) start(limit time.Duration) (time.Duration, error) {
	began := time.Now()
	a.cmd = exec.Command(a.bin, "agent", "-dev", "-config", a.cfg)
	a.cmd.Stdout, a.cmd.Stderr = os.Stderr, os.Stderr
	// The kernel kills the agent if sched-bench dies first (a signal, a
	// fatal error's os.Exit skips the deferred stop).
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get(a.addr + "/v1/jobs?prefix=none"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(began), nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("spawned agent did not serve a consistent read within %v", limit)
}

// stop ends the agent with SIGTERM and waits for it.
// kill stops the agent as a crash does (SIGKILL): no snapshot at
// shutdown, so the next start restores the last snapshot and replays the
// log written since.
func (a *spawnedAgent) kill() {
	if a.cmd != nil && a.cmd.Process != nil {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	}
}

func (a *spawnedAgent) stop() {
	if a.cmd != nil && a.cmd.Process != nil {
		a.cmd.Process.Signal(syscall.SIGTERM)
		a.cmd.Wait()
	}
}

// rssOf reads a process's resident set size from /proc.
func rssOf(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux everywhere).
const clockTicks = 100

// cpuOf is the CPU time (user and system) process pid has used.
func cpuOf(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return statCPU(string(data))
}

// statCPU reads utime and stime from a /proc/PID/stat line. The command
// name, in parentheses, may hold spaces: the fields are counted after its
// closing parenthesis (state is field 3, utime 14, stime 15).
func statCPU(line string) (time.Duration, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc stat")
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 13 {
		return 0, errors.New("too few fields in /proc stat")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat CPU time %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "sched-bench:", err)
	// os.Exit skips main's deferred stop: the spawned agent and its data
	// dir (gigabytes after c1m or c2m) go here.
	if spawned != nil {
		spawned.kill()
		os.RemoveAll(spawned.dir)
	}
	os.Exit(1)
}
