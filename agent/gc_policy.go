package agent

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The agent's garbage collection policy: the heap's headroom over the live
// heap is bounded in bytes, not only in proportion.
//
// Go's default (GOGC=100) lets the heap grow to twice the live heap before
// collecting, and the process's RSS follows the largest heap. A server
// holding a million allocations has gigabytes of live state, almost all of
// it long-lived, so doubling it buys little: the garbage a placement makes
// is the same whatever the state's size. Up to gcHeadroom of live heap the
// default stands; above, the headroom stays gcHeadroom until it is
// gcMinPercent of the live heap, and then grows in proportion. A collection
// marks the live heap, so collecting more often costs CPU in proportion to
// the state: docs/scale.md has the trade measured.
//
// An operator who sets GOGC or GOMEMLIMIT in the environment keeps full
// control: the policy does not run.
const (
	gcHeadroom   = 256 << 20
	gcMinPercent = 50
	// gcPolicyEvery is how often the policy looks at the last collection.
	gcPolicyEvery = time.Second
)

// gcPercentFor is the GOGC for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live <= gcHeadroom {
		return 100
	}
	return max(gcMinPercent, int(gcHeadroom*100/live))
}

// gcStats is what the policy reads of the runtime: the number of completed
// collections and the live heap the last one found.
type gcStats func() (cycles, live uint64)

// runtimeGCStats reads gcStats from runtime/metrics.
func runtimeGCStats() (cycles, live uint64) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0, 0
	}
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// startGCPolicy runs the policy until the returned stop is called, unless
// the environment sets GOGC or GOMEMLIMIT (then stop does nothing).
// debug.SetGCPercent is process-wide: one policy per process, started by
// the agent command.
func startGCPolicy() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ticker := time.NewTicker(gcPolicyEvery)
	go func() {
		defer close(done)
		runGCPolicy(ctx, ticker.C, runtimeGCStats, debug.SetGCPercent)
	}()
	return func() {
		cancel()
		ticker.Stop()
		<-done
		debug.SetGCPercent(100)
	}
}

// runGCPolicy sets the GC percent through set after each tick that follows
// a new collection, until ctx ends.
func runGCPolicy(ctx context.Context, tick <-chan time.Time, read gcStats, set func(int) int) {
	var seen uint64
	current := -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		cycles, live := read()
		if cycles == seen {
			continue
		}
		seen = cycles
		if p := gcPercentFor(live); p != current {
			set(p)
			current = p
		}
	}
}
