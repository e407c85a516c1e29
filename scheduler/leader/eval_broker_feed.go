package leader

import (
	"context"
	"log/slog"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// feedPace is the least time between two passes of the eval feed: short,
// since every evaluation waits for a pass, but enough to batch the
// evaluations of concurrent job registrations into one pass.
const feedPace = 2 * time.Millisecond

// evalFeed keeps the broker and blocked evals in step with the evaluations
// in state, whoever wrote them: a job register through HTTP, a node
// update, a worker's follow-up or blocked evaluation. It wakes whenever
// the evaluations table is written (a watch on the table's index row, not
// polling), reads the evaluations written since it last looked, and
//
//   - enqueues pending ones in the broker (which holds delayed ones until
//     due and ignores those it already has);
//   - hands blocked ones to blocked evals;
//   - untracks a job's blocked evaluation once a later evaluation of the
//     job completed placing everything, as it is then out of date.
//
// Its first pass, when leadership starts, reads every evaluation: that is
// how the broker and blocked evals are restored after a failover.
//
// Cost: each pass lists the evaluations table, which garbage collection
// keeps bounded; passes are at least feedPace apart, so a burst of writes
// costs one pass.
type evalFeed struct {
	store   *store.Store
	broker  *EvalBroker
	blocked *BlockedEvals
	log     *slog.Logger
	run     runner
}

// Name implements Service.
func (f *evalFeed) Name() string { return "eval-feed" }

// Start restores the broker and blocked evals from state, synchronously,
// then follows the evaluations table in the background.
func (f *evalFeed) Start(ctx context.Context) error {
	table := f.store.WatchIndex(nil, store.TableEvals)
	last := f.pass(0)
	return f.run.start(ctx, func(ctx context.Context) { f.follow(ctx, table, last) })
}

// Stop ends the feed.
func (f *evalFeed) Stop() { f.run.stop() }

// follow runs a pass after every write of the evaluations table. table is
// the table's index at the last pass and last the highest ModifyIndex it
// saw (they differ when the last write deleted evaluations).
func (f *evalFeed) follow(ctx context.Context, table, last uint64) {
	pace := pacer{every: feedPace}
	for {
		ws := memdb.NewWatchSet()
		abandon := f.store.AbandonCh()
		ws.Add(abandon)
		if idx := f.store.WatchIndex(ws, store.TableEvals); idx != table {
			if !pace.wait(ctx) {
				return
			}
			table = f.store.WatchIndex(nil, store.TableEvals)
			last = f.pass(last)
			continue
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return
		}
		select {
		case <-abandon:
			// The store was restored from a snapshot: look at everything.
			table, last = 0, 0
		default:
		}
	}
}

// pass dispatches the evaluations written after index since and returns
// the index up to which it looked.
func (f *evalFeed) pass(since uint64) uint64 {
	// In the order they were written, so a job's blocked evaluation and a
	// later successful one are seen in the right order; read through the
	// store's ModifyIndex index, so a pass costs what changed, not every
	// evaluation kept.
	changed, err := f.store.EvalsModifiedAfter(nil, since)
	if err != nil {
		f.log.Error("eval feed: list evaluations", "error", err)
		return since
	}
	last := since
	for _, e := range changed {
		last = max(last, e.ModifyIndex)
	}
	for _, e := range changed {
		f.dispatch(e)
	}
	return last
}

func (f *evalFeed) dispatch(e *state.Evaluation) {
	switch e.Status {
	case state.EvalStatusPending:
		f.broker.Enqueue(e)
	case state.EvalStatusBlocked:
		f.blocked.Block(e)
	case state.EvalStatusComplete:
		if len(e.FailedTGAllocs) == 0 {
			f.blocked.Untrack(e.Namespace, e.JobID, e.ModifyIndex)
		}
		f.blocked.Remove(e.ID)
	default:
		f.blocked.Remove(e.ID)
	}
}
