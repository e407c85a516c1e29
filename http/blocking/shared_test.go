package blocking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	memdb "github.com/hashicorp/go-memdb"
)

// table is a one-value store for Shared: its value is its index, and a
// write closes the channel of the value read before it.
type table struct {
	mu      sync.Mutex
	index   uint64
	changed chan struct{}
	abandon chan struct{}
	// runs counts the computations with a watch set (of a group) and
	// without (of one caller).
	runs, onceRuns atomic.Int64
	// gate, when set, holds every group computation until it is closed.
	gate chan struct{}
}

func newTable(index uint64) *table {
	return &table{index: index, changed: make(chan struct{}), abandon: make(chan struct{})}
}

func (t *table) AbandonCh() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.abandon
}

func (t *table) write(index uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.index = index
	close(t.changed)
	t.changed = make(chan struct{})
}

// restore replaces the store: the index moves and only the abandon
// channel fires.
func (t *table) restore(index uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.index = index
	close(t.abandon)
	t.abandon = make(chan struct{})
	t.changed = make(chan struct{})
}

// compute answers "<name>@<index>".
func (t *table) compute(name string) Compute[string] {
	return func(ctx context.Context, ws memdb.WatchSet) (uint64, string, error) {
		if ws == nil {
			t.onceRuns.Add(1)
		} else {
			t.runs.Add(1)
			t.mu.Lock()
			gate := t.gate
			t.mu.Unlock()
			if gate != nil {
				<-gate
			}
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		ws.Add(t.changed)
		return t.index, fmt.Sprintf("%s@%d", name, t.index), nil
	}
}

type result struct {
	a   Answer[string]
	err error
}

// waitAsync runs one caller of Wait in its own goroutine.
func waitAsync(s *Shared[string, string], key string, opts Options, c Compute[string]) <-chan result {
	done := make(chan result, 1)
	go func() {
		a, err := s.Wait(context.Background(), key, opts, c)
		done <- result{a, err}
	}()
	return done
}

func TestSharedComputesOnceForManyWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(5)
		s := NewShared[string, string](tb)
		defer s.Close()
		const n = 500
		var dones []<-chan result
		for range n {
			dones = append(dones, waitAsync(s, "jobs", Options{MinIndex: 5, Wait: time.Minute}, tb.compute("jobs")))
		}
		synctest.Wait()
		if got := tb.runs.Load(); got != 1 {
			t.Fatalf("%d waiters ran the query %d times, want once", n, got)
		}
		tb.write(6)
		for _, d := range dones {
			r := <-d
			if r.err != nil || r.a.Index != 6 || r.a.Value != "jobs@6" {
				t.Fatalf("answer %+v %v, want jobs@6", r.a, r.err)
			}
		}
		if got := tb.runs.Load(); got != 2 {
			t.Fatalf("one write: the query ran %d times, want 2 (first and after the write)", got)
		}
		if got := tb.onceRuns.Load(); got != 0 {
			t.Fatalf("%d callers computed their own answer", got)
		}
	})
}

func TestSharedDifferentKeysDoNotShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(3)
		s := NewShared[string, string](tb)
		defer s.Close()
		a := waitAsync(s, "ns=a", Options{MinIndex: 3}, tb.compute("a"))
		b := waitAsync(s, "ns=b", Options{MinIndex: 3}, tb.compute("b"))
		synctest.Wait()
		if got := tb.runs.Load(); got != 2 {
			t.Fatalf("two questions ran %d queries, want 2", got)
		}
		tb.write(4)
		if r := <-a; r.a.Value != "a@4" {
			t.Fatalf("a got %q", r.a.Value)
		}
		if r := <-b; r.a.Value != "b@4" {
			t.Fatalf("b got %q", r.a.Value)
		}
	})
}

func TestSharedLimitAnswersExcessAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(8)
		s := NewShared[string, string](tb)
		defer s.Close()
		limit := NewLimit(2)
		opts := Options{MinIndex: 8, Wait: time.Minute, Limit: limit}
		first := waitAsync(s, "jobs", opts, tb.compute("jobs"))
		second := waitAsync(s, "jobs", opts, tb.compute("jobs"))
		synctest.Wait()
		if got := limit.Waiting(); got != 2 {
			t.Fatalf("%d waiting, want 2", got)
		}
		start := time.Now()
		a, err := s.Wait(context.Background(), "jobs", opts, tb.compute("jobs"))
		if err != nil || !a.Early || a.Index != 8 || a.Value != "jobs@8" {
			t.Fatalf("third caller: %+v %v, want the current answer at once, Early", a, err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("third caller waited %v", time.Since(start))
		}
		if limit.Early() != 1 {
			t.Fatalf("Early() = %d, want 1", limit.Early())
		}
		// Run honours the same limit.
		idx, err := Run(context.Background(), tb, opts, func(ws memdb.WatchSet) (uint64, error) {
			if ws != nil {
				t.Error("Run over the limit watched")
			}
			return 8, nil
		})
		if err != nil || idx != 8 || limit.Early() != 2 {
			t.Fatalf("Run over the limit: %d %v, early %d", idx, err, limit.Early())
		}
		tb.write(9)
		<-first
		<-second
		if got := limit.Waiting(); got != 0 {
			t.Fatalf("%d still counted as waiting", got)
		}
	})
}

func TestSharedZeroIndexAnswersAtOnce(t *testing.T) {
	tb := newTable(0)
	s := NewShared[string, string](tb)
	defer s.Close()
	a, err := s.Wait(context.Background(), "jobs", Options{}, tb.compute("jobs"))
	if err != nil || a.Index != 1 {
		t.Fatalf("%+v %v, want index 1 (the floor) at once", a, err)
	}
	if tb.runs.Load() != 0 || tb.onceRuns.Load() != 1 {
		t.Fatalf("runs %d with a watch, %d without; want one without", tb.runs.Load(), tb.onceRuns.Load())
	}
}

func TestSharedRerunsWhenStoreAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(4)
		s := NewShared[string, string](tb)
		defer s.Close()
		done := waitAsync(s, "jobs", Options{MinIndex: 4, Wait: time.Minute}, tb.compute("jobs"))
		synctest.Wait()
		tb.restore(9)
		if r := <-done; r.a.Index != 9 {
			t.Fatalf("index %d after a restore, want 9", r.a.Index)
		}
	})
}

func TestSharedTimeoutReturnsLastAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(7)
		s := NewShared[string, string](tb)
		defer s.Close()
		start := time.Now()
		a, err := s.Wait(context.Background(), "jobs", Options{MinIndex: 7, Wait: 2 * time.Second}, tb.compute("jobs"))
		elapsed := time.Since(start)
		if err != nil || a.Index != 7 || a.Value != "jobs@7" {
			t.Fatalf("%+v %v", a, err)
		}
		if elapsed < 2*time.Second || elapsed > 2*time.Second+2*time.Second/jitterFraction+time.Millisecond {
			t.Fatalf("waited %v, want 2s plus at most 1/16 jitter", elapsed)
		}
		synctest.Wait()
		if tb.runs.Load() != 1 || tb.onceRuns.Load() != 0 {
			t.Fatalf("runs %d/%d, want the group's one", tb.runs.Load(), tb.onceRuns.Load())
		}
	})
}

func TestSharedCancelledReturnsLastAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(2)
		s := NewShared[string, string](tb)
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan result)
		go func() {
			a, err := s.Wait(ctx, "jobs", Options{MinIndex: 2}, tb.compute("jobs"))
			done <- result{a, err}
		}()
		synctest.Wait()
		cancel()
		if r := <-done; r.err != nil || r.a.Index != 2 {
			t.Fatalf("%+v, want the last answer and no error", r)
		}
		synctest.Wait()
		s.mu.Lock()
		left := len(s.groups)
		s.mu.Unlock()
		if left != 0 {
			t.Fatalf("%d groups left after the last caller", left)
		}
	})
}

