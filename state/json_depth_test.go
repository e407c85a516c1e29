package state

import (
	"strings"
	"testing"
)

// The offset names the first bracket past the limit; brackets in strings
// (escaped quotes included) and stray closers do not count.
func TestJSONDepthOffset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want int
	}{
		{`{"a":[1]}`, 2, 0},
		{`{"a":[[1]]}`, 2, 7},
		{`{"a":"[[[[\"[[["}`, 1, 0},
		{`]]]]` + strings.Repeat("[", 3), 2, 7},
		{strings.Repeat("[", 60_000), 100, 101},
	} {
		if got := JSONDepthOffset([]byte(tc.in), tc.max); got != tc.want {
			t.Errorf("JSONDepthOffset(%.20q, %d) = %d, want %d", tc.in, tc.max, got, tc.want)
		}
	}
}
