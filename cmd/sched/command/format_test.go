package command

import (
	"testing"
	"time"
)

func TestAgo(t *testing.T) {
	c := &cli{now: func() time.Time { return testNow }, loc: time.UTC}
	cases := []struct {
		before time.Duration
		want   string
	}{
		{0, "just now"},
		{400 * time.Millisecond, "just now"},
		{12 * time.Second, "12s ago"},
		{3*time.Minute + 12*time.Second, "3m12s ago"},
		{time.Hour + 5*time.Second, "1h ago"},
		{time.Hour + 30*time.Minute + 5*time.Second, "1h30m ago"},
		{50*time.Hour + 59*time.Minute, "2d2h ago"},
		{-5 * time.Second, "just now"}, // a clock ahead of ours
	}
	for _, tc := range cases {
		if got := c.ago(testNow.Add(-tc.before).UnixNano()); got != tc.want {
			t.Errorf("ago(%v) = %q, want %q", tc.before, got, tc.want)
		}
	}
	if got := c.ago(0); got != "<none>" {
		t.Errorf("ago(0) = %q", got)
	}
}

func TestFormatTime(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database")
	}
	c := &cli{loc: ny}
	if got := c.formatTime(testNow.UnixNano()); got != "2025-03-01T07:00:00-05:00" {
		t.Errorf("formatTime = %q", got)
	}
	if got := c.formatTime(0); got != "<none>" {
		t.Errorf("formatTime(0) = %q", got)
	}
}

func TestShortID(t *testing.T) {
	cases := []struct {
		id      string
		verbose bool
		want    string
	}{
		{"0123456789abcdef", false, "01234567"},
		{"0123456789abcdef", true, "0123456789abcdef"},
		{"abc", false, "abc"},
	}
	for _, tc := range cases {
		if got := shortID(tc.id, tc.verbose); got != tc.want {
			t.Errorf("shortID(%q, %v) = %q, want %q", tc.id, tc.verbose, got, tc.want)
		}
	}
}
