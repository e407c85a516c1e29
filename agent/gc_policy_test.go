package agent

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{100 << 20, 100},
		{256 << 20, 100},
		{400 << 20, 64},
		{512 << 20, 50},
		{1 << 30, 50},
		{8 << 30, 50},
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d; want %d", c.live>>20, got, c.want)
		}
	}
	// The heap's growth over the live heap never passes the larger of
	// gcHeadroom and gcMinPercent of it.
	for live := uint64(1 << 20); live < 64<<30; live = live * 5 / 4 {
		grow := live * uint64(gcPercentFor(live)) / 100
		if limit := max(uint64(gcHeadroom), live*gcMinPercent/100); grow > limit+live/100 && live > gcHeadroom {
			t.Fatalf("live %d MiB: heap may grow %d MiB, over %d MiB", live>>20, grow>>20, limit>>20)
		}
	}
}

func TestRunGCPolicySetsAfterEachNewCollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	stats := make(chan [2]uint64, 1)
	var set []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		runGCPolicy(ctx, tick, func() (uint64, uint64) { s := <-stats; return s[0], s[1] },
			func(p int) int { set = append(set, p); return 0 })
	}()
	for _, s := range [][2]uint64{
		{1, 10 << 20},  // first collection, small heap: 100
		{1, 2 << 30},   // no new collection: nothing
		{2, 100 << 20}, // same percent as before: nothing
		{3, 1 << 30},   // 50
		{4, 400 << 20}, // 64
	} {
		stats <- s
		tick <- time.Time{}
	}
	stats <- [2]uint64{4, 0}
	tick <- time.Time{} // the previous tick's read is done once this one is taken
	cancel()
	<-done
	if want := []int{100, 50, 64}; !slices.Equal(set, want) {
		t.Fatalf("percents set %v; want %v", set, want)
	}
}
