package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schedhq/sched/internal/testutil"
	"github.com/schedhq/sched/state"
)

// stubLocal is a Config.Local that refuses everything (handled false) or,
// with takeReports, takes the client's reports and records them; it
// counts what it was asked.
type stubLocal struct {
	takeReports   bool
	reads, writes atomic.Int64
	mu            sync.Mutex
	reported      map[string]string // allocation ID -> last client status
}

func (s *stubLocal) NodeAllocChanges(context.Context, string, uint64, uint64, bool, time.Duration) (*state.NodeAllocChanges, uint64, bool, error) {
	s.reads.Add(1)
	return nil, 0, false, nil
}

func (s *stubLocal) UpdateAllocs(_ context.Context, _ string, ups []*state.AllocClientUpdate) (bool, error) {
	s.writes.Add(1)
	if !s.takeReports {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range ups {
		s.reported[u.ID] = u.ClientStatus
	}
	return true, nil
}

func (s *stubLocal) status(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reported[id]
}

// A client whose local server declines (a follower cut off from its
// leader, a server that does not lead) reads and reports by HTTP; one
// whose local server takes its reports sends none by HTTP.
func TestLocalServerDeclinedOrTaken(t *testing.T) {
	t.Run("declined", func(t *testing.T) {
		fs := newFakeServer(t)
		local := &stubLocal{}
		c := testClient(t, fs, "", func(cfg *Config) { cfg.Local = local })
		a := allocFor(c, job(state.JobTypeService, mock("x", nil)))
		fs.addAlloc(a)
		waitAllocStatus(t, fs, a.ID, state.AllocClientStatusRunning)
		if local.reads.Load() == 0 || local.writes.Load() == 0 {
			t.Fatalf("the local server was asked %d reads, %d reports: want both tried first", local.reads.Load(), local.writes.Load())
		}
	})
	t.Run("reports taken", func(t *testing.T) {
		fs := newFakeServer(t)
		local := &stubLocal{takeReports: true, reported: map[string]string{}}
		c := testClient(t, fs, "", func(cfg *Config) { cfg.Local = local })
		a := allocFor(c, job(state.JobTypeService, mock("x", nil)))
		fs.addAlloc(a)
		testutil.WaitForErr(t, 10*time.Second, "the local server to hear the allocation runs", func() error {
			if st := local.status(a.ID); st != state.AllocClientStatusRunning {
				return fmt.Errorf("last status reported %q", st)
			}
			return nil
		})
		if _, _, reqs, _ := fs.counts(); reqs != 0 {
			t.Fatalf("%d reports by HTTP, want none: the local server took them", reqs)
		}
	})
}

// After a wake-up the local server answered, the watch lets changes
// gather for LocalWatchGather (10 ms by default), not WatchGather
// (100 ms): such a wake-up costs no request and no JSON.
func TestLocalWakeUpsGatherLess(t *testing.T) {
	fs := newFakeServer(t)
	c := testClient(t, fs, "")
	if got := c.gatherAfter(true); got != 10*time.Millisecond {
		t.Fatalf("after a local wake-up: %v, want %v", got, DefaultLocalWatchGather)
	}
	if got := c.gatherAfter(false); got != DefaultWatchGather {
		t.Fatalf("after an HTTP wake-up: %v, want %v", got, DefaultWatchGather)
	}
	c2 := testClient(t, fs, "", func(cfg *Config) { cfg.LocalWatchGather = 3 * time.Millisecond })
	if got := c2.gatherAfter(true); got != 3*time.Millisecond {
		t.Fatalf("configured: %v, want 3ms", got)
	}
}
