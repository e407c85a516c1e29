package client

import (
	"context"
	"sync"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// updater batches allocation status reports to the servers: changes
// gather for BatchInterval, only the latest report of each allocation is
// kept, and one POST /v1/node/:id/allocations carries them all. A report
// the servers did not take is sent again with the next batch, unless a
// newer one replaced it.
type updater struct {
	c *Client

	mu      sync.Mutex
	pending map[string]*state.AllocClientUpdate
	kick    chan struct{}
	// sent counts requests, for tests and measurements.
	sent int
}

func newUpdater(c *Client) *updater {
	return &updater{c: c, pending: map[string]*state.AllocClientUpdate{}, kick: make(chan struct{}, 1)}
}

// put queues u, replacing any report of the same allocation not yet sent.
func (u *updater) put(up *state.AllocClientUpdate) {
	u.mu.Lock()
	u.pending[up.ID] = up
	u.mu.Unlock()
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// take removes and returns every queued report.
func (u *updater) take() []*state.AllocClientUpdate {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.pending) == 0 {
		return nil
	}
	out := make([]*state.AllocClientUpdate, 0, len(u.pending))
	for _, up := range u.pending {
		out = append(out, up)
	}
	clear(u.pending)
	return out
}

// putBack re-queues reports that failed, unless newer ones arrived.
func (u *updater) putBack(ups []*state.AllocClientUpdate) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, up := range ups {
		if _, newer := u.pending[up.ID]; !newer {
			u.pending[up.ID] = up
		}
	}
}

// run sends batches until ctx ends; then it makes one last attempt to
// send what is queued, bounded by a few seconds.
func (u *updater) run(ctx context.Context) {
	bo := backoff{min: u.c.cfg.MinBackoff, max: u.c.cfg.MaxBackoff}
	for {
		select {
		case <-u.kick:
		case <-ctx.Done():
			u.flushFinal()
			return
		}
		// Let changes gather.
		if !sleepCtx(ctx, u.c.cfg.BatchInterval) {
			u.flushFinal()
			return
		}
		if err := u.flush(ctx); err != nil {
			u.c.log.Warn("sending allocation updates failed", "error", err)
			if !sleepCtx(ctx, bo.next()) {
				u.flushFinal()
				return
			}
			select {
			case u.kick <- struct{}{}:
			default:
			}
			continue
		}
		bo.reset()
	}
}

// flush sends every queued report in one request.
func (u *updater) flush(ctx context.Context) error {
	ups := u.take()
	if len(ups) == 0 {
		return nil
	}
	err := u.c.servers.call(ctx, func(s *api.Client) error {
		_, _, err := s.Nodes().UpdateAllocs(ctx, u.c.nodeID, ups, nil)
		return err
	})
	u.mu.Lock()
	u.sent++
	u.mu.Unlock()
	if err != nil {
		u.putBack(ups)
		if api.IsNotFound(err) {
			u.c.needRegister()
		}
	}
	return err
}

// flushFinal sends what is left when the client stops.
func (u *updater) flushFinal() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = u.flush(ctx)
}

// requests reports how many batches were sent.
func (u *updater) requests() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sent
}
