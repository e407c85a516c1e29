package driver

import (
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and parentheses; fields 3..52.
	fields := make([]string, 50)
	for i := range fields {
		fields[i] = "0"
	}
	fields[0] = "Z"         // 3 state
	fields[5-3] = "4242"    // 5 pgrp
	fields[14-3] = "150"    // 14 utime
	fields[15-3] = "50"     // 15 stime
	fields[22-3] = "987654" // 22 starttime
	fields[52-3] = "256"    // 52 exit_code: exited with 1
	line := "4242 (we (ird) name) " + strings.Join(fields, " ") + "\n"
	s, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if s.State != 'Z' || s.Pgrp != 4242 || s.UTime != 150 || s.STime != 50 || s.StartTicks != 987654 || s.ExitStatus != 256 {
		t.Fatalf("parsed %+v", s)
	}
	if r := exitFromStatus(s.ExitStatus); r.ExitCode != 1 || r.Signal != 0 {
		t.Fatalf("exit status 256: %+v", r)
	}
	if r := exitFromStatus(9); r.Signal != 9 || r.ExitCode != 137 {
		t.Fatalf("exit status 9 (SIGKILL): %+v", r)
	}
	// An older kernel without field 52.
	short := "1 (x) " + strings.Join(fields[:40], " ")
	if s, err := parseProcStat([]byte(short)); err != nil || s.ExitStatus != -1 {
		t.Fatalf("short stat: %+v, %v", s, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) R 1"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
	if ticksToDuration(250).Seconds() != 2.5 {
		t.Fatal("clock ticks are not hundredths")
	}
}
