package blocking

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	memdb "github.com/hashicorp/go-memdb"
)

// fakeStore is a one-value store with a watch channel per write.
type fakeStore struct {
	abandon chan struct{}
	index   atomic.Uint64
	changed chan struct{}
}

func newFakeStore() *fakeStore {
	return &fakeStore{abandon: make(chan struct{}), changed: make(chan struct{})}
}

func (f *fakeStore) AbandonCh() <-chan struct{} { return f.abandon }

func (f *fakeStore) write(index uint64) {
	f.index.Store(index)
	old := f.changed
	f.changed = make(chan struct{})
	close(old)
}

func (f *fakeStore) query(runs *int) Query {
	return func(ws memdb.WatchSet) (uint64, error) {
		*runs++
		if ws != nil {
			ws.Add(f.changed)
		}
		return f.index.Load(), nil
	}
}

func TestRunZeroIndexDoesNotBlock(t *testing.T) {
	f := newFakeStore()
	runs := 0
	idx, err := Run(context.Background(), f, Options{}, f.query(&runs))
	if err != nil || runs != 1 {
		t.Fatalf("err=%v runs=%d, want one run", err, runs)
	}
	if idx != 1 {
		t.Fatalf("index %d, want floor of 1 for an empty store", idx)
	}
}

func TestRunReturnsAtOnceWhenNewer(t *testing.T) {
	f := newFakeStore()
	f.write(10)
	runs := 0
	idx, err := Run(context.Background(), f, Options{MinIndex: 5, Wait: time.Hour}, f.query(&runs))
	if err != nil || idx != 10 || runs != 1 {
		t.Fatalf("idx=%d err=%v runs=%d", idx, err, runs)
	}
}

func TestRunWakesOnWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.write(5)
		runs := 0
		done := make(chan uint64)
		go func() {
			idx, _ := Run(context.Background(), f, Options{MinIndex: 5, Wait: time.Minute}, f.query(&runs))
			done <- idx
		}()
		synctest.Wait() // the reader is parked on its watch set
		select {
		case <-done:
			t.Fatal("returned before any write")
		default:
		}
		f.write(6)
		if idx := <-done; idx != 6 {
			t.Fatalf("woke with index %d, want 6", idx)
		}
		if runs != 2 {
			t.Fatalf("query ran %d times, want 2", runs)
		}
	})
}

func TestRunTimesOutWithLastResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.write(7)
		runs := 0
		start := time.Now()
		idx, err := Run(context.Background(), f, Options{MinIndex: 7, Wait: 2 * time.Second}, f.query(&runs))
		elapsed := time.Since(start)
		if err != nil || idx != 7 {
			t.Fatalf("idx=%d err=%v", idx, err)
		}
		if elapsed < 2*time.Second || elapsed > 2*time.Second+2*time.Second/jitterFraction+time.Millisecond {
			t.Fatalf("waited %v, want 2s plus at most 1/16 jitter", elapsed)
		}
	})
}

func TestRunCapsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		runs := 0
		start := time.Now()
		Run(context.Background(), f, Options{MinIndex: 3, Wait: time.Hour}, f.query(&runs))
		if elapsed := time.Since(start); elapsed > MaxWait+MaxWait/jitterFraction+time.Millisecond {
			t.Fatalf("waited %v, beyond the cap", elapsed)
		}
	})
}

func TestRunRerunsWhenStoreAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.write(4)
		runs := 0
		done := make(chan uint64)
		go func() {
			idx, _ := Run(context.Background(), f, Options{MinIndex: 4, Wait: time.Minute}, f.query(&runs))
			done <- idx
		}()
		synctest.Wait()
		// A restore replaces the store: the index moves without the
		// query's own watch channel firing.
		f.index.Store(9)
		close(f.abandon)
		if idx := <-done; idx != 9 {
			t.Fatalf("index %d after abandon, want 9", idx)
		}
	})
}

func TestRunCancelledReturnsLastResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		f.write(2)
		ctx, cancel := context.WithCancel(context.Background())
		runs := 0
		done := make(chan error)
		go func() {
			_, err := Run(ctx, f, Options{MinIndex: 2}, f.query(&runs))
			done <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("cancel returned %v, want nil", err)
		}
	})
}

func TestRunPropagatesQueryError(t *testing.T) {
	f := newFakeStore()
	boom := errors.New("boom")
	_, err := Run(context.Background(), f, Options{MinIndex: 1}, func(memdb.WatchSet) (uint64, error) { return 0, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
}
