package http

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestUnavailableLogSamples checks that a flood of 503 answers writes one
// warning a second, the next one counting those left out.
func TestUnavailableLogSamples(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	var u unavailableLog
	r := httptest.NewRequest("PUT", "/v1/node/n1/heartbeat", nil)
	err := errors.New("scheduler: this server is not the cluster leader")
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		u.log(l, r, err, t0.Add(time.Duration(i)*time.Millisecond/2))
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("1,000 answers in half a second wrote %d lines, want 1:\n%s", n, buf.String())
	}
	u.log(l, r, err, t0.Add(1500*time.Millisecond))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines after a second, got %d:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "unlogged_since_last=0") {
		t.Errorf("first line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "unlogged_since_last=999") || !strings.Contains(lines[1], "/v1/node/n1/heartbeat") {
		t.Errorf("second line should count the 999 left out: %s", lines[1])
	}
}
