package command

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// retryPolicy bounds how a monitor retries a query that failed for a
// reason that may pass (the server restarting, a leader election, the
// network): it waits first, doubling up to max, and gives up once its
// waits add up to giveUp.
type retryPolicy struct {
	first, max, giveUp time.Duration
}

// drainRetry is the drain monitor's policy: a few minutes of failures in a
// row, long enough to ride out a leader election or a server restart.
// A variable so tests need not wait that long.
var drainRetry = retryPolicy{first: time.Second, max: 30 * time.Second, giveUp: 3 * time.Minute}

// retryQuery runs q until it succeeds, waiting between attempts as p says
// (on a timer or ctx, whichever comes first). An error that cannot pass
// (a 4xx answer such as an unknown node or a denied token) is returned at
// once, as is ctx's error once ctx is done.
func retryQuery[T any](ctx context.Context, p retryPolicy, q func() (T, *api.QueryMeta, error)) (T, *api.QueryMeta, error) {
	var (
		zero     T
		delay    = p.first
		waited   time.Duration
		attempts int
	)
	for {
		v, qm, err := q()
		if err == nil {
			return v, qm, nil
		}
		attempts++
		if ctx.Err() != nil {
			return zero, nil, ctx.Err()
		}
		if !transientError(err) {
			return zero, nil, err
		}
		if waited >= p.giveUp {
			return zero, nil, fmt.Errorf("gave up after %d failed attempts in a row: %w", attempts, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return zero, nil, ctx.Err()
		case <-t.C:
		}
		waited += delay
		delay = min(delay*2, p.max)
	}
}

// transientError reports whether a failed query may succeed if tried
// again: a network error, or an answer saying the server cannot serve it
// now (5xx, 429). Any other answer would only be repeated.
func transientError(err error) bool {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Code >= 500 || se.Code == http.StatusTooManyRequests
	}
	return true
}

// watchUpdate is one answer of a blocking-query watch: the result and its
// index, or the error that ended the watch.
type watchUpdate[T any] struct {
	v     T
	index uint64
	err   error
}

