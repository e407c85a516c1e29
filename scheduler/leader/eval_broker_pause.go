package leader

import (
	"context"
	"log/slog"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state/store"
)

// SetPaused pauses or resumes the broker's deliveries. While paused,
// Dequeue hands out nothing (it waits as for an empty broker); evaluations
// are still enqueued, acked, nacked and timed out, so nothing is lost and
// the queue simply waits. Resuming wakes every waiting Dequeue. Stop and
// Start leave the flag alone: the pause follower sets it from the state
// on every start.
func (b *EvalBroker) SetPaused(paused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.paused == paused {
		return
	}
	b.paused = paused
	if !paused {
		b.signalLocked()
	}
}

// Paused reports whether deliveries are paused (SetPaused).
func (b *EvalBroker) Paused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.paused
}

// brokerPause follows the scheduler configuration's PauseEvalBroker and
// pauses or resumes the broker to match, on the leader.
type brokerPause struct {
	store  *store.Store
	broker *EvalBroker
	log    *slog.Logger
	run    runner
}

// Name implements Service.
func (p *brokerPause) Name() string { return "eval-broker-pause" }

// Start applies the configuration now, synchronously (so a paused
// cluster's new leader hands out nothing), then follows it.
func (p *brokerPause) Start(ctx context.Context) error {
	p.apply()
	return p.run.start(ctx, p.follow)
}

// Stop ends the following.
func (p *brokerPause) Stop() { p.run.stop() }

// apply sets the broker's pause from the stored configuration.
func (p *brokerPause) apply() {
	c, err := p.store.SchedulerConfig(nil)
	if err != nil {
		p.log.Error("read scheduler configuration", "error", err)
		return
	}
	if c.PauseEvalBroker != p.broker.Paused() {
		p.log.Info("eval broker pause changed by the scheduler configuration", "paused", c.PauseEvalBroker)
	}
	p.broker.SetPaused(c.PauseEvalBroker)
}

// follow applies the configuration after every write of its table (and
// after a restore from a snapshot). Each pass reads the configuration
// after it starts watching, so a write between Start and the first watch
// is not missed.
func (p *brokerPause) follow(ctx context.Context) {
	for {
		ws := memdb.NewWatchSet()
		ws.Add(p.store.AbandonCh())
		p.store.WatchIndex(ws, store.TableSchedulerConfig)
		p.apply()
		if err := ws.WatchCtx(ctx); err != nil {
			return
		}
	}
}
