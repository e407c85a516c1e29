package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The three-servers scenario measures writes on a real three-server
// cluster (raft on disk, each server its own data dir and ports):
//
//   - one writer registering jobs one after the other, alternately
//     through the leader and through a follower: the p50 of each, and of
//     a request that needs no leader (GET /v1/status/leader, one round
//     trip to a server), so that the follower's extra cost can be read
//     as round trips; and the leader's count of the registers it served,
//     which equals the writes sent when each crossed at most one hop;
//   - -clients writers spread over all three servers for -ts-for:
//     registers/s, p50 and p99, through the leader and through followers;
//   - the same load again, with the leader killed (SIGKILL) a third of
//     the way in: the time from the kill until a register sent after it
//     is acknowledged, the errors, and the same figures from then on.

// procGroup is every process a scenario started and every directory it
// made: kill ends and removes them all. It kills them on SIGINT and
// SIGTERM too, and each process gets SIGKILL from the kernel if
// sched-bench dies first (Pdeathsig), so an interrupted run leaves no
// agent behind.
type procGroup struct {
	mu    sync.Mutex
	cmds  []*exec.Cmd
	dirs  []string
	sigs  chan os.Signal
	ended chan struct{}
}

// newProcGroup returns a group that kills its processes on SIGINT or
// SIGTERM, then exits.
func newProcGroup() *procGroup {
	g := &procGroup{sigs: make(chan os.Signal, 1), ended: make(chan struct{})}
	signal.Notify(g.sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-g.sigs:
			fmt.Fprintf(os.Stderr, "sched-bench: %v: stopping every process started\n", s)
			g.kill()
			os.Exit(130)
		case <-g.ended:
		}
	}()
	return g
}

// tempDir makes a directory the group removes at kill.
func (g *procGroup) tempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	g.dirs = append(g.dirs, dir)
	g.mu.Unlock()
	return dir, nil
}

// start starts `bin agent -config cfg` in the group, its output to log.
func (g *procGroup) start(bin, cfg, log string) (*exec.Cmd, error) {
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "agent", "-config", cfg)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	out.Close() // the child holds its own descriptor
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.cmds = append(g.cmds, cmd)
	g.mu.Unlock()
	return cmd, nil
}

// kill SIGKILLs every process of the group still running, waits for
// them, and removes the group's directories. It may be called more than
// once.
func (g *procGroup) kill() {
	g.mu.Lock()
	cmds, dirs := g.cmds, g.dirs
	g.cmds, g.dirs = nil, nil
	g.mu.Unlock()
	for _, c := range cmds {
		c.Process.Kill()
	}
	for _, c := range cmds {
		c.Wait()
	}
	for _, d := range dirs {
		os.RemoveAll(d)
	}
}

// close kills the group and stops watching for signals.
func (g *procGroup) close() {
	signal.Stop(g.sigs)
	select {
	case <-g.ended:
	default:
		close(g.ended)
	}
	g.kill()
}

// serverProc is one server agent a scenario started.
type serverProc struct {
	name               string
	ip                 string
	http, raft, gossip int
	cmd                *exec.Cmd
	exited             chan struct{} // closed when cmd has been waited for
	// killed is set when the scenario kills the server, before it has
	// exited: no writer sends it anything from then on.
	killed                 atomic.Bool
	dir, cfg, log, dataDir string
}

// url is the server's HTTP address.
func (s *serverProc) url() string { return fmt.Sprintf("http://%s:%d", s.ip, s.http) }

// raftAddr is the address /v1/status/leader names the server by.
func (s *serverProc) raftAddr() string { return net.JoinHostPort(s.ip, strconv.Itoa(s.raft)) }

// serverHCL is a server agent's configuration: its own data dir and
// ports, gossip joined to every address of join, bootstrapped once expect
// servers have met; profiles served (enable_debug) for -profile-dir.
// extra goes inside the server block.
func serverHCL(name, dataDir, ip string, httpPort, raftPort, gossipPort, expect int, join []string, extra string) string {
	quoted := make([]string, len(join))
	for i, j := range join {
		quoted[i] = strconv.Quote(j)
	}
	return fmt.Sprintf(`name         = %q
data_dir     = %q
bind_addr    = %q
log_level    = "warn"
enable_debug = true
ports {
  http   = %d
  raft   = %d
  gossip = %d
}
server {
  enabled          = true
  bootstrap_expect = %d
  retry_join       = [%s]
  retry_interval   = "500ms"
  %s
}
`, name, dataDir, ip, httpPort, raftPort, gossipPort, expect, strings.Join(quoted, ", "), extra)
}

