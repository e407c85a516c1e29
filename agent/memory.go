package agent

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// A server's state lives in its heap, and with Go's default GOGC=100 the
// heap grows to twice the live heap between collections. Go's scavenger
// keeps that headroom (it returns memory only above ~110% of the heap
// goal), so after a burst of placements the RSS stays at about twice what
// the state needs for as long as the agent lives. The memory releaser
// notices the end of a burst (little allocated for quietTicks intervals
// in a row) and then, when the heap holds much more than its live bytes,
// collects and returns the free pages to the system once
// (debug.FreeOSMemory). During a burst it does nothing, so it costs the
// scheduling path no collections: the peak is unchanged, the steady state
// is the live heap. docs/operations.md ("Memory") says so for operators.

// memoryReleaseInterval is how often the releaser samples the heap.
const memoryReleaseInterval = 10 * time.Second

// memSample is what the releaser reads of the runtime at each tick.
type memSample struct {
	// allocs is the cumulative count of bytes allocated on the heap.
	allocs uint64
	// live is the heap's live bytes as of the last collection.
	live uint64
	// held is the heap memory the process holds and has not returned:
	// objects (live or not yet swept), free space inside spans, and
	// free spans not yet released.
	held uint64
}

// memPolicy decides when to release.
type memPolicy struct {
	// quietBytes: an interval that allocated less than
	// max(quietBytes, live/quietFraction) counts as quiet.
	quietBytes    uint64
	quietFraction uint64
	// quietTicks quiet intervals in a row end a burst.
	quietTicks int
	// minSpare: release only when held exceeds live by more than
	// max(minSpare, live/spareFraction).
	minSpare      uint64
	spareFraction uint64
}

// defaultMemPolicy: a burst is over after 2 intervals that each
// allocated less than an eighth of the live heap (at least 32 MiB
// counts as quiet); worth a release when 64 MiB and a quarter of the
// live heap could go back.
var defaultMemPolicy = memPolicy{
	quietBytes: 32 << 20, quietFraction: 8, quietTicks: 2,
	minSpare: 64 << 20, spareFraction: 4,
}

// memReleaser tracks quiet intervals between ticks.
type memReleaser struct {
	policy memPolicy
	prev   memSample
	primed bool
	quiet  int
}

// tick takes this interval's sample and says whether to release now.
func (r *memReleaser) tick(s memSample) bool {
	p := r.policy
	if !r.primed {
		r.prev, r.primed = s, true
		return false
	}
	allocated := s.allocs - r.prev.allocs
	r.prev = s
	if allocated < max(p.quietBytes, s.live/p.quietFraction) {
		r.quiet++
	} else {
		r.quiet = 0
	}
	if r.quiet < p.quietTicks {
		return false
	}
	if s.held <= s.live || s.held-s.live <= max(p.minSpare, s.live/p.spareFraction) {
		return false
	}
	// Released: the next release waits for another burst to end.
	r.quiet = 0
	return true
}

// readMemSample reads the runtime's heap figures.
func readMemSample() memSample {
	names := []string{
		"/gc/heap/allocs:bytes",
		"/gc/heap/live:bytes",
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/heap/unused:bytes",
		"/memory/classes/heap/free:bytes",
	}
	samples := make([]metrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	metrics.Read(samples)
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	return memSample{allocs: v(0), live: v(1), held: v(2) + v(3) + v(4)}
}

// releaseMemory runs the releaser every interval until ctx ends.
func releaseMemory(ctx context.Context, interval time.Duration, log *slog.Logger) {
	runReleaser(ctx, interval, readMemSample, debug.FreeOSMemory, log)
}

// runReleaser is releaseMemory reading the heap with sample and giving
// memory back with release.
//
// live is the live heap as of the last collection: garbage that was still
// referenced then counts as live until the next one (the runtime forces a
// collection at least every two minutes), so a release may come that much
// later than the quiet intervals alone would make it.
func runReleaser(ctx context.Context, interval time.Duration, sample func() memSample, release func(), log *slog.Logger) {
	r := &memReleaser{policy: defaultMemPolicy}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := sample()
		if !r.tick(s) {
			continue
		}
		began := time.Now()
		release()
		after := sample()
		log.Debug("returned free heap memory to the system after a burst",
			"held_mib", s.held>>20, "held_after_mib", after.held>>20, "live_mib", after.live>>20,
			"took", time.Since(began).Round(time.Millisecond))
	}
}
