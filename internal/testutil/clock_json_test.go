package testutil

import (
	"io"
	"testing"
	"time"
)

func TestClockAdvances(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now = %v, want %v", c.Now(), start)
	}
	c.Advance(90 * time.Second)
	if got := c.Now().Sub(start); got != 90*time.Second {
		t.Errorf("advanced by %v, want 90s", got)
	}
}

func TestJSONEqualIgnoresKeyOrder(t *testing.T) {
	if !JSONEqual(t, []byte(`{"a":1,"b":[true,null]}`), ` { "b": [true, null], "a": 1 } `) {
		t.Error("same values reported unequal")
	}
	if JSONEqual(t, []byte(`{"a":1}`), `{"a":2}`) {
		t.Error("different values reported equal")
	}
}

func TestBodyEncodesByType(t *testing.T) {
	if Body(t, nil) != nil {
		t.Error("nil body is not nil")
	}
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"raw", "raw"},
		{[]byte("bytes"), "bytes"},
		{map[string]int{"n": 1}, `{"n":1}`},
	} {
		b, err := io.ReadAll(Body(t, tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("Body(%v) = %q, %v; want %q", tc.in, b, err, tc.want)
		}
	}
}