// freeTCPUDP returns a port of ip free a moment ago for both TCP and UDP
// (gossip listens on both).
func freeTCPUDP(ip string) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, errors.New("no port free for both TCP and UDP")
}

// startServers starts n server agents of bin on 127.0.0.1, each with its
// own data dir and ports, joined into one cluster, and waits until every
// one serves a consistent read.
func startServers(g *procGroup, bin string, n int, extra string) ([]*serverProc, error) {
	const ip = "127.0.0.1"
	var servers []*serverProc
	for i := range n {
		dir, err := g.tempDir("sched-bench-server-")
		if err != nil {
			return nil, err
		}
		s := &serverProc{name: fmt.Sprintf("s%d", i+1), ip: ip, dir: dir,
			cfg: filepath.Join(dir, "server.hcl"), log: filepath.Join(dir, "server.log"), dataDir: filepath.Join(dir, "data")}
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		s.http, s.raft = ports[0], ports[1]
		if s.gossip, err = freeTCPUDP(ip); err != nil {
			return nil, err
		}
		servers = append(servers, s)
	}
	var join []string
	for _, s := range servers {
		join = append(join, net.JoinHostPort(ip, strconv.Itoa(s.gossip)))
	}
	for _, s := range servers {
		hcl := serverHCL(s.name, s.dataDir, ip, s.http, s.raft, s.gossip, n, join, extra)
		if err := os.WriteFile(s.cfg, []byte(hcl), 0o600); err != nil {
			return nil, err
		}
		if err := s.launch(g, bin); err != nil {
			return nil, err
		}
	}
	for _, s := range servers {
		if err := s.waitReady(90 * time.Second); err != nil {
			return nil, err
		}
	}
	return servers, nil
}

// launch starts the server's process in the group.
func (s *serverProc) launch(g *procGroup, bin string) error {
	cmd, err := g.start(bin, s.cfg, s.log)
	if err != nil {
		return err
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	return nil
}

// alive reports whether the server's process runs.
func (s *serverProc) alive() bool {
	if s.killed.Load() {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// waitReady waits until the server answers a consistent read.
func (s *serverProc) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if !s.alive() {
			out, _ := os.ReadFile(s.log)
			return fmt.Errorf("server %s exited during start:\n%s", s.name, out)
		}
		if resp, err := http.Get(s.url() + "/v1/jobs?prefix=none"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a deadline-bounded wait
	}
	return fmt.Errorf("server %s did not serve a consistent read within %v", s.name, limit)
}

// logTails prints the end of each server's log, and whether it still
// runs: what a failed run leaves to read before its directories go.
func logTails(servers []*serverProc, lines int) {
	for _, s := range servers {
		out, _ := os.ReadFile(s.log)
		all := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		state := "running"
		if s.cmd == nil || !s.alive() {
			state = "exited"
			if s.cmd != nil && s.cmd.ProcessState != nil {
				state = "exited: " + s.cmd.ProcessState.String()
			}
		}
		fmt.Fprintf(os.Stderr, "--- server %s (%s), last %d lines of its log:\n%s\n", s.name, state, lines, strings.Join(all[max(len(all)-lines, 0):], "\n"))
	}
}

// leaderOf asks server s which server leads, by raft address.
func leaderOf(c *http.Client, s *serverProc, servers []*serverProc) (*serverProc, error) {
	resp, err := c.Get(s.url() + "/v1/status/leader")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var addr string
	if err := json.NewDecoder(resp.Body).Decode(&addr); err != nil {
		return nil, err
	}
	for _, o := range servers {
		if o.raftAddr() == addr {
			return o, nil
		}
	}
	return nil, fmt.Errorf("no leader known to %s (%q)", s.name, addr)
}

// waitLeader waits until a live server other than not leads, as the live
// servers see it.
func waitLeader(c *http.Client, servers []*serverProc, not *serverProc, limit time.Duration) (*serverProc, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s == not || !s.alive() {
				continue
			}
			if l, err := leaderOf(c, s, servers); err == nil && l != not && l.alive() {
				return l, nil
			}
		}
		time.Sleep(20 * time.Millisecond) // poll interval of a deadline-bounded wait
	}
	return nil, fmt.Errorf("no new leader within %v", limit)
}

