package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
)

func TestCoalescerSharesCallsButNeverAnOlderOne(t *testing.T) {
	var c coalescer
	var calls atomic.Int64
	started := make(chan int64, 10)
	release := make(chan struct{})
	fn := func(context.Context) (uint64, error) {
		n := calls.Add(1)
		started <- n
		<-release
		return uint64(n * 100), nil
	}

	// A starts call 1.
	aDone := make(chan uint64)
	go func() {
		v, _ := c.do(context.Background(), fn)
		aDone <- v
	}()
	if n := <-started; n != 1 {
		t.Fatalf("first call is #%d", n)
	}
	// B and C arrive while call 1 is in flight: they must not take its
	// answer (it may predate their writes), but share call 2.
	var wg sync.WaitGroup
	results := make([]uint64, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = c.do(context.Background(), fn)
		}()
	}
	// Wait until at least one has queued for the next call. One that
	// arrives only after call 2 started waits for call 3 instead; either
	// way no one gets call 1's answer.
	testutil.WaitFor(t, 5*time.Second, "a caller queued for the next call", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.next != nil
	})
	release <- struct{}{} // call 1 ends
	if v := <-aDone; v != 100 {
		t.Fatalf("A got %d, want call 1's 100", v)
	}
	if n := <-started; n != 2 {
		t.Fatalf("second call is #%d", n)
	}
	close(release)
	wg.Wait()
	for i, v := range results {
		if v < 200 {
			t.Errorf("caller %d got %d: an answer from a call that started before it", i, v)
		}
	}
	if n := calls.Load(); n > 3 {
		t.Errorf("%d calls for 3 callers", n)
	}
}

func TestCoalescerCallerContext(t *testing.T) {
	var c coalescer
	block := make(chan struct{})
	defer close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.do(ctx, func(context.Context) (uint64, error) { <-block; return 1, nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
}
