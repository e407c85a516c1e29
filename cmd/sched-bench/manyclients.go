package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The many-clients scenario runs N client-only agents as real `sched
// agent` processes, each on its own loopback address (127.0.0.2,
// 127.0.0.3, …; distinct ports on 127.0.0.1 where those are not
// routable), against one server or (-mc-servers 3) a three-server cluster
// it starts itself, and places -mc-allocs mock allocations over them
// (the spread algorithm, -mc-jobs jobs). It reports:
//
//   - with every client registered and idle, over -mc-window: the
//     servers' CPU (share of one core) and RSS, heartbeats per second (the
//     leader's count, which includes the ones followers forward) and
//     blocking reads answered per second (every server's, each serves its
//     own) with the number waiting;
//   - register -> all running, with the same figures over the placement;
//   - the same idle figures once all run;
//   - the clients' own CPU and RSS, summed.
//
// With -profile-dir it saves the leader's CPU and heap profiles over the
// idle window and over the placement.

// manyClientsConfig holds the scenario's flags.
type manyClientsConfig struct {
	clients, allocs, jobs, servers int
	window                         time.Duration
}

// validate bounds the flags before anything starts.
func (c manyClientsConfig) validate() error {
	var errs []error
	if c.clients < 1 || c.clients > 2000 {
		errs = append(errs, fmt.Errorf("-mc-clients %d: must be 1 to 2000", c.clients))
	}
	if c.jobs < 1 || c.allocs < c.jobs {
		errs = append(errs, fmt.Errorf("-mc-jobs %d, -mc-allocs %d: need at least one job and one allocation per job", c.jobs, c.allocs))
	}
	if c.allocs > 1_000_000 {
		errs = append(errs, fmt.Errorf("-mc-allocs %d: at most 1,000,000", c.allocs))
	}
	if c.servers != 1 && c.servers != 3 {
		errs = append(errs, fmt.Errorf("-mc-servers %d: 1 or 3", c.servers))
	}
	if c.window < time.Second {
		errs = append(errs, fmt.Errorf("-mc-window %v: at least 1s", c.window))
	}
	return errors.Join(errs...)
}

// perJob splits allocs over jobs: the count of job i.
func perJob(allocs, jobs, i int) int {
	n := allocs / jobs
	if i < allocs%jobs {
		n++
	}
	return n
}

// clientIP is the loopback address of client i: 127.0.0.2 upwards, 250
// per third octet, never 127.0.0.1 (the servers').
func clientIP(i int) string {
	return fmt.Sprintf("127.0.%d.%d", i/250, i%250+2)
}

// loopbackRoutable reports whether 127.0.0.2 can be bound and reached
// from another loopback address, as a client agent's HTTP port must be.
func loopbackRoutable() bool {
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		return false
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}, Timeout: time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// clientHCL is a client-only agent's configuration: its HTTP port on ip,
// the bench node class, the mock driver and the servers' HTTP addresses.
func clientHCL(name, dataDir, ip string, httpPort int, servers []string) string {
	quoted := make([]string, len(servers))
	for i, s := range servers {
		quoted[i] = strconv.Quote(s)
	}
	return fmt.Sprintf(`name      = %q
data_dir  = %q
bind_addr = %q
log_level = "warn"
ports {
  http = %d
}
client {
  enabled    = true
  servers    = [%s]
  node_class = %q
}
`, name, dataDir, ip, httpPort, strings.Join(quoted, ", "), manyClientsClass)
}

// manyClientsClass is the node class of the scenario's clients; its jobs
// are constrained to it.
const manyClientsClass = "bench-many"

// spreadJob is a service job of count mock allocations that run until
// stopped, on the scenario's clients.
func spreadJob(id string, count int) []byte {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{
		"ID": id, "Type": "service", "Datacenters": []string{"*"},
		"Constraints": []any{map[string]any{"LTarget": "${node.class}", "RTarget": manyClientsClass, "Operand": "="}},
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

// promSample is one sample of the Prometheus text format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseProm reads the samples of a Prometheus text exposition; comment
// lines and lines it cannot read are skipped.
func parseProm(text string) []promSample {
	var out []promSample
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		var s promSample
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			s.name, s.labels, rest = line[:i], parseLabels(line[i+1:j]), line[j+1:]
		} else if i >= 0 {
			s.name, rest = line[:i], line[i:]
		} else {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// parseLabels reads `a="x",b="y"` (values may hold escaped quotes and
// commas).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return out
		}
		key := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(s[i])
		}
		out[key] = val.String()
		s = strings.TrimLeft(s[min(i+1, len(s)):], ", ")
	}
	return out
}

