package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Reports that arrive together are written in one command; a batch the
// state machine refuses is written report by report, so only the bad one
// fails.
func TestClientUpdateBatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var writes [][]string
		b := &clientUpdateBatcher{apply: func(_ context.Context, req *store.AllocClientUpdateRequest) (uint64, error) {
			mu.Lock()
			defer mu.Unlock()
			var ids []string
			for _, a := range req.Allocs {
				ids = append(ids, a.ID)
			}
			slices.Sort(ids)
			writes = append(writes, ids)
			if slices.Contains(ids, "bad") {
				return 0, state.Invalidf("Allocs", "refused")
			}
			return uint64(len(writes)), nil
		}}
		submit := func(ids ...string) (chan uint64, chan error) {
			idx, errc := make(chan uint64, 1), make(chan error, 1)
			req := &store.AllocClientUpdateRequest{}
			for _, id := range ids {
				req.Allocs = append(req.Allocs, &state.Allocation{ID: id})
			}
			go func() {
				i, err := b.submit(context.Background(), req)
				idx <- i
				errc <- err
			}()
			return idx, errc
		}
		// Three nodes at once: one write.
		i1, e1 := submit("a1")
		i2, e2 := submit("b1", "b2")
		i3, e3 := submit("c1")
		synctest.Wait()
		for _, e := range []chan error{e1, e2, e3} {
			if err := <-e; err != nil {
				t.Fatal(err)
			}
		}
		if a, b2, c := <-i1, <-i2, <-i3; a != 1 || b2 != 1 || c != 1 || len(writes) != 1 || fmt.Sprint(writes[0]) != "[a1 b1 b2 c1]" {
			t.Fatalf("indexes %d %d %d, writes %v: want one write of all four", a, b2, c, writes)
		}
		// A refused batch: each report alone, the bad one fails alone.
		writes = nil
		_, eg := submit("g1")
		_, eb := submit("bad")
		synctest.Wait()
		if err := <-eg; err != nil {
			t.Errorf("a good report failed with a bad one: %v", err)
		}
		if err := <-eb; !errors.Is(err, state.ErrInvalid) {
			t.Errorf("the bad report: %v", err)
		}
		if len(writes) != 3 {
			t.Errorf("writes %v: want the batch, then each report", writes)
		}
		// A full batch, and a report of clientUpdateAlone allocations
		// however full the batch, are written without waiting for the
		// window (the bubble's clock does not move); a small report
		// waits it out.
		ids := func(prefix string, n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprint(prefix, i)
			}
			return out
		}
		for _, tc := range []struct {
			name string
			ids  []string
			wait time.Duration
		}{
			{"a full batch", ids("x", clientUpdateBatchMax), 0},
			{"a report of clientUpdateAlone", ids("y", clientUpdateAlone), 0},
			{"a report of one less", ids("z", clientUpdateAlone-1), clientUpdateWindow},
		} {
			writes = nil
			start := time.Now()
			_, e := submit(tc.ids...)
			if err := <-e; err != nil || len(writes) != 1 {
				t.Errorf("%s: %v, %d writes", tc.name, err, len(writes))
			}
			if waited := time.Since(start); waited != tc.wait {
				t.Errorf("%s waited %v, want %v", tc.name, waited, tc.wait)
			}
		}
	})
}
