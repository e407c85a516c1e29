package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestManyClientsConfigValidate: the flags are bounded before any
// process starts, and every bad flag is named.
func TestManyClientsConfigValidate(t *testing.T) {
	good := manyClientsConfig{clients: 100, allocs: 10000, jobs: 10, servers: 1, window: 20 * time.Second}
	if err := good.validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	three := good
	three.servers = 3
	if err := three.validate(); err != nil {
		t.Fatalf("three servers refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*manyClientsConfig)
		want string
	}{
		{"no clients", func(c *manyClientsConfig) { c.clients = 0 }, "-mc-clients"},
		{"too many clients", func(c *manyClientsConfig) { c.clients = 2001 }, "-mc-clients"},
		{"no jobs", func(c *manyClientsConfig) { c.jobs = 0 }, "-mc-jobs"},
		{"fewer allocations than jobs", func(c *manyClientsConfig) { c.allocs = 5 }, "-mc-allocs"},
		{"too many allocations", func(c *manyClientsConfig) { c.allocs = 1_000_001 }, "-mc-allocs"},
		{"two servers", func(c *manyClientsConfig) { c.servers = 2 }, "-mc-servers"},
		{"short window", func(c *manyClientsConfig) { c.window = time.Millisecond }, "-mc-window"},
	} {
		c := good
		tc.edit(&c)
		err := c.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: validate() = %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	all := manyClientsConfig{}
	err := all.validate()
	for _, want := range []string{"-mc-clients", "-mc-jobs", "-mc-servers", "-mc-window"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("zero config: validate() = %v, want it to name %s too", err, want)
		}
	}
}

// TestPerJob: the allocations split over the jobs add up, and differ by
// at most one.
func TestPerJob(t *testing.T) {
	for _, tc := range []struct{ allocs, jobs int }{{10000, 10}, {10001, 10}, {7, 3}, {5, 5}} {
		sum, lo, hi := 0, tc.allocs, 0
		for i := range tc.jobs {
			n := perJob(tc.allocs, tc.jobs, i)
			sum += n
			lo, hi = min(lo, n), max(hi, n)
		}
		if sum != tc.allocs || hi-lo > 1 {
			t.Errorf("perJob(%d over %d): sum %d, spread %d..%d", tc.allocs, tc.jobs, sum, lo, hi)
		}
	}
}

// TestClientIP: the clients' addresses are distinct loopback addresses,
// never the servers' 127.0.0.1, with valid octets.
func TestClientIP(t *testing.T) {
	seen := map[string]bool{}
	for i := range 2000 {
		ip := clientIP(i)
		if ip == "127.0.0.1" || seen[ip] || !strings.HasPrefix(ip, "127.") {
			t.Fatalf("clientIP(%d) = %s: a server's, repeated or not loopback", i, ip)
		}
		seen[ip] = true
		var a, b, c, d int
		if n, _ := fmt.Sscanf(ip, "%d.%d.%d.%d", &a, &b, &c, &d); n != 4 || b > 255 || c > 255 || d > 255 || d < 2 {
			t.Fatalf("clientIP(%d) = %s: not a valid address", i, ip)
		}
	}
	if clientIP(0) != "127.0.0.2" {
		t.Errorf("clientIP(0) = %s, want 127.0.0.2", clientIP(0))
	}
}

// TestClientHCL: the client's configuration names its address, port,
// servers and node class, and enables no server.
func TestClientHCL(t *testing.T) {
	hcl := clientHCL("mc-0001", "/d/data", "127.0.0.3", 4646, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"})
	for _, want := range []string{`name      = "mc-0001"`, `bind_addr = "127.0.0.3"`, "http = 4646",
		`servers    = ["http://127.0.0.1:1", "http://127.0.0.1:2"]`, `node_class = "` + manyClientsClass + `"`} {
		if !strings.Contains(hcl, want) {
			t.Errorf("client config lacks %q:\n%s", want, hcl)
		}
	}
	if strings.Contains(hcl, "server {") {
		t.Errorf("client config enables a server:\n%s", hcl)
	}
}

// TestParseProm reads counters with and without labels, escaped label
// values, and skips comments and lines it cannot read.
func TestParseProm(t *testing.T) {
	text := `# HELP sched_http_request_duration_seconds x
# TYPE sched_http_request_duration_seconds histogram
sched_http_request_duration_seconds_count{method="PUT",route="/v1/node/:node_id/heartbeat",status="2xx"} 140
sched_http_request_duration_seconds_count{method="PUT",route="/v1/node/:node_id/heartbeat",status="5xx"} 2
sched_http_request_duration_seconds_count{method="GET",route="/v1/node/:node_id/allocations/changes",status="2xx"} 33
sched_http_blocking_queries_in_flight 100
go_goroutines 1.5e+03
weird{a="x\"y,z",b="2"} 7
broken{a="1" notanumber
`
	s := parseProm(text)
	hb := promSum(s, "sched_http_request_duration_seconds_count", func(l map[string]string) bool { return l["route"] == heartbeatRoute })
	if hb != 142 {
		t.Errorf("heartbeats = %v, want 142 (both statuses)", hb)
	}
	if w := promSum(s, "sched_http_request_duration_seconds_count", func(l map[string]string) bool { return l["route"] == watchRoute }); w != 33 {
		t.Errorf("watches = %v, want 33", w)
	}
	if v := promSum(s, "sched_http_blocking_queries_in_flight", nil); v != 100 {
		t.Errorf("in flight = %v, want 100", v)
	}
	if v := promSum(s, "go_goroutines", nil); v != 1500 {
		t.Errorf("goroutines = %v, want 1500", v)
	}
	if v := promSum(s, "weird", func(l map[string]string) bool { return l["a"] == `x"y,z` && l["b"] == "2" }); v != 7 {
		t.Errorf("escaped label: %v, want 7", v)
	}
	if v := promSum(s, "broken", nil); v != 0 {
		t.Errorf("a broken line was read: %v", v)
	}
}

// TestBetween: rates over a window, per server CPU as a share of a core,
// the leader's heartbeats and every server's watches.
func TestBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := clusterSample{at: t0, cpu: []time.Duration{time.Second, 2 * time.Second}, rss: []int64{1 << 20, 2 << 20}, heartbeats: 100, watches: 10}
	a.routes = map[string]float64{"PUT /hb": 100, "GET /w": 10, "POST /old": 5}
	b := clusterSample{at: t0.Add(10 * time.Second), cpu: []time.Duration{3 * time.Second, 2500 * time.Millisecond},
		rss: []int64{64 << 20, 32 << 20}, heartbeats: 240, watches: 60, waiting: 100, goroutines: 450, fds: 220,
		routes:    map[string]float64{"PUT /hb": 240, "GET /w": 60, "POST /old": 5, "POST /new": 10},
		perServer: [][2]float64{{300, 120}, {150, 100}}}
	f := between(a, b)
	if f.secs != 10 || f.heartbeatsPer != 14 || f.watchesPer != 5 || f.waiting != 100 || f.goroutines != 450 || f.fds != 220 {
		t.Fatalf("between = %+v", f)
	}
	if len(f.cpuShare) != 2 || f.cpuShare[0] != 0.2 || f.cpuShare[1] != 0.05 {
		t.Errorf("CPU shares %v, want [0.2 0.05]", f.cpuShare)
	}
	if len(f.rssMiB) != 2 || f.rssMiB[0] != 64 || f.rssMiB[1] != 32 {
		t.Errorf("RSS %v, want [64 32] MiB", f.rssMiB)
	}
	if s := f.String(); !strings.Contains(s, "20.0% / 5.0%") || !strings.Contains(s, "14.0 heartbeats/s") || !strings.Contains(s, "(300 / 150 goroutines, 120 / 100 fds)") {
		t.Errorf("String() = %s", s)
	}
	if got := f.topRoutes(2); got != "PUT /hb 14.0, GET /w 5.0" {
		t.Errorf("topRoutes(2) = %q, want the two busiest, busiest first", got)
	}
	if len(f.routes) != 3 {
		t.Errorf("routes %v: want the three that moved (an idle one left out)", f.routes)
	}
	moved := b
	moved.leader = 1
	if f := between(a, moved); !math.IsNaN(f.heartbeatsPer) {
		t.Errorf("heartbeats over a leader change: %v, want NaN (not a rate)", f.heartbeatsPer)
	}
	if z := between(b, b); z.heartbeatsPer != 0 || z.cpuShare != nil || z.topRoutes(3) != "none" {
		t.Errorf("an empty window gave rates: %+v", z)
	}
}