// promSum adds the values of the samples named name whose labels pick
// accepts (nil: all).
func promSum(samples []promSample, name string, pick func(map[string]string) bool) float64 {
	var sum float64
	for _, s := range samples {
		if s.name == name && (pick == nil || pick(s.labels)) {
			sum += s.value
		}
	}
	return sum
}

// promAt reads server base's metrics.
func (b *bench) promAt(base string) ([]promSample, error) {
	resp, err := b.doAt(base, http.MethodGet, "/v1/metrics?format=prometheus", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	return parseProm(string(text)), nil
}

// heartbeatRoute and watchRoute name the requests the figures count:
// heartbeats, and the blocking read a client agent learns its
// allocations by.
const (
	heartbeatRoute = "/v1/node/:node_id/heartbeat"
	watchRoute     = "/v1/node/:node_id/allocations/changes"
)

// clusterSample is the servers' counters at one moment.
type clusterSample struct {
	at         time.Time
	cpu        []time.Duration // per server
	rss        []int64         // per server
	heartbeats float64         // answered by the leader
	watches    float64         // blocking reads answered, every server
	waiting    float64         // blocking reads waiting now, every server
	goroutines float64         // every server's, now
	fds        float64         // every server's open file descriptors, now
	// perServer holds each server's goroutines and open fds, now.
	perServer [][2]float64
	// routes counts the requests answered by method and route, every
	// server's (a forwarded write counts at both ends).
	routes map[string]float64
	// leader is the index of the server whose heartbeats were counted.
	leader int
}

// windowFigures are the rates between two samples.
type windowFigures struct {
	secs          float64
	cpuShare      []float64 // per server, of one core
	rssMiB        []float64 // per server, at the end
	heartbeatsPer float64
	watchesPer    float64
	waiting       float64
	goroutines    float64
	fds           float64
	perServer     [][2]float64
	// routes are the busiest routes' requests per second, busiest first.
	routes []routeRate
}

// routeRate is one route's requests per second.
type routeRate struct {
	route string
	rate  float64
}

// between computes the figures from a to b.
func between(a, b clusterSample) windowFigures {
	f := windowFigures{secs: b.at.Sub(a.at).Seconds(), waiting: b.waiting, goroutines: b.goroutines, fds: b.fds, perServer: b.perServer}
	if f.secs <= 0 {
		return f
	}
	for i := range b.cpu {
		if i < len(a.cpu) {
			f.cpuShare = append(f.cpuShare, (b.cpu[i]-a.cpu[i]).Seconds()/f.secs)
		}
	}
	for _, r := range b.rss {
		f.rssMiB = append(f.rssMiB, float64(r)/(1<<20))
	}
	f.heartbeatsPer = (b.heartbeats - a.heartbeats) / f.secs
	if a.leader != b.leader {
		f.heartbeatsPer = math.NaN() // the leader changed: the counts are two servers'
	}
	f.watchesPer = (b.watches - a.watches) / f.secs
	for r, n := range b.routes {
		if d := n - a.routes[r]; d > 0 {
			f.routes = append(f.routes, routeRate{r, d / f.secs})
		}
	}
	slices.SortFunc(f.routes, func(x, y routeRate) int {
		if c := cmp.Compare(y.rate, x.rate); c != 0 {
			return c
		}
		return strings.Compare(x.route, y.route)
	})
	return f
}

func (f windowFigures) String() string {
	var cpu, rss []string
	for i := range f.cpuShare {
		cpu = append(cpu, fmt.Sprintf("%.1f%%", 100*f.cpuShare[i]))
	}
	for _, r := range f.rssMiB {
		rss = append(rss, fmt.Sprintf("%.0f MiB", r))
	}
	each := ""
	if len(f.perServer) > 1 {
		var gs, fs []string
		for _, p := range f.perServer {
			gs, fs = append(gs, fmt.Sprintf("%.0f", p[0])), append(fs, fmt.Sprintf("%.0f", p[1]))
		}
		each = fmt.Sprintf(" (%s goroutines, %s fds)", strings.Join(gs, " / "), strings.Join(fs, " / "))
	}
	return fmt.Sprintf("server CPU %s of a core, RSS %s; %.1f heartbeats/s, %.1f blocking reads answered/s, %.0f waiting; %.0f goroutines, %.0f open fds%s",
		strings.Join(cpu, " / "), strings.Join(rss, " / "), f.heartbeatsPer, f.watchesPer, f.waiting, f.goroutines, f.fds, each)
}

// topRoutes names the n busiest routes with their rates.
func (f windowFigures) topRoutes(n int) string {
	var out []string
	for _, r := range f.routes[:min(n, len(f.routes))] {
		out = append(out, fmt.Sprintf("%s %.1f", r.route, r.rate))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// sampleCluster reads the servers' counters; leader is the index of the
// leader in servers when the scenario began. With more than one server
// the leader is asked again, and s.leader says which it was: heartbeats
// counted by two different leaders are not a rate.
func (b *bench) sampleCluster(servers []*serverProc, leader int) (clusterSample, error) {
	s := clusterSample{at: time.Now()}
	if len(servers) > 1 {
		if l, err := waitLeader(b.client, servers, nil, 30*time.Second); err == nil {
			leader = slices.Index(servers, l)
		}
	}
	s.leader = leader
	for i, sv := range servers {
		cpu, err := cpuOf(sv.cmd.Process.Pid)
		if err != nil {
			return s, err
		}
		rss, err := rssOf(sv.cmd.Process.Pid)
		if err != nil {
			return s, err
		}
		s.cpu, s.rss = append(s.cpu, cpu), append(s.rss, rss)
		samples, err := b.promAt(sv.url())
		if err != nil {
			return s, err
		}
		route := func(r string) func(map[string]string) bool {
			return func(l map[string]string) bool { return l["route"] == r }
		}
		if i == leader {
			s.heartbeats = promSum(samples, "sched_http_request_duration_seconds_count", route(heartbeatRoute))
		}
		s.watches += promSum(samples, "sched_http_request_duration_seconds_count", route(watchRoute))
		s.waiting += promSum(samples, "sched_http_blocking_queries_in_flight", nil)
		gor, fds := promSum(samples, "go_goroutines", nil), promSum(samples, "process_open_fds", nil)
		s.perServer = append(s.perServer, [2]float64{gor, fds})
		s.goroutines += gor
		if s.routes == nil {
			s.routes = map[string]float64{}
		}
		for _, p := range samples {
			if p.name == "sched_http_request_duration_seconds_count" {
				s.routes[p.labels["method"]+" "+p.labels["route"]] += p.value
			}
		}
		s.fds += fds
	}
	return s, nil
}

// clientProc is one client-only agent of the scenario.
type clientProc struct {
	name string
	pid  int
}

// startClients starts n client-only agents of bin against servers.
func startClients(g *procGroup, bin string, n int, servers []string) ([]clientProc, error) {
	routable := loopbackRoutable()
	if !routable {
		fmt.Println("many-clients: 127.0.0.x is not routable here: the clients listen on distinct ports of 127.0.0.1")
	}
	dir, err := g.tempDir("sched-bench-clients-")
	if err != nil {
		return nil, err
	}
	var out []clientProc
	for i := range n {
		ip := "127.0.0.1"
		if routable {
			ip = clientIP(i)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		name := fmt.Sprintf("mc-%04d", i)
		cdir := filepath.Join(dir, name)
		if err := os.MkdirAll(cdir, 0o700); err != nil {
			return nil, err
		}
		cfg := filepath.Join(cdir, "client.hcl")
		if err := os.WriteFile(cfg, []byte(clientHCL(name, filepath.Join(cdir, "data"), ip, port, servers)), 0o600); err != nil {
			return nil, err
		}
		cmd, err := g.start(bin, cfg, filepath.Join(cdir, "client.log"))
		if err != nil {
			return nil, err
		}
		out = append(out, clientProc{name: name, pid: cmd.Process.Pid})
	}
	return out, nil
}

// readyClients counts the scenario's client nodes that are ready.
func (b *bench) readyClients() (int, error) {
	ns, err := b.nodes()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, x := range ns {
		if strings.HasPrefix(x.Name, "mc-") && x.Status == "ready" {
			n++
		}
	}
	return n, nil
}

// clientsUsage sums the clients' CPU time and RSS.
func clientsUsage(cs []clientProc) (time.Duration, int64) {
	var cpu time.Duration
	var rss int64
	for _, c := range cs {
		if v, err := cpuOf(c.pid); err == nil {
			cpu += v
		}
		if v, err := rssOf(c.pid); err == nil {
			rss += v
		}
	}
	return cpu, rss
}

// setSpread switches the cluster's scheduler to the spread algorithm, so
// the allocations land on every client rather than filling a few.
func (b *bench) setSpread() error {
	resp, err := b.do(http.MethodGet, "/v1/operator/scheduler/configuration", nil)
	if err != nil {
		return err
	}
	var cur struct{ SchedulerConfig map[string]any }
	err = json.NewDecoder(resp.Body).Decode(&cur)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if cur.SchedulerConfig == nil {
		cur.SchedulerConfig = map[string]any{}
	}
	cur.SchedulerConfig["SchedulerAlgorithm"] = "spread"
	body, _ := json.Marshal(cur.SchedulerConfig)
	resp, err = b.do(http.MethodPut, "/v1/operator/scheduler/configuration", body)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// saveProfiles saves a CPU profile of secs seconds and then a heap
// profile of server base into the profile directory, named after what.
func (b *bench) saveProfiles(wg *sync.WaitGroup, base, what string, secs int) {
	defer wg.Done()
	for _, p := range []struct{ path, name string }{
		{fmt.Sprintf("/v1/agent/pprof/profile?seconds=%d", secs), "cpu"},
		{"/v1/agent/pprof/heap", "heap"},
	} {
		resp, err := b.doAt(base, http.MethodGet, p.path, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		file := filepath.Join(b.profileDir, fmt.Sprintf("%s-%s.pprof", p.name, strings.ReplaceAll(what, " ", "-")))
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
		fmt.Printf("many-clients: %s profile (%s): %s\n", p.name, what, file)
	}
}

// idleWindow samples the cluster over the window (with a CPU profile of
// the leader when -profile-dir is set) and prints the figures.
func (b *bench) idleWindow(servers []*serverProc, leader int, clients []clientProc, window time.Duration, what string) error {
	var wg sync.WaitGroup
	if b.profileDir != "" {
		wg.Add(1)
		go b.saveProfiles(&wg, servers[leader].url(), what, max(int(window/time.Second), 1))
	}
	a, err := b.sampleCluster(servers, leader)
	if err != nil {
		return err
	}
	ccpu0, _ := clientsUsage(clients)
	time.Sleep(window) // the measuring window itself
	z, err := b.sampleCluster(servers, leader)
	if err != nil {
		return err
	}
	ccpu1, crss := clientsUsage(clients)
	wg.Wait()
	f := between(a, z)
	fmt.Printf("many-clients: %s, over %v: %v\n", what, window, f)
	fmt.Printf("many-clients: %s: requests/s by route: %s\n", what, f.topRoutes(6))
	fmt.Printf("many-clients: %s: the %d clients together: CPU %.1f%% of a core, RSS %.0f MiB (%.1f MiB each)\n",
		what, len(clients), 100*(ccpu1-ccpu0).Seconds()/f.secs, float64(crss)/(1<<20), float64(crss)/(1<<20)/float64(len(clients)))
	return nil
}

// manyClients runs the scenario with the servers and clients of bin.
func (b *bench) manyClients(bin string, c manyClientsConfig) (err error) {
	if bin == "" {
		return errors.New("many-clients: needs -spawn BIN: it starts its own servers and clients")
	}
	if err := c.validate(); err != nil {
		return err
	}
	g := newProcGroup()
	defer g.close()
	servers, err := startServers(g, bin, c.servers, "")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			logTails(servers, 30)
		}
	}()
	leaderProc, err := waitLeader(b.client, servers, nil, 30*time.Second)
	if err != nil {
		return err
	}
	leader := 0
	var urls []string
	for i, s := range servers {
		if s == leaderProc {
			leader = i
		}
		urls = append(urls, s.url())
	}
	b.addr = leaderProc.url()
	if err := b.setSpread(); err != nil {
		return err
	}
	began := time.Now()
	clients, err := startClients(g, bin, c.clients, urls)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		// A cluster on a loaded machine may lose its leader while a
		// hundred agents start at once: an error here is retried.
		n, err := b.readyClients()
		if err == nil && n >= c.clients {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("many-clients: %d of %d clients ready after 5m (last error: %v)", n, c.clients, err)
		}
		time.Sleep(200 * time.Millisecond) // poll interval of a deadline-bounded wait
	}
	fmt.Printf("many-clients: %d client agents (real processes) ready on %d server(s) after %v\n",
		c.clients, c.servers, time.Since(began).Round(time.Millisecond))
	if err := b.idleWindow(servers, leader, clients, c.window, "idle"); err != nil {
		return err
	}

	prefix := "mc-" + b.run + "-"
	bodies := make([][]byte, c.jobs)
	for i := range bodies {
		bodies[i] = spreadJob(fmt.Sprintf("%s%03d", prefix, i), perJob(c.allocs, c.jobs, i))
	}
	var wg sync.WaitGroup
	if b.profileDir != "" {
		wg.Add(1)
		go b.saveProfiles(&wg, leaderProc.url(), "placing", b.profileSeconds)
	}
	a, err := b.sampleCluster(servers, leader)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.registerBodies(bodies, min(c.jobs, 16)); err != nil {
		return err
	}
	placed, err := b.waitCounts(prefix, 10*time.Minute, 100*time.Millisecond, func(placed, _ int) bool { return placed >= c.allocs })
	if err != nil {
		return err
	}
	end, err := b.waitCounts(prefix, 10*time.Minute, 100*time.Millisecond, func(_, running int) bool { return running >= c.allocs })
	if err != nil {
		return err
	}
	z, err := b.sampleCluster(servers, leader)
	if err != nil {
		return err
	}
	wg.Wait()
	fmt.Printf("many-clients: %d allocations (%d jobs) over %d clients: all placed after %v, all running after %v\n",
		c.allocs, c.jobs, c.clients, placed.Sub(start).Round(time.Millisecond), end.Sub(start).Round(time.Millisecond))
	f := between(a, z)
	fmt.Printf("many-clients: while placing: %v\n", f)
	fmt.Printf("many-clients: while placing: requests/s by route: %s\n", f.topRoutes(6))
	return b.idleWindow(servers, leader, clients, c.window, "all running")
}
