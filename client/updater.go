package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// updater batches allocation status reports to the servers: changes
// gather (run, gather), and one POST /v1/node/:id/allocations carries
// them all. A runner whose state changed is marked; its report is read
// once, when the batch goes, however many changes it had in the window (a
// mock task's start is five of them). A report the servers did not take
// is sent again with the next batch, unless the runner changed again.
type updater struct {
	c *Client
	// interval is Config.BatchInterval; now is the client's clock.
	interval time.Duration
	now      func() time.Time

	mu sync.Mutex
	// marks counts calls to mark, so that gather sees whether changes
	// still come.
	marks uint64
	// marked are the runners whose state changed since the last batch.
	marked map[string]*allocRunner
	// pending are reports the servers did not take, to send again.
	pending map[string]*state.AllocClientUpdate
	kick    chan struct{}
	// sent counts requests, for tests and measurements.
	sent int
}

func newUpdater(c *Client) *updater {
	return &updater{c: c, interval: c.cfg.BatchInterval, now: c.now,
		marked: map[string]*allocRunner{}, pending: map[string]*state.AllocClientUpdate{},
		kick: make(chan struct{}, 1)}
}

// mark queues ar's report, read when the next batch goes.
func (u *updater) mark(ar *allocRunner) {
	u.mu.Lock()
	u.marked[ar.id] = ar
	u.marks++
	u.mu.Unlock()
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// take removes and returns every queued report: those to send again,
// but for runners marked since, and those of the marked runners, read
// now.
func (u *updater) take() []*state.AllocClientUpdate {
	u.mu.Lock()
	if len(u.pending)+len(u.marked) == 0 {
		u.mu.Unlock()
		return nil
	}
	out := make([]*state.AllocClientUpdate, 0, len(u.pending)+len(u.marked))
	for id, up := range u.pending {
		if _, newer := u.marked[id]; !newer {
			out = append(out, up)
		}
	}
	clear(u.pending)
	runners := make([]*allocRunner, 0, len(u.marked))
	for _, ar := range u.marked {
		runners = append(runners, ar)
	}
	clear(u.marked)
	u.mu.Unlock()
	// Read outside u.mu: a runner's state has locks of its own, held by
	// some callers of mark.
	for _, ar := range runners {
		out = append(out, ar.clientUpdate())
	}
	return out
}

// putBack re-queues reports that failed, unless their runners changed
// again meanwhile.
func (u *updater) putBack(ups []*state.AllocClientUpdate) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, up := range ups {
		_, marked := u.marked[up.ID]
		_, pending := u.pending[up.ID]
		if !marked && !pending {
			u.pending[up.ID] = up
		}
	}
}

// run sends batches until ctx ends; then it makes one last attempt to
// send what is queued, bounded by a few seconds. gather says when each
// batch goes.
func (u *updater) run(ctx context.Context) {
	bo := backoff{min: u.c.cfg.MinBackoff, max: u.c.cfg.MaxBackoff}
	var last time.Time
	for {
		select {
		case <-u.kick:
		case <-ctx.Done():
			u.flushFinal()
			return
		}
		if !u.gather(ctx, last) {
			u.flushFinal()
			return
		}
		last = u.now()
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

// gather lets changes gather before a batch, the previous one having
// started at last; it reports false when ctx ended first.
//
// A batch goes once changes have stopped coming for interval/batchSettle
// (the burst of marks that began with them settled: a mock task's start
// is five marks within microseconds, a thousand placements' starts one
// stream), but no sooner than interval/batchGatherMin after the previous
// batch's start, and, while changes keep coming, no later than interval
// after it (or interval/batchFirstGather after now, following a quiet
// spell). So a change after a quiet spell goes within a few
// milliseconds, the first reports of a long burst 10 ms after it began
// (while the rest of it gathers for the next batch), the last reports of
// a burst a few milliseconds after the burst, and a sustained stream of
// changes goes once per interval, each batch counted from the previous
// start: a batch of a thousand reports takes a while to send and apply,
// and counting from its end made every report of a stream wait that long
// too. Before, every batch waited for interval from the previous start,
// or interval/batchGatherMin after a quiet spell, so a raw_exec task's
// running reached the servers 190 ms after it started; and until round 8
// of docs/scale.md a burst's first batch waited interval/batchGatherMin
// (50 ms), so the thousand starts of a count=1,000 job went in two large
// batches, the second written after the first.
func (u *updater) gather(ctx context.Context, last time.Time) bool {
	settle := u.interval / batchSettle
	now := u.now()
	earliest := last.Add(u.interval / batchGatherMin)
	deadline := last.Add(u.interval)
	if quiet := now.Add(u.interval / batchFirstGather); deadline.Before(quiet) {
		deadline = quiet
	}
	seen := u.markCount()
	wait := max(settle, earliest.Sub(now))
	for {
		if !sleepCtx(ctx, wait) {
			return false
		}
		now = u.now()
		n := u.markCount()
		if n == seen || !now.Before(deadline) {
			return true
		}
		seen = n
		wait = min(settle, deadline.Sub(now))
	}
}

// markCount is how many times mark was called.
func (u *updater) markCount() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.marks
}

// batchGatherMin divides BatchInterval into the least time between the
// starts of two batches; batchFirstGather into the longest a batch waits
// for changes that keep coming after a quiet spell; batchSettle into the
// quiet time after which the changes gathered go (see gather).
const (
	batchGatherMin   = 4
	batchFirstGather = 20
	batchSettle      = 40
)

// flush sends every queued report in one request.
func (u *updater) flush(ctx context.Context) error {
	ups := u.take()
	if len(ups) == 0 {
		return nil
	}
	handled := false
	var err error
	if l := u.c.cfg.Local; l != nil {
		handled, err = l.UpdateAllocs(ctx, u.c.nodeID, ups)
	}
	if !handled {
		err = u.c.servers.call(ctx, func(s *api.Client) error {
			_, _, err := s.Nodes().UpdateAllocs(ctx, u.c.nodeID, ups, nil)
			return err
		})
	}
	u.mu.Lock()
	u.sent++
	u.mu.Unlock()
	if err != nil {
		u.putBack(ups)
		if api.IsNotFound(err) || errors.Is(err, state.ErrNotFound) {
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