// writeSample is one register: which server it was sent to, when it was
// sent and answered, and whether it was acknowledged.
type writeSample struct {
	server     int
	sent, done time.Time
	ok         bool
	err        string // the error of a failed one, shortened
}

// writeFigures summarizes registers.
type writeFigures struct {
	n, errs  int
	rate     float64
	p50, p99 time.Duration
}

// summarizeWrites computes the figures of the acknowledged samples sent
// in [from, to) for which pick holds (nil: all): their rate over the
// window, and p50 and p99 of their latency. Failed samples count as
// errors.
func summarizeWrites(samples []writeSample, from, to time.Time, pick func(writeSample) bool) writeFigures {
	var f writeFigures
	var lat []time.Duration
	for _, s := range samples {
		if s.sent.Before(from) || !s.sent.Before(to) || (pick != nil && !pick(s)) {
			continue
		}
		if !s.ok {
			f.errs++
			continue
		}
		lat = append(lat, s.done.Sub(s.sent))
	}
	slices.Sort(lat)
	f.n = len(lat)
	if secs := to.Sub(from).Seconds(); secs > 0 {
		f.rate = float64(f.n) / secs
	}
	f.p50, f.p99 = pct(lat, 50), pct(lat, 99)
	return f
}

// shortErr is an error's text without its request's job ID, at most 120
// bytes: failures of one kind read alike.
func shortErr(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "POST") {
		msg = msg[i+2:]
	}
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}