// watchQuery sends q's result each time it changes after index (the
// first answer at once when index is 0), until ctx is done or q fails for
// good (the error is sent too). Failures that may pass are retried as
// drainRetry says. Each send completes before the next query, so the
// receiver sees the answers in order.
func watchQuery[T any](ctx context.Context, index uint64, q func(context.Context, *api.QueryOptions) (T, *api.QueryMeta, error), out chan<- watchUpdate[T]) {
	for {
		v, qm, err := retryQuery(ctx, drainRetry, func() (T, *api.QueryMeta, error) {
			return q(ctx, &api.QueryOptions{WaitIndex: index})
		})
		u := watchUpdate[T]{v: v, err: err}
		if err == nil {
			// Index 1 at least, so a server that reports no index
			// cannot turn this into a busy loop.
			index = max(qm.LastIndex, index, 1)
			u.index = index
		}
		select {
		case out <- u:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// monitorDrain follows the drain of node nodeID until it ends, printing
// what happens to the node's allocations. Two blocking queries run side by
// side, on the node and on its allocations, so it costs one request per
// change rather than a poll. node, when not nil, is the node as read at
// index (the watch starts from there); ignoreSystem is the drain's
// IgnoreSystemJobs until the node is read.
//
// The leader ends a drain (DrainStrategy nil) once no allocation it moves
// is left that is not terminal, which for an allocation it stops is as
// soon as the scheduler has marked it to stop: the monitor then goes on
// until those allocations have stopped on the client too, as a script
// that drains a node before taking it down needs. A drain that ends with
// such allocations still wanted running was cancelled. Exit code: 0 when
// the drain completed or the user stopped monitoring, 1 when it was
// cancelled or the queries failed.
func (c *nodeCLI) monitorDrain(client *api.Client, nodeID string, node *state.Node, index uint64, ignoreSystem, verbose bool) int {
	ctx, cancel := context.WithCancel(c.ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// The node watch stops before the allocations watch, once the drain
	// is over.
	nodeCtx, stopNodeWatch := context.WithCancel(ctx)
	defer stopNodeWatch()
	nodeCh := make(chan watchUpdate[*state.Node])
	allocCh := make(chan watchUpdate[[]*state.Allocation])
	wg.Go(func() {
		watchQuery(nodeCtx, index, func(ctx context.Context, q *api.QueryOptions) (*state.Node, *api.QueryMeta, error) {
			return client.Nodes().Info(ctx, nodeID, q)
		}, nodeCh)
	})
	wg.Go(func() {
		watchQuery(ctx, 0, func(ctx context.Context, q *api.QueryOptions) ([]*state.Allocation, *api.QueryMeta, error) {
			return client.Nodes().Allocations(ctx, nodeID, q)
		}, allocCh)
	})

	m := &drainMonitor{c: c.cli, nodeID: nodeID, verbose: verbose, ignoreSystem: ignoreSystem, seen: map[string]*allocSeen{}}
	if node != nil {
		m.node(node)
	}
	// fail reports a query error, unless the error is the user's Ctrl-C.
	fail := func(doing string, err error) int {
		if c.ctx.Err() != nil {
			return c.drainMonitorInterrupted(nodeID)
		}
		return c.fail(doing, err)
	}
	ended := false
	for {
		select {
		case <-ctx.Done():
			return c.drainMonitorInterrupted(nodeID)
		case u := <-nodeCh:
			if u.err != nil {
				return fail("reading node", u.err)
			}
			if !m.node(u.v) {
				m.checkAllMarked()
				continue
			}
			// The drain is over: read the allocations as they are now
			// (the watch may lag behind) to tell a completed drain from
			// a cancelled one.
			stopNodeWatch()
			nodeCh, ended = nil, true
			allocs, qm, err := retryQuery(ctx, drainRetry, func() ([]*state.Allocation, *api.QueryMeta, error) {
				return client.Nodes().Allocations(ctx, nodeID, nil)
			})
			if err != nil {
				return fail("reading node allocations", err)
			}
			m.allocs(allocs, qm.LastIndex)
			if m.cancelled() {
				fmt.Fprintf(c.stdout, "%s: Drain cancelled for node %s\n", c.stamp(), nodeID)
				return 1
			}
			m.checkAllMarked()
			fmt.Fprintf(c.stdout, "%s: Drain complete for node %s\n", c.stamp(), nodeID)
			if m.running() == 0 {
				return 0
			}
		case u := <-allocCh:
			if u.err != nil {
				return fail("reading node allocations", u.err)
			}
			m.allocs(u.v, u.index)
			if !ended {
				m.checkAllMarked()
				continue
			}
			if m.running() == 0 {
				fmt.Fprintf(c.stdout, "%s: All allocations on node %q have stopped\n", c.stamp(), nodeID)
				return 0
			}
		}
	}
}

// drainMonitorInterrupted says the user stopped watching: the drain goes
// on without us, so it is not a failure.
func (c *nodeCLI) drainMonitorInterrupted(nodeID string) int {
	fmt.Fprintf(c.stderr, "Monitoring stopped; the drain of node %q is not cancelled (see `sched node status %s`)\n", nodeID, nodeID)
	return 0
}

// allocSeen is what the drain monitor has said about one allocation, so
// it says each thing once.
type allocSeen struct {
	clientStatus string
	marked       bool
	draining     bool
}

// drainMonitor is the drain monitor's view of the node and its
// allocations, and what it has printed of them.
type drainMonitor struct {
	c       *cli
	nodeID  string
	verbose bool
	// strategy is the drain as last read; nil before the first read.
	strategy *state.DrainStrategy
	// ignoreSystem is the drain's IgnoreSystemJobs, kept once it ends.
	ignoreSystem bool
	// current is the latest allocation list, at currentIndex; haveAllocs
	// says there has been one.
	current      []*state.Allocation
	currentIndex uint64
	haveAllocs   bool
	seen         map[string]*allocSeen
	allMarked    bool
}

// node takes a read of the node and reports whether its drain is over.
func (m *drainMonitor) node(n *state.Node) (ended bool) {
	ds := n.DrainStrategy
	if ds == nil {
		return true
	}
	if m.strategy != nil && (ds.Deadline != m.strategy.Deadline || ds.ForceDeadline != m.strategy.ForceDeadline ||
		ds.IgnoreSystemJobs != m.strategy.IgnoreSystemJobs) {
		fmt.Fprintf(m.c.stdout, "%s: Node %q drain strategy updated\n", m.c.stamp(), m.nodeID)
	}
	m.strategy, m.ignoreSystem = ds, ds.IgnoreSystemJobs
	return false
}

// allocs takes a list of the node's allocations read at index and prints
// what changed since the last: an allocation marked for migration, told
// to stop, or changing status on its client. A list older than the one
// already taken is dropped, so nothing is printed backwards.
func (m *drainMonitor) allocs(allocs []*state.Allocation, index uint64) {
	if m.haveAllocs && index < m.currentIndex {
		return
	}
	m.current, m.currentIndex, m.haveAllocs = allocs, index, true
	sorted := slices.SortedFunc(slices.Values(allocs), func(a, b *state.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	for _, a := range sorted {
		s, known := m.seen[a.ID]
		if !known {
			s = &allocSeen{clientStatus: a.ClientStatus}
			m.seen[a.ID] = s
			if a.ClientTerminal() {
				// Finished before we saw it: nothing to follow.
				s.marked, s.draining = true, true
			}
		}
		id := shortID(a.ID, m.verbose)
		if migrating(a) && !s.marked {
			s.marked = true
			fmt.Fprintf(m.c.stdout, "%s: Alloc %q marked for migration\n", m.c.stamp(), id)
		}
		if migrating(a) && a.DesiredStatus == state.AllocDesiredStatusStop && !s.draining {
			s.draining = true
			fmt.Fprintf(m.c.stdout, "%s: Alloc %q draining\n", m.c.stamp(), id)
		}
		if a.ClientStatus != s.clientStatus {
			fmt.Fprintf(m.c.stdout, "%s: Alloc %q status %s -> %s\n", m.c.stamp(), id, s.clientStatus, a.ClientStatus)
			s.clientStatus = a.ClientStatus
		}
	}
}

// checkAllMarked prints, once, that every allocation the drain moves has
// been marked for migration: from then on the drain only waits for them
// to stop.
func (m *drainMonitor) checkAllMarked() {
	if m.allMarked || !m.haveAllocs {
		return
	}
	for _, a := range m.current {
		if m.moves(a) && !a.Terminal() && !migrating(a) {
			return
		}
	}
	m.allMarked = true
	fmt.Fprintf(m.c.stdout, "%s: Node %q has marked all allocations for migration\n", m.c.stamp(), m.nodeID)
}

// cancelled reports whether the drain ended with work left: the leader
// ends a drain on its own only once every allocation it moves is
// terminal, so any other end is an operator's -disable.
func (m *drainMonitor) cancelled() bool {
	for _, a := range m.current {
		if m.moves(a) && !a.Terminal() {
			return true
		}
	}
	return false
}

// running counts the allocations the drain stopped that still run (or
// are about to) on the client. Allocations wanted running are not the
// drain's: the node may be made eligible again as soon as it ends.
func (m *drainMonitor) running() int {
	n := 0
	for _, a := range m.current {
		if m.moves(a) && a.ServerTerminal() && (a.ClientStatus == state.AllocClientStatusPending || a.ClientStatus == state.AllocClientStatusRunning) {
			n++
		}
	}
	return n
}

// moves reports whether the drain moves a: everything but system jobs'
// allocations when the drain ignores them.
func (m *drainMonitor) moves(a *state.Allocation) bool {
	if !m.ignoreSystem || a.Job == nil {
		return true
	}
	return a.Job.Type != state.JobTypeSystem && a.Job.Type != state.JobTypeSysBatch
}

// migrating reports whether a is marked for migration.
func migrating(a *state.Allocation) bool {
	return a.DesiredTransition.Migrate != nil && *a.DesiredTransition.Migrate
}