// A caller that arrives while the group's answer is stale (a write landed,
// the rerun has not finished) must not get the stale answer, even though
// its index passes the caller's.
func TestSharedNewCallerNeverGetsAnAnswerOlderThanItsArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(5)
		s := NewShared[string, string](tb)
		defer s.Close()
		first := waitAsync(s, "jobs", Options{MinIndex: 4, Wait: time.Minute}, tb.compute("jobs"))
		holder := waitAsync(s, "jobs", Options{MinIndex: 5, Wait: time.Minute}, tb.compute("jobs"))
		if r := <-first; r.a.Index != 5 {
			t.Fatalf("first: %+v", r)
		}
		synctest.Wait() // holder keeps the group, its answer at 5
		gate := make(chan struct{})
		tb.mu.Lock()
		tb.gate = gate
		tb.mu.Unlock()
		tb.write(6) // the rerun is held at the gate
		synctest.Wait()
		late := waitAsync(s, "jobs", Options{MinIndex: 3, Wait: time.Minute}, tb.compute("jobs"))
		synctest.Wait()
		select {
		case r := <-late:
			t.Fatalf("late caller got %+v, computed before it arrived", r.a)
		default:
		}
		close(gate)
		if r := <-late; r.a.Index != 6 {
			t.Fatalf("late caller got index %d, want 6", r.a.Index)
		}
		if r := <-holder; r.a.Index != 6 {
			t.Fatalf("holder got index %d, want 6", r.a.Index)
		}
	})
}

func TestSharedErrorEndsEveryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(1)
		s := NewShared[string, string](tb)
		defer s.Close()
		boom := errors.New("boom")
		var fail atomic.Bool
		c := func(ctx context.Context, ws memdb.WatchSet) (uint64, string, error) {
			i, v, err := tb.compute("x")(ctx, ws)
			if fail.Load() {
				return i, "", boom
			}
			return i, v, err
		}
		a := waitAsync(s, "x", Options{MinIndex: 1}, c)
		b := waitAsync(s, "x", Options{MinIndex: 1}, c)
		synctest.Wait()
		fail.Store(true)
		tb.write(2)
		for _, d := range []<-chan result{a, b} {
			if r := <-d; !errors.Is(r.err, boom) {
				t.Fatalf("err %v, want boom", r.err)
			}
		}
		fail.Store(false)
		// The next caller starts again.
		if r, err := s.Wait(context.Background(), "x", Options{MinIndex: 1}, c); err != nil || r.Index != 2 {
			t.Fatalf("after the error: %+v %v", r, err)
		}
	})
}

// TestSharedAnswerBegunAfterTheCallerHolds: an answer whose computation
// began after the caller joined holds every write before the call, even
// when a write made it stale while it was computed: under a stream of
// writes, each overlapping a computation, the caller is answered by the
// first one, where waiting for an answer that no write overlapped kept it
// (and the query's reruns) going until the stream stopped.
// (TestSharedNewCallerNeverGetsAnAnswerOlderThanItsArrival checks that
// one begun before the caller is still not taken stale.)
func TestSharedAnswerBegunAfterTheCallerHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(5)
		s := NewShared[string, string](tb)
		defer s.Close()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// A group computation takes 2 ms after its read; a write comes
		// every millisecond for 100 ms.
		slow := func(ctx context.Context, ws memdb.WatchSet) (uint64, string, error) {
			index, v, err := tb.compute("jobs")(ctx, ws)
			if ws != nil {
				time.Sleep(2 * time.Millisecond)
			}
			return index, v, err
		}
		stream := make(chan struct{})
		go func() {
			defer close(stream)
			for i := range uint64(100) {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Millisecond):
				}
				tb.write(6 + i)
			}
		}()
		start := time.Now()
		r := <-waitAsync(s, "jobs", Options{MinIndex: 4, Wait: time.Minute}, slow)
		if r.err != nil || r.a.Index != 5 {
			t.Fatalf("answer %+v %v, want the first computation's, at 5", r.a, r.err)
		}
		if got := time.Since(start); got != 2*time.Millisecond {
			t.Errorf("answered after %v, want 2ms (the first computation)", got)
		}
		cancel()
		<-stream
	})
}
