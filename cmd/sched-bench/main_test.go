package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// TestStatCPU: utime and stime are fields 14 and 15 of /proc/PID/stat,
// counted after the command name, which may hold spaces and parentheses.
func TestStatCPU(t *testing.T) {
	line := "4242 (sched (agent) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 1000000 2000 18446744073709551615"
	got, err := statCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Fatalf("statCPU = %v, want %v (250 + 75 ticks)", got, want)
	}
	for _, bad := range []string{"", "4242 sched S 1", "1 (x) S 1 2 3 4 5 6 7 8 9 10 eleven 12"} {
		if _, err := statCPU(bad); err == nil {
			t.Errorf("statCPU(%q) gave no error", bad)
		}
	}
	if _, err := cpuOf(os.Getpid()); err != nil {
		t.Fatalf("cpuOf(self): %v", err)
	}
}

// TestSnapshotStats reads the snapshot counters from the agent's
// /v1/agent/self, as the agent writes them (Stats.raft), and refuses an
// answer without them.
func TestSnapshotStats(t *testing.T) {
	body := `{"Stats":{"raft":{"snapshots_persisted":"3","last_persist_seconds":"4.250","last_persist_bytes":"123456789"}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/agent/self" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, body)
	}))
	defer srv.Close()
	b := &bench{addr: srv.URL, client: srv.Client()}
	n, secs, size, err := b.snapshotStats()
	if err != nil || n != 3 || secs != 4.25 || size != 123456789 {
		t.Fatalf("snapshotStats = %d, %v, %d, %v; want 3, 4.25, 123456789, nil", n, secs, size, err)
	}
	body = `{"Stats":{"raft":{}}}`
	if _, _, _, err := b.snapshotStats(); err == nil {
		t.Fatal("an agent without snapshot stats gave no error")
	}
}
