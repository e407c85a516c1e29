package main

import (
	"slices"
	"strings"
	"testing"
)

// -docker-floor-parallel takes a comma-separated list of 1 to 256, at most
// 16 of them; an empty one measures nothing.
func TestIntList(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "4": {4}, "1, 2,4,,8": {1, 2, 4, 8}, "256": {256}} {
		got, err := intList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("intList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "257", "-1", "x", "4;8", strings.Repeat("1,", 17)} {
		if got, err := intList(in); err == nil {
			t.Errorf("intList(%q) = %v, want an error", in, got)
		}
	}
}
