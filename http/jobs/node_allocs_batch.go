package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// Client reports (POST /v1/node/:node_id/allocations) of many nodes are
// written together: the reports that arrive within clientUpdateWindow of
// the first go to Raft as one AllocClientUpdateRequest, so a thousand
// clients reporting at once cost a few log entries, not a thousand, and
// leave the log to the plans. Each report was checked on its own before it
// joined (node, allocations, evaluations it calls for).
const (
	// clientUpdateWindow is how long the first report of a batch waits
	// for others.
	clientUpdateWindow = 5 * time.Millisecond
	// clientUpdateBatchMax bounds the allocations of one batch; a fuller
	// batch is written at once.
	clientUpdateBatchMax = 1024
	// clientUpdateAlone is the size from which a report does not wait for
	// others: a client reporting hundreds of allocations at once (a
	// node's start burst; an agent's own client, whose reports come in
	// process) fills an entry by itself, and the window would only delay
	// it. It takes along whatever reports the open batch holds.
	clientUpdateAlone = 256
)

// clientUpdateBatcher gathers client reports into batches.
type clientUpdateBatcher struct {
	apply func(ctx context.Context, req *store.AllocClientUpdateRequest) (uint64, error)

	mu      sync.Mutex
	pending *clientUpdateBatch
}

// clientUpdateBatch is one write of several reports.
type clientUpdateBatch struct {
	reports []*store.AllocClientUpdateRequest
	allocs  int
	done    chan struct{}
	// index and err are the write's outcome for reports, one each (a
	// batch refused as a whole is written report by report, so one bad
	// report fails alone).
	index []uint64
	err   []error
}

// submit adds one report to the open batch (opening one when there is
// none) and waits for its write.
func (b *clientUpdateBatcher) submit(ctx context.Context, req *store.AllocClientUpdateRequest) (uint64, error) {
	b.mu.Lock()
	batch := b.pending
	if batch == nil {
		batch = &clientUpdateBatch{done: make(chan struct{})}
		b.pending = batch
		time.AfterFunc(clientUpdateWindow, func() { b.flush(batch) })
	}
	slot := len(batch.reports)
	batch.reports = append(batch.reports, req)
	batch.allocs += len(req.Allocs)
	full := batch.allocs >= clientUpdateBatchMax || len(req.Allocs) >= clientUpdateAlone
	b.mu.Unlock()
	if full {
		b.flush(batch)
	}
	select {
	case <-batch.done:
		return batch.index[slot], batch.err[slot]
	case <-ctx.Done():
		// The write goes on; the caller will not hear of it.
		return 0, ctx.Err()
	}
}

// flush writes batch, once: whichever of the timer and a full batch comes
// first.
func (b *clientUpdateBatcher) flush(batch *clientUpdateBatch) {
	b.mu.Lock()
	if b.pending != batch {
		b.mu.Unlock()
		return // already written
	}
	b.pending = nil
	b.mu.Unlock()

	n := len(batch.reports)
	batch.index, batch.err = make([]uint64, n), make([]error, n)
	// The write outlives any one caller: a caller that leaves does not
	// cancel the others' reports.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer close(batch.done)
	merged := &store.AllocClientUpdateRequest{Now: batch.reports[0].Now}
	for _, r := range batch.reports {
		merged.Allocs = append(merged.Allocs, r.Allocs...)
		merged.Evals = append(merged.Evals, r.Evals...)
	}
	index, err := b.apply(ctx, merged)
	if err == nil || n == 1 || !state.IsRefusal(err) {
		for i := range n {
			batch.index[i], batch.err[i] = index, err
		}
		return
	}
	// The state machine refused the batch: one report is at fault (say,
	// an allocation collected meanwhile). Write each alone, so only that
	// one fails.
	for i, r := range batch.reports {
		batch.index[i], batch.err[i] = b.apply(ctx, r)
	}
}
