package client

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/state"
)

// TestUpdaterGather: when a batch goes, under the fake clock of
// testing/synctest, with a 200 ms interval: a change after a quiet spell
// goes once changes have settled for 5 ms; a burst of changes goes 5 ms
// after its last, or 10 ms after a quiet spell ended if it lasts longer;
// a sustained stream goes 10 ms after a quiet spell and then once per
// interval counted from the previous batch's start; no batch goes sooner
// than 50 ms after the previous one started; a cancelled context ends
// the wait.
func TestUpdaterGather(t *testing.T) {
	const interval = 200 * time.Millisecond
	ms := time.Millisecond
	cases := []struct {
		name string
		// sincePrev is how long ago the previous batch started (0: none,
		// a quiet spell).
		sincePrev time.Duration
		// marks more changes come, every gap, after the one that kicked.
		marks int
		gap   time.Duration
		want  time.Duration
	}{
		{name: "one change after a quiet spell", want: 5 * ms},
		{name: "a burst after a quiet spell", marks: 28, gap: ms, want: 10 * ms},
		{name: "a stream after a quiet spell", marks: 1000, gap: ms, want: 10 * ms},
		{name: "one change 10 ms after a batch", sincePrev: 10 * ms, want: 40 * ms},
		{name: "a burst 10 ms after a batch", sincePrev: 10 * ms, marks: 78, gap: ms, want: 85 * ms},
		{name: "a stream 10 ms after a batch", sincePrev: 10 * ms, marks: 1000, gap: ms, want: 190 * ms},
		{name: "a stream 150 ms after a batch", sincePrev: 150 * ms, marks: 1000, gap: ms, want: 50 * ms},
		{name: "changes 3 ms apart after a quiet spell", marks: 4, gap: 3 * ms, want: 10 * ms},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				u := &updater{interval: interval, now: time.Now, marked: map[string]*allocRunner{},
					pending: map[string]*state.AllocClientUpdate{}, kick: make(chan struct{}, 1)}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				ar := &allocRunner{id: "a"}
				start := time.Now()
				var last time.Time
				if tc.sincePrev > 0 {
					last = start.Add(-tc.sincePrev)
				}
				u.mark(ar)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for range tc.marks {
						select {
						case <-ctx.Done():
							return
						case <-time.After(tc.gap):
						}
						u.mark(ar)
					}
				}()
				defer func() { <-done }()
				if !u.gather(ctx, last) {
					t.Fatal("gather ended without its context ending")
				}
				if got := time.Since(start); got != tc.want {
					t.Errorf("batch went after %v, want %v", got, tc.want)
				}
				cancel()
			})
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			u := &updater{interval: interval, now: time.Now, marked: map[string]*allocRunner{},
				pending: map[string]*state.AllocClientUpdate{}, kick: make(chan struct{}, 1)}
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				time.Sleep(ms)
				cancel()
			}()
			if u.gather(ctx, time.Now()) {
				t.Fatal("gather went on after its context ended")
			}
		})
	})
}
