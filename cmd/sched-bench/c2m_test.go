package main

import (
	"strings"
	"testing"
	"time"
)

// TestC2MVerdict: each target is judged from the figures, a missed one
// says so, and a figure the run did not measure is not called met.
func TestC2MVerdict(t *testing.T) {
	met := placementFigures{total: 2_000_000, took: 3 * time.Minute, firstRate: 10000, lastRate: 8500,
		settledRSS: 2_000_000 * 1400, restart: 20 * time.Second}
	lines := met.verdict(defaultC2MTargets)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want one per target: %q", len(lines), lines)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, ": met") {
			t.Errorf("target not met: %s", l)
		}
	}
	if !strings.Contains(lines[1], "85%") || !strings.Contains(lines[2], "1.37 KiB") {
		t.Errorf("figures: %q", lines)
	}

	missed := placementFigures{total: 2_000_000, took: 5 * time.Minute, firstRate: 10000, lastRate: 7000,
		settledRSS: 2_000_000 * 1600, restart: 45 * time.Second}
	for i, l := range missed.verdict(defaultC2MTargets) {
		if !strings.HasSuffix(l, ": MISSED") {
			t.Errorf("target %d judged met: %s", i, l)
		}
	}

	none := placementFigures{total: 2_000_000, took: time.Minute}
	lines = none.verdict(defaultC2MTargets)
	for _, l := range lines[1:] {
		if !strings.Contains(l, "not measured") {
			t.Errorf("an unmeasured figure was judged: %s", l)
		}
	}
	if z := (placementFigures{}).verdict(defaultC2MTargets); !strings.HasSuffix(z[0], "MISSED") {
		t.Errorf("a run that placed nothing met the time target: %s", z[0])
	}
}

// TestChunks: the node chunks cover n exactly, none larger than size.
func TestChunks(t *testing.T) {
	for _, tc := range []struct{ n, size, want int }{{10000, 500, 20}, {10001, 500, 21}, {3, 500, 1}, {0, 500, 0}} {
		got := chunks(tc.n, tc.size)
		sum := 0
		for _, k := range got {
			if k < 1 || k > tc.size {
				t.Errorf("chunks(%d, %d): a chunk of %d", tc.n, tc.size, k)
			}
			sum += k
		}
		if sum != tc.n || len(got) != tc.want {
			t.Errorf("chunks(%d, %d) = %d chunks summing to %d, want %d summing to %d", tc.n, tc.size, len(got), sum, tc.want, tc.n)
		}
	}
}
