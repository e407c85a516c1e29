package agent

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestMemReleaserWaitsForTheBurstToEnd: no release while the heap keeps
// allocating, one after quietTicks quiet intervals when enough is held
// beyond the live heap, none when little is, and the next only after
// another burst has ended.
func TestMemReleaserWaitsForTheBurstToEnd(t *testing.T) {
	const mib = 1 << 20
	r := &memReleaser{policy: defaultMemPolicy}
	live, held := uint64(1000*mib), uint64(2000*mib)
	var allocs uint64
	step := func(allocated uint64) bool {
		allocs += allocated
		return r.tick(memSample{allocs: allocs, live: live, held: held})
	}
	if step(0) {
		t.Fatal("released on the first sample")
	}
	// A burst: each interval allocates more than live/8.
	for i := range 5 {
		if step(500 * mib) {
			t.Fatalf("released during the burst (interval %d)", i)
		}
	}
	// The first quiet interval is not enough.
	if step(10 * mib) {
		t.Fatal("released after one quiet interval")
	}
	// A burst again resets the count.
	if step(300 * mib) {
		t.Fatal("released during the burst")
	}
	if step(10 * mib) {
		t.Fatal("released after one quiet interval since the burst")
	}
	if !step(10 * mib) {
		t.Fatal("no release after two quiet intervals with 1000 MiB held beyond the live heap")
	}
	// Released: held falls to near live. Quiet ticks without spare
	// memory release nothing.
	held = live + 40*mib
	for i := range 5 {
		if step(mib) {
			t.Fatalf("released again with only 40 MiB spare (tick %d)", i)
		}
	}
	// A quarter of the live heap, at least 64 MiB, must be spare: 200 MiB
	// of a 1000 MiB heap is not.
	held = live + 200*mib
	if step(mib) {
		t.Fatal("released with 200 MiB spare of a 1000 MiB live heap")
	}
	held = live + 300*mib
	if !step(mib) {
		t.Fatal("no release with 300 MiB spare after a quiet spell")
	}
	// Just released: the next needs two more quiet intervals.
	if step(mib) {
		t.Fatal("released twice in a row")
	}
	if !step(mib) {
		t.Fatal("no release after two more quiet intervals")
	}
	// A small heap never releases: 64 MiB spare at the least.
	small := &memReleaser{policy: defaultMemPolicy}
	for i := range 6 {
		if small.tick(memSample{allocs: uint64(i) * mib, live: 20 * mib, held: 70 * mib}) {
			t.Fatalf("released a 20 MiB heap holding 70 MiB (tick %d)", i)
		}
	}
}

// TestRunReleaserReleasesOnceABurstEnds: the loop samples every interval
// and releases when the policy says so, once per burst: samples of a burst
// (much allocated per interval) release nothing; the quiet intervals after
// it, with the headroom still held, release once; then nothing more.
func TestRunReleaserReleasesOnceABurstEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const mib = 1 << 20
		var (
			mu       sync.Mutex
			allocs   uint64
			held     = uint64(2000 * mib)
			releases []int
			ticks    int
		)
		sample := func() memSample {
			mu.Lock()
			defer mu.Unlock()
			return memSample{allocs: allocs, live: 1000 * mib, held: held}
		}
		release := func() {
			mu.Lock()
			defer mu.Unlock()
			releases = append(releases, ticks)
			held = 1010 * mib
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			runReleaser(ctx, time.Second, sample, release, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		step := func(allocated uint64) {
			mu.Lock()
			allocs += allocated
			ticks++
			mu.Unlock()
			time.Sleep(time.Second)
			synctest.Wait()
		}
		for range 5 {
			step(500 * mib) // a burst
		}
		for range 6 {
			step(mib) // quiet
		}
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(releases) != 1 || releases[0] < 7 {
			t.Fatalf("released at ticks %v, want once, after two quiet intervals (tick 7 or later)", releases)
		}
	})
}

// TestReadMemSampleSeesGarbageGoBack: the runtime figures the releaser
// reads are real: garbage raises what the heap holds beyond the live
// heap, and FreeOSMemory (the release) returns it.
func TestReadMemSampleSeesGarbageGoBack(t *testing.T) {
	released := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := readMemSample()
	garbage := make([][]byte, 0, 256)
	for range 256 {
		garbage = append(garbage, make([]byte, 1<<20))
	}
	runtime.KeepAlive(garbage)
	full := readMemSample()
	if full.allocs < before.allocs+256<<20 {
		t.Fatalf("allocs grew %d bytes, want at least 256 MiB", full.allocs-before.allocs)
	}
	if full.held < 256<<20 {
		t.Fatalf("held %d bytes with 256 MiB just allocated", full.held)
	}
	garbage = nil
	rel := released()
	runtime.GC()
	debug.FreeOSMemory()
	after := readMemSample()
	if after.held >= full.held-128<<20 {
		t.Fatalf("held %d MiB after the release, was %d MiB with 256 MiB of garbage", after.held>>20, full.held>>20)
	}
	if got := released(); got < rel+128<<20 {
		t.Fatalf("released %d MiB more, want at least 128", (got-rel)>>20)
	}
}
