package blocking

import (
	"context"
	"sync"
	"sync/atomic"

	memdb "github.com/hashicorp/go-memdb"
)

// Compute computes the answer to a question, registering in ws what it
// read (ws is nil when nobody will wait on it), and returns the answer's
// index. ctx ends when no caller waits for the answer any more.
type Compute[V any] func(ctx context.Context, ws memdb.WatchSet) (index uint64, value V, err error)

// Answer is what a caller of Shared.Wait gets: a value computed once for
// every caller of the same question, and its index.
type Answer[V any] struct {
	Index uint64
	Value V
	// Early is set when the caller did not wait because opts.Limit was
	// full: the answer is the current one, as if its wait had just ended.
	Early bool
}

// Shared answers blocking reads of the same question once for all of their
// callers. Ten thousand callers of one list at the same index cost one
// watch set, one goroutine watching it, and one run and one encoding of the
// query per change, which they all share; each caller holds a channel receive
// while it waits, on a wake-up shared with the callers whose waits end
// within the same granule (deadlines). (Through Run, each caller held a watch
// set of its own with one channel per row read, and memdb watched it with
// a goroutine per 32 channels: for a list of 2,000 jobs with their
// summaries, 125 goroutines and about a megabyte per caller, and every
// caller ran and encoded the query again when one write woke them all.)
//
// A question is identified by its key K: the caller makes sure that two
// callers with the same key would be given the same answer by Compute
// (same query, same parameters, same permissions). The Compute of the
// caller that starts a question's group is the one run for the whole
// group.
//
// A group lives while a caller waits on it: the goroutine watching its
// last answer is started by the first caller and stopped when the last one
// leaves; Close stops and waits for every such goroutine.
type Shared[K comparable, V any] struct {
	store Store

	mu     sync.Mutex
	groups map[K]*group[V]
	// closed is set by Close: callers then compute their own answer.
	closed bool

	watchers sync.WaitGroup

	// deadlines are the callers' wake-ups, shared by callers whose waits
	// end together.
	deadlines deadlines
}

// NewShared returns a Shared over store, whose AbandonCh ends every
// group's watch when the store is restored, so the query runs again.
func NewShared[K comparable, V any](store Store) *Shared[K, V] {
	return &Shared[K, V]{store: store, groups: map[K]*group[V]{}}
}

// group is one question's latest answer and the callers waiting on it.
type group[V any] struct {
	// refs counts the callers in the group; guarded by Shared.mu.
	refs   int
	cancel context.CancelFunc
	// ready is closed when the first answer is published.
	ready chan struct{}
	cur   atomic.Pointer[answer[V]]
	// computes counts the computations begun, each counted before it
	// reads anything (answer.seq).
	computes atomic.Uint64
}

// answer is one computed answer and what it read.
type answer[V any] struct {
	index uint64
	value V
	err   error
	// ws is what the query read; no one writes it after the answer is
	// published, so callers may read it concurrently.
	ws memdb.WatchSet
	// next is closed when a newer answer replaces this one.
	next chan struct{}
	// seq is the group's count of computations when this one began.
	seq uint64
}

// fresh reports whether nothing the answer read has changed since it was
// computed: it holds every write applied before this call. A write closes
// the watch channels of what it changes before it counts as applied, so
// no channel closed means no such write.
func (a *answer[V]) fresh() bool {
	for ch := range a.ws {
		select {
		case <-ch:
			return false
		default:
		}
	}
	return true
}