// errorKinds counts the failed samples sent in [from, to) by error, the
// commonest first, at most n kinds.
func errorKinds(samples []writeSample, from, to time.Time, n int) []string {
	count := map[string]int{}
	for _, s := range samples {
		if !s.ok && !s.sent.Before(from) && s.sent.Before(to) {
			count[s.err]++
		}
	}
	var kinds []string
	for k := range count {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, k := range kinds[:min(n, len(kinds))] {
		out = append(out, fmt.Sprintf("%d× %s", count[k], k))
	}
	return out
}

// firstAckAfter is the time from at until the first acknowledged sample
// sent at or after at was answered; false when none was.
func firstAckAfter(samples []writeSample, at time.Time) (time.Duration, bool) {
	var best time.Time
	for _, s := range samples {
		if s.ok && !s.sent.Before(at) && (best.IsZero() || s.done.Before(best)) {
			best = s.done
		}
	}
	if best.IsZero() {
		return 0, false
	}
	return best.Sub(at), true
}

func (f writeFigures) String() string {
	return fmt.Sprintf("%d acknowledged (%.0f/s), p50 %v, p99 %v, %d errors",
		f.n, f.rate, f.p50.Round(10*time.Microsecond), f.p99.Round(10*time.Microsecond), f.errs)
}

// writeLoad registers jobs from clients writers for d, writer w sending to
// servers[targets[w%len(targets)]] and moving on to the next live server
// when its own is gone. during, if set, runs once after d/3. The jobs are
// numbered from first.
func (b *bench) writeLoad(servers []*serverProc, clients int, d time.Duration, first int64, during func()) []writeSample {
	var mu sync.Mutex
	var all []writeSample
	var seq atomic.Int64
	seq.Store(first)
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := w % len(servers)
			var mine []writeSample
			for time.Now().Before(stop) {
				for tries := 0; !servers[target].alive() && tries < len(servers); tries++ {
					target = (target + 1) % len(servers)
				}
				i := int(seq.Add(1))
				body := b.jobBody(i, "load")
				s := writeSample{server: target, sent: time.Now()}
				resp, err := b.doAt(servers[target].url(), http.MethodPost, "/v1/jobs", body)
				s.done = time.Now()
				if err == nil {
					resp.Body.Close()
					s.ok = true
				} else {
					s.err = shortErr(err)
					if !servers[target].alive() {
						target = (target + 1) % len(servers)
					}
				}
				mine = append(mine, s)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	if during != nil {
		time.Sleep(d / 3) // the moment of the fault, a third into the load
		during()
	}
	wg.Wait()
	return all
}

// doAt is do against another server than b.addr.
func (b *bench) doAt(base, method, path string, body []byte) (*http.Response, error) {
	saved := *b
	saved.addr = base
	return saved.do(method, path, body)
}

// serialFigures are the p50s of serialP50.
type serialFigures struct {
	// viaLeader and viaFollower are registers' round trips.
	viaLeader, viaFollower time.Duration
	// roundTrip is GET /v1/status/leader's, answered by the leader
	// itself.
	roundTrip time.Duration
	// badViaLeader and badViaFollower are those of a register the
	// leader refuses (an empty job): the forwarding without raft.
	badViaLeader, badViaFollower time.Duration
}

// serialP50 sends n registers one after the other, alternately to the
// leader and to a follower, n refused registers likewise, and n cheap
// reads to the leader, returning the p50 of each.
func (b *bench) serialP50(leader, follower *serverProc, n int) (out serialFigures, err error) {
	var l, f, r, bl, bf []time.Duration
	for i := range n {
		// Which goes first alternates, so neither always follows the
		// other's write while its replication settles.
		order := []*serverProc{leader, follower}
		if i%2 == 1 {
			order[0], order[1] = follower, leader
		}
		for _, s := range order {
			start := time.Now()
			if resp, err := b.doAt(s.url(), http.MethodPost, "/v1/jobs", []byte(`{"Job":{}}`)); err == nil {
				resp.Body.Close()
				return out, fmt.Errorf("an empty job was registered through %s", s.name)
			}
			if s == leader {
				bl = append(bl, time.Since(start))
			} else {
				bf = append(bf, time.Since(start))
			}
		}
		for _, s := range order {
			start := time.Now()
			resp, err := b.doAt(s.url(), http.MethodPost, "/v1/jobs", b.jobBody(1_000_000+i, "serial-"+s.name))
			if err != nil {
				return out, err
			}
			resp.Body.Close()
			if s == leader {
				l = append(l, time.Since(start))
			} else {
				f = append(f, time.Since(start))
			}
		}
		start := time.Now()
		resp, err := b.doAt(leader.url(), http.MethodGet, "/v1/status/leader", nil)
		if err != nil {
			return out, err
		}
		resp.Body.Close()
		r = append(r, time.Since(start))
	}
	for _, s := range [][]time.Duration{l, f, r, bl, bf} {
		slices.Sort(s)
	}
	return serialFigures{viaLeader: pct(l, 50), viaFollower: pct(f, 50), roundTrip: pct(r, 50),
		badViaLeader: pct(bl, 50), badViaFollower: pct(bf, 50)}, nil
}

// registersServed reads how many POST /v1/jobs server s has answered
// (its request metric, forwarded ones included).
func (b *bench) registersServed(s *serverProc) (float64, error) {
	samples, err := b.promAt(s.url())
	if err != nil {
		return 0, err
	}
	return promSum(samples, "sched_http_request_duration_seconds_count", func(l map[string]string) bool {
		return l["method"] == "POST" && l["route"] == "/v1/jobs"
	}), nil
}

// threeServers runs the scenario against three servers of bin.
func (b *bench) threeServers(bin string, clients, serial int, d time.Duration) (err error) {
	if bin == "" {
		return errors.New("three-servers: needs -spawn BIN: it starts its own servers")
	}
	g := newProcGroup()
	defer g.close()
	servers, err := startServers(g, bin, 3, "")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			logTails(servers, 30)
		}
	}()
	leader, err := waitLeader(b.client, servers, nil, 30*time.Second)
	if err != nil {
		return err
	}
	var follower *serverProc
	for _, s := range servers {
		if s != leader {
			follower = s
			break
		}
	}
	fmt.Printf("three-servers: 3 servers up, leader %s\n", leader.name)

	before, err := b.registersServed(leader)
	if err != nil {
		return err
	}
	sf, err := b.serialP50(leader, follower, serial)
	if err != nil {
		return err
	}
	lp50, fp50, rt := sf.viaLeader, sf.viaFollower, sf.roundTrip
	after, err := b.registersServed(leader)
	if err != nil {
		return err
	}
	fmt.Printf("three-servers: serial registers (%d each, alternating): through the leader p50 %v, through a follower p50 %v: +%v, %.1f round trips of GET /v1/status/leader (p50 %v)\n",
		serial, lp50.Round(10*time.Microsecond), fp50.Round(10*time.Microsecond), (fp50 - lp50).Round(10*time.Microsecond),
		extraRoundTrips(lp50, fp50, rt), rt.Round(10*time.Microsecond))
	fmt.Printf("three-servers: serial refused registers (an empty job; forwarding without raft): through the leader p50 %v, through a follower p50 %v: +%v, %.1f round trips\n",
		sf.badViaLeader.Round(10*time.Microsecond), sf.badViaFollower.Round(10*time.Microsecond), (sf.badViaFollower - sf.badViaLeader).Round(10*time.Microsecond),
		extraRoundTrips(sf.badViaLeader, sf.badViaFollower, rt))
	fmt.Printf("three-servers: the leader answered %.0f registers for the %d sent (one forward each, none repeated)\n", after-before, 4*serial)

	isLeader := func(idx int) func(writeSample) bool {
		return func(s writeSample) bool { return servers[s.server] == leader == (idx == 0) }
	}
	start := time.Now()
	samples := b.writeLoad(servers, clients, d, 0, nil)
	end := time.Now()
	fmt.Printf("three-servers: %d writers over 3 servers for %v: all %v\n", clients, d, summarizeWrites(samples, start, end, nil))
	fmt.Printf("three-servers:   through the leader %v\n", summarizeWrites(samples, start, end, isLeader(0)))
	fmt.Printf("three-servers:   through followers  %v\n", summarizeWrites(samples, start, end, isLeader(1)))

	var killedAt time.Time
	old := leader
	start = time.Now()
	samples = b.writeLoad(servers, clients, d, 10_000_000, func() {
		killedAt = time.Now()
		old.killed.Store(true)
		old.cmd.Process.Kill()
		<-old.exited
	})
	end = time.Now()
	newLeader, err := waitLeader(b.client, servers, old, 30*time.Second)
	if err != nil {
		return err
	}
	gap, ok := firstAckAfter(samples, killedAt)
	if !ok {
		return errors.New("three-servers: no write acknowledged after the leader was killed")
	}
	fmt.Printf("three-servers: leader %s killed (SIGKILL) %v into the load: new leader %s; first write sent after the kill acknowledged %v after it\n",
		old.name, killedAt.Sub(start).Round(time.Millisecond), newLeader.name, gap.Round(time.Millisecond))
	fmt.Printf("three-servers:   before the kill %v\n", summarizeWrites(samples, start, killedAt, nil))
	fmt.Printf("three-servers:   kill to recovery %v\n", summarizeWrites(samples, killedAt, killedAt.Add(gap), nil))
	leader = newLeader
	fmt.Printf("three-servers:   after recovery   %v\n", summarizeWrites(samples, killedAt.Add(gap), end, nil))
	fmt.Printf("three-servers:     through the leader %v\n", summarizeWrites(samples, killedAt.Add(gap), end, isLeader(0)))
	fmt.Printf("three-servers:     through the follower %v\n", summarizeWrites(samples, killedAt.Add(gap), end, isLeader(1)))
	for _, k := range errorKinds(samples, start, end, 4) {
		fmt.Printf("three-servers:   errors: %s\n", k)
	}
	return nil
}

// extraRoundTrips is what a write through a follower costs over one
// through the leader, in round trips of rt; 0 when rt is.
func extraRoundTrips(viaLeader, viaFollower, rt time.Duration) float64 {
	if rt <= 0 {
		return 0
	}
	return float64(viaFollower-viaLeader) / float64(rt)
}
