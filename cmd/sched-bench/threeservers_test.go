package main

import (
	"strings"
	"testing"
	"time"
)

// TestServerHCL: each server's configuration names its own data dir and
// ports, joins every server and waits for all three to bootstrap.
func TestServerHCL(t *testing.T) {
	hcl := serverHCL("s2", "/d/s2", "127.0.0.1", 5001, 5002, 5003, 3,
		[]string{"127.0.0.1:4003", "127.0.0.1:5003", "127.0.0.1:6003"}, "num_schedulers = 2")
	for _, want := range []string{`name         = "s2"`, `data_dir     = "/d/s2"`, "http   = 5001", "raft   = 5002", "gossip = 5003",
		"bootstrap_expect = 3", `retry_join       = ["127.0.0.1:4003", "127.0.0.1:5003", "127.0.0.1:6003"]`,
		"enable_debug = true", "num_schedulers = 2", "enabled          = true"} {
		if !strings.Contains(hcl, want) {
			t.Errorf("server config lacks %q:\n%s", want, hcl)
		}
	}
	if strings.Contains(hcl, "client {") {
		t.Errorf("server config enables a client:\n%s", hcl)
	}
}

// TestSummarizeWrites: only samples sent in the window count, failures
// count as errors, the rate is over the window, and pick selects.
func TestSummarizeWrites(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var samples []writeSample
	for i := range 100 {
		sent := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		samples = append(samples, writeSample{server: i % 2, sent: sent, done: sent.Add(time.Duration(i+1) * time.Millisecond), ok: i%10 != 9})
	}
	samples = append(samples, writeSample{sent: t0.Add(-time.Second), done: t0, ok: true})                     // before the window
	samples = append(samples, writeSample{sent: t0.Add(time.Second), done: t0.Add(2 * time.Second), ok: true}) // at its end: outside
	f := summarizeWrites(samples, t0, t0.Add(time.Second), nil)
	if f.n != 90 || f.errs != 10 || f.rate != 90 {
		t.Fatalf("summary %+v, want 90 acknowledged, 10 errors, 90/s", f)
	}
	// Latencies 1..100 ms without the multiples of 10: the p50 is the
	// 45th of 90 (49 ms), the p99 the 90th (99 ms).
	if f.p50 != 49*time.Millisecond || f.p99 != 99*time.Millisecond {
		t.Errorf("p50 %v p99 %v, want 49ms and 99ms", f.p50, f.p99)
	}
	even := summarizeWrites(samples, t0, t0.Add(time.Second), func(s writeSample) bool { return s.server == 0 })
	if even.n != 50 || even.errs != 0 {
		t.Errorf("server 0: %+v, want 50 acknowledged and no errors (the failures are odd)", even)
	}
	if z := summarizeWrites(nil, t0, t0, nil); z.n != 0 || z.rate != 0 || z.p50 != 0 {
		t.Errorf("empty: %+v", z)
	}
}

// TestFirstAckAfter: the recovery is measured to the earliest answer of
// an acknowledged write sent after the kill; writes sent before it, or
// failed, do not count.
func TestFirstAckAfter(t *testing.T) {
	kill := time.Unix(1000, 0)
	samples := []writeSample{
		{sent: kill.Add(-time.Millisecond), done: kill.Add(10 * time.Millisecond), ok: true},  // sent before
		{sent: kill.Add(time.Millisecond), done: kill.Add(100 * time.Millisecond), ok: false}, // failed
		{sent: kill.Add(2 * time.Millisecond), done: kill.Add(900 * time.Millisecond), ok: true},
		{sent: kill.Add(300 * time.Millisecond), done: kill.Add(700 * time.Millisecond), ok: true},
	}
	d, ok := firstAckAfter(samples, kill)
	if !ok || d != 700*time.Millisecond {
		t.Fatalf("firstAckAfter = %v, %v; want 700ms", d, ok)
	}
	if _, ok := firstAckAfter(samples[:2], kill); ok {
		t.Fatal("no acknowledged write after the kill, yet a recovery was reported")
	}
}

// TestExtraRoundTrips: the follower's extra cost in round trips.
func TestExtraRoundTrips(t *testing.T) {
	if got := extraRoundTrips(2*time.Millisecond, 2500*time.Microsecond, 500*time.Microsecond); got != 1 {
		t.Errorf("extraRoundTrips = %v, want 1", got)
	}
	if got := extraRoundTrips(time.Millisecond, 2*time.Millisecond, 0); got != 0 {
		t.Errorf("extraRoundTrips with no round trip measured = %v, want 0", got)
	}
}

// TestErrorKinds groups failures by message, commonest first, within the
// window only.
func TestErrorKinds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	samples := []writeSample{
		{sent: t0, err: "503 no cluster leader"},
		{sent: t0.Add(time.Millisecond), err: "connection refused"},
		{sent: t0.Add(2 * time.Millisecond), err: "503 no cluster leader"},
		{sent: t0.Add(3 * time.Millisecond), ok: true},
		{sent: t0.Add(time.Hour), err: "later"},
	}
	got := errorKinds(samples, t0, t0.Add(time.Second), 5)
	if len(got) != 2 || got[0] != "2× 503 no cluster leader" || got[1] != "1× connection refused" {
		t.Fatalf("errorKinds = %q", got)
	}
	if got := errorKinds(samples, t0, t0.Add(time.Second), 1); len(got) != 1 {
		t.Fatalf("errorKinds with n=1 gave %d kinds", len(got))
	}
}
