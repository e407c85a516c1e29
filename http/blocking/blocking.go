// Package blocking runs blocking reads: a query that returns at once when
// its result is newer than the caller's index, and otherwise waits on the
// go-memdb watch channels the query registered until something it read
// changes, the wait ends, or the caller goes away.
//
// Every blocking endpoint goes through Run, or through Shared when many
// callers ask the same question (one watch and one answer for all of
// them), so the rules live in one place: the default and maximum wait, the
// jitter that spreads out wake-ups of many readers, the floor of 1 on
// returned indexes (an index of 0 would make a client loop without
// blocking), and the Limit on callers waiting at once.
package blocking

import (
	"context"
	"math/rand/v2"
	"time"

	memdb "github.com/hashicorp/go-memdb"
)

const (
	// DefaultWait is the wait used when the caller asks to block but names
	// no wait.
	DefaultWait = 5 * time.Minute
	// MaxWait caps any requested wait.
	MaxWait = 10 * time.Minute
	// jitterFraction of the wait is added at random, so readers that
	// started together do not all return together.
	jitterFraction = 16
)

// Store is what Run needs of the state store: a channel closed when the
// store's contents are replaced wholesale (snapshot restore), after which
// every watch channel is dead and the query must run again.
type Store interface {
	AbandonCh() <-chan struct{}
}

// Query reads the store, registering what it read in ws, and returns the
// index of its result.
type Query func(ws memdb.WatchSet) (index uint64, err error)

// Options says how long to block.
type Options struct {
	// MinIndex is the index the caller already has. Zero means "do not
	// block": the query runs once.
	MinIndex uint64
	// Wait is the longest the caller is willing to wait. Zero means
	// DefaultWait; anything above MaxWait is capped.
	Wait time.Duration
	// Limit bounds the callers waiting at once; a caller beyond it gets
	// the current result at once, as if its wait had just ended. Nil
	// means no bound.
	Limit *Limit
}

// Run runs query until its index passes opts.MinIndex, the wait (plus
// jitter) ends, or ctx is done. It returns the index of the last run; the
// query's own closure keeps the last result. A ctx cancellation is not an
// error: the caller gets the last result, as on a timeout.
func Run(ctx context.Context, store Store, opts Options, query Query) (uint64, error) {
	if opts.MinIndex == 0 {
		return runOnce(nil, store, query)
	}
	if !opts.Limit.acquire() {
		return runOnce(nil, store, query)
	}
	defer opts.Limit.release()
	ctx, cancel := context.WithTimeout(ctx, waitOf(opts.Wait))
	defer cancel()

	for {
		ws := memdb.NewWatchSet()
		index, err := runOnce(ws, store, query)
		if err != nil || index > opts.MinIndex {
			return index, err
		}
		if err := ws.WatchCtx(ctx); err != nil {
			// Timed out or the caller left: the last result stands.
			return index, nil
		}
	}
}

// waitOf is how long a caller asking for wait blocks: the default for
// zero, capped at MaxWait, plus jitter.
func waitOf(wait time.Duration) time.Duration {
	wait = capWait(wait)
	return wait + rand.N(wait/jitterFraction+1)
}

// capWait is the wait a caller asking for wait is given before jitter:
// the default for zero, capped at MaxWait.
func capWait(wait time.Duration) time.Duration {
	if wait <= 0 {
		return DefaultWait
	}
	return min(wait, MaxWait)
}

func runOnce(ws memdb.WatchSet, store Store, query Query) (uint64, error) {
	if ws != nil {
		ws.Add(store.AbandonCh())
	}
	index, err := query(ws)
	if index == 0 {
		index = 1
	}
	return index, err
}
