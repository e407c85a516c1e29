package state

import (
	"errors"
	"strings"
	"testing"
)

func TestNestingDepthStopsAtTheLimit(t *testing.T) {
	var v any = "x"
	for range 100_000 {
		v = []any{v}
	}
	if d := NestingDepth(v, 10); d != 12 {
		t.Errorf("depth counted to %d, want it to stop at limit+2 = 12", d)
	}
	if d := NestingDepth(map[string]any{"a": []any{1}}, 10); d != 2 {
		t.Errorf("depth %d, want 2", d)
	}
}

func TestJobLimitsCheckCounts(t *testing.T) {
	j := &Job{TaskGroups: []*TaskGroup{{Count: 10_001}, nil, {Count: 1 << 62}}}
	err := JobLimits{}.CheckCounts(j)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("CheckCounts: %v", err)
	}
	for _, want := range []string{"TaskGroups[0].Count", "TaskGroups[2].Count", "limit of 100000 allocations per job"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if err := (JobLimits{MaxGroupCount: 5, MaxJobCount: 6}).CheckCounts(&Job{TaskGroups: []*TaskGroup{{Count: 3}, {Count: 3}}}); err != nil {
		t.Errorf("within the limits: %v", err)
	}
}

func TestNameProblem(t *testing.T) {
	for name, bad := range map[string]bool{"web": false, "a.b": false, "..": true, ".": true, "a/b": true, `a\b`: true, "a\nb": true, "...": false} {
		if got := nameProblem("task", name) != ""; got != bad {
			t.Errorf("%q: refused %v, want %v", name, got, bad)
		}
	}
}