// Wait returns the answer to the question key once its index passes
// opts.MinIndex, the wait (plus jitter) ends, or ctx is done, as Run does
// for a query of one caller. A zero MinIndex answers at once. With
// opts.Limit full, the caller does not wait: it gets the current answer
// with Early set. Errors of Compute end the wait of every caller of the
// group and are returned as they are.
//
// The answer returned reflects every write applied before Wait was called:
// a group's standing answer is taken only while nothing it read has
// changed since, else the caller waits for the next one.
func (s *Shared[K, V]) Wait(ctx context.Context, key K, opts Options, compute Compute[V]) (Answer[V], error) {
	if opts.MinIndex == 0 {
		return s.once(ctx, compute)
	}
	if !opts.Limit.acquire() {
		a, err := s.once(ctx, compute)
		a.Early = true
		return a, err
	}
	defer opts.Limit.release()

	dl, at := s.deadlines.join(capWait(opts.Wait))
	defer s.deadlines.leave(at, dl)
	g, joined := s.join(key, compute)
	if g == nil {
		return s.once(ctx, compute) // closed
	}
	defer s.leave(key, g)

	select {
	case <-g.ready:
	case <-dl.done:
		return s.once(ctx, compute)
	case <-ctx.Done():
		return s.once(ctx, compute)
	}
	// valid is the newest answer known to hold every write applied before
	// this call: one whose computation began after this caller joined
	// (seq above joined), or one nothing it read has changed since
	// (fresh). Once one is, each later answer is too: it was computed
	// after a change to what the previous one read, which came after.
	//
	// fresh alone took, under a stream of writes, an answer whose
	// computation no write overlapped: each answer the stream made stale
	// while it was computed (with its JSON encoding) was computed again,
	// and the answers to a client's watch while 2,000 jobs were placed on
	// its node were a quarter of the agent's CPU.
	var valid *answer[V]
	a := g.cur.Load()
	for {
		if valid != nil || a.seq > joined || a.fresh() {
			valid = a
		}
		if a.err != nil {
			return Answer[V]{Index: a.index}, a.err
		}
		if valid == a && a.index > opts.MinIndex {
			return Answer[V]{Index: a.index, Value: a.value}, nil
		}
		var done bool
		select {
		case <-a.next:
			a = g.cur.Load()
			continue
		case <-dl.done:
			done = true
		case <-ctx.Done():
			done = true
		}
		if done {
			// Timed out, or the caller left: the last answer stands.
			if valid == nil {
				return s.once(ctx, compute)
			}
			return Answer[V]{Index: valid.index, Value: valid.value}, nil
		}
	}
}

// Questions is the number of questions callers wait on now: one group
// each, with its watch.
func (s *Shared[K, V]) Questions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.groups)
}

// once computes an answer for one caller, with no watch.
func (s *Shared[K, V]) once(ctx context.Context, compute Compute[V]) (Answer[V], error) {
	index, v, err := compute(ctx, nil)
	return Answer[V]{Index: max(index, 1), Value: v}, err
}

// join adds a caller to key's group, starting the group when it is the
// first. It returns nil after Close, and the group's count of
// computations begun when the caller joined: an answer whose computation
// began later holds every write applied before.
func (s *Shared[K, V]) join(key K, compute Compute[V]) (*group[V], uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0
	}
	g := s.groups[key]
	if g == nil {
		ctx, cancel := context.WithCancel(context.Background())
		g = &group[V]{cancel: cancel, ready: make(chan struct{})}
		s.groups[key] = g
		s.watchers.Add(1)
		go s.watch(ctx, key, g, compute)
		g.refs++
		return g, 0 // its first computation begins after this
	}
	g.refs++
	return g, g.computes.Load()
}

// leave removes a caller from its group; the last one out stops the
// group's watch.
func (s *Shared[K, V]) leave(key K, g *group[V]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.refs--
	if g.refs > 0 {
		return
	}
	g.cancel()
	if s.groups[key] == g {
		delete(s.groups, key)
	}
}

// retire removes g from the groups, so that the next caller of key starts
// a new one; its callers keep it until they leave.
func (s *Shared[K, V]) retire(key K, g *group[V]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups[key] == g {
		delete(s.groups, key)
	}
}

// watch is a group's goroutine: it computes the answer, publishes it, and
// waits for a change to what it read, until ctx ends or Compute fails.
func (s *Shared[K, V]) watch(ctx context.Context, key K, g *group[V], compute Compute[V]) {
	defer s.watchers.Done()
	for {
		ws := memdb.NewWatchSet()
		// A restore replaces the store and no channel of the old one
		// fires again: it must end this watch too.
		ws.Add(s.store.AbandonCh())
		seq := g.computes.Add(1)
		index, v, err := compute(ctx, ws)
		if ctx.Err() != nil {
			return // no one is waiting
		}
		a := &answer[V]{index: max(index, 1), value: v, err: err, ws: ws, next: make(chan struct{}), seq: seq}
		if old := g.cur.Swap(a); old == nil {
			close(g.ready)
		} else {
			close(old.next)
		}
		if err != nil {
			// The error ends every current caller's wait; the next caller
			// asks again.
			s.retire(key, g)
			return
		}
		if ws.WatchCtx(ctx) != nil {
			return
		}
	}
}

// Close stops every group's watch and waits for it; callers that arrive
// afterwards, and those waiting for a first answer, compute their own.
func (s *Shared[K, V]) Close() {
	s.mu.Lock()
	s.closed = true
	for key, g := range s.groups {
		g.cancel()
		delete(s.groups, key)
	}
	s.mu.Unlock()
	s.watchers.Wait()
}
