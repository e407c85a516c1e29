package main

import (
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
