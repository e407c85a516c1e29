package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// The store's snapshots and the store itself are what schedulers read.
var (
	_ scheduler.State = (*store.StateSnapshot)(nil)
	_ scheduler.State = (*store.Store)(nil)

	_ scheduler.NodeUsageScanner = (*store.StateSnapshot)(nil)
	_ scheduler.NodeUsageScanner = inflightState{}
)

// Raft is how the runtime writes: it proposes a command and returns what
// the state machine answered once the command is applied on this server.
// An error answer of the state machine comes back as err. The agent's raft
// writer satisfies it; tests use a double that applies to a store.
type Raft interface {
	Apply(ctx context.Context, t store.MessageType, req any) (resp any, index uint64, err error)
}

// ErrNotLeader is returned by the runtime's services when they are not
// running: this server is not the leader, or leadership was just lost.
// The HTTP layer answers it with 503, so clients retry elsewhere or later.
var ErrNotLeader = errors.New("scheduler: this server is not the cluster leader")

// Service is one leader duty: started when this server gains leadership
// and stopped when it loses it. Start rebuilds what the service needs from
// the state store, so nothing held only in memory is lost by a failover;
// it must not block beyond setting the duty up. Stop ends the duty and
// waits for its goroutines.
type Service interface {
	Name() string
	Start(ctx context.Context) error
	Stop()
}

// RuntimeConfig wires a Runtime. Store and Raft are required; every other
// zero field means its default.
type RuntimeConfig struct {
	Store *store.Store
	Raft  Raft
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the leader's clock for times stamped into commands; nil means
	// time.Now.
	Now func() time.Time
	// NewID makes evaluation IDs and broker tokens; nil means random UUIDs.
	NewID func() string
	// Workers is the number of scheduling workers; zero means
	// DefaultWorkers().
	Workers int
	// SmallWorkers is the number of further workers that take only
	// small jobs' evaluations (eval_broker_small.go); zero means none
	// (the agent sets DefaultSmallWorkers()).
	SmallWorkers int
	// Schedulers maps eval types to schedulers; nil means
	// BuiltinSchedulers.
	Schedulers map[string]scheduler.Factory
	Broker     BrokerConfig
	Blocked    BlockedConfig
	Heartbeat  HeartbeatConfig
	GC         GCConfig
	// JobLimits bound what one evaluation may place: an evaluation of a
	// job over them (stored before the limits, or under larger ones)
	// fails instead of being scheduled. Zero fields mean state's defaults.
	JobLimits state.JobLimits
	// Observe receives timings for metrics; nil observes nothing.
	Observe Observer
	// Foreground counts the API's writes in flight, which the workers
	// give way to; nil means they never do.
	Foreground *Foreground
}

// minDefaultWorkers is the least number of workers by default.
const minDefaultWorkers = 6

// DefaultWorkers is the number of scheduling workers when none is set:
// three per CPU core, at least minDefaultWorkers and at most
// maxDefaultWorkers. A worker spends most
// of a small evaluation waiting for its plan's Raft commit (a disk write
// or two; computing the plan takes far less), so with one per core the
// evaluations queue behind two commits at a time: on 2 cores sched-bench's
// running scenario ran its last job 3.4-3.8 s after the first register
// with two workers. More workers keep more plans committing while the API
// registers, and the two compete for the same cores. Back to back on 2
// cores, 2,000 registers from 16 clients and the last job running: four
// workers 1.06-1.16 s and 2.68-2.73 s (once 3.15 s), six 1.15-1.35 s and
// 2.0-2.5 s, eight 1.31-1.64 s and 1.9-2.5 s; a million placements took
// 57 s with four, 60 s with six, 65-70 s with eight. The plan applier
// commits up to 16 plans at once, so the workers' plans batch into the
// same disk writes.
func DefaultWorkers() int { return defaultWorkers(runtime.NumCPU()) }

// maxDefaultWorkers bounds the default on large machines, below the
// configurable maximum (128, as Nomad's).
const maxDefaultWorkers = 64

func defaultWorkers(cpus int) int {
	return min(max(3*cpus, minDefaultWorkers), maxDefaultWorkers)
}

// DefaultSmallWorkers is the number of small-job workers the agent runs
// when none is set: thirteen per CPU core, at least minDefaultSmallWorkers
// and at most maxDefaultSmallWorkers; with the general workers, 32 on two
// cores. On two cores, 2,000 one-allocation jobs registered by 16
// clients (sched-bench client-path), the last was placed 2.18-2.20 times
// the registration's time after its start with 6 workers in all, 1.77-1.79
// with 32 and 1.47-1.55 with 64; a million placements of jobs of a
// thousand (c1m), which the small-job workers do not take, went from
// 63 s with 6 to 85 s with 32 general workers.
func DefaultSmallWorkers() int { return defaultSmallWorkers(runtime.NumCPU()) }

// minDefaultSmallWorkers and maxDefaultSmallWorkers bound
// DefaultSmallWorkers.
const (
	minDefaultSmallWorkers = 26
	maxDefaultSmallWorkers = 256
)

func defaultSmallWorkers(cpus int) int {
	return min(max(13*cpus, minDefaultSmallWorkers), maxDefaultSmallWorkers)
}

// withDefaults validates c and fills its defaults.
func (c RuntimeConfig) withDefaults() (RuntimeConfig, error) {
	if c.Store == nil || c.Raft == nil {
		return c, errors.New("scheduler: RuntimeConfig needs Store and Raft")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = state.NewID
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers()
	}
	c.SmallWorkers = max(c.SmallWorkers, 0)
	if c.Schedulers == nil {
		c.Schedulers = scheduler.BuiltinSchedulers
	}
	c.Broker = c.Broker.withDefaults()
	c.Blocked = c.Blocked.withDefaults()
	c.Heartbeat = c.Heartbeat.withDefaults()
	c.GC = c.GC.withDefaults()
	if c.Observe == nil {
		c.Observe = nopObserver{}
	}
	return c, nil
}

// Runtime is the scheduler's leader half: the eval broker fed from the
// state store, blocked evals, the plan queue and its single applier, the
// workers, node heartbeat timers, the drainer, garbage collection and the
// periodic launcher. The
// agent starts its Services, in order, on gaining leadership and stops
// them in reverse on losing it; the HTTP layer reaches the running ones
// through Heartbeat, ForceGC and BrokerStats, which answer ErrNotLeader
// while they are stopped.
type Runtime struct {
	Broker     *EvalBroker
	Blocked    *BlockedEvals
	Plans      *PlanQueue
	Applier    *PlanApplier
	Workers    *WorkerPool
	Heartbeats *Heartbeater
	Drainer    *Drainer
	// Deployments is the deployment watcher.
	Deployments *DeploymentWatcher
	GC          *GarbageCollector
	Periodic    *PeriodicLauncher

	feed *evalFeed
	// pause follows the scheduler configuration's PauseEvalBroker.
	pause *brokerPause
}

// NewRuntime builds the runtime's services, stopped.
func NewRuntime(cfg RuntimeConfig) (*Runtime, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	broker := NewEvalBroker(cfg.Broker, cfg.Raft, cfg.Logger, cfg.Now, cfg.NewID)
	broker.SetShares(StoreShares(cfg.Store)) // eval_broker_order.go
	if cfg.SmallWorkers > 0 {
		broker.SetSmall(StoreSmall(cfg.Store)) // eval_broker_small.go
	}
	blocked := NewBlockedEvals(cfg.Blocked, cfg.Store, broker, cfg.Raft, cfg.Logger, cfg.Now)
	plans := NewPlanQueue()
	r := &Runtime{
		Broker:      broker,
		Blocked:     blocked,
		Plans:       plans,
		Applier:     NewPlanApplier(cfg.Store, cfg.Raft, plans, broker, cfg.Logger, cfg.Now),
		Workers:     NewWorkerPool(cfg, broker, plans),
		Heartbeats:  NewHeartbeater(cfg.Heartbeat, cfg.Store, cfg.Raft, cfg.Logger, cfg.Now, cfg.NewID),
		Drainer:     NewDrainer(cfg.Store, cfg.Raft, cfg.Logger, cfg.Now, cfg.NewID),
		Deployments: NewDeploymentWatcher(cfg.Store, cfg.Raft, cfg.Logger, cfg.Now, cfg.NewID),
		GC:          NewGarbageCollector(cfg.GC, cfg.Store, cfg.Raft, cfg.Logger, cfg.Now),
		Periodic:    NewPeriodicLauncher(cfg.Store, cfg.Raft, cfg.Logger, cfg.Now, cfg.NewID),
		feed:        &evalFeed{store: cfg.Store, broker: broker, blocked: blocked, log: cfg.Logger},
		pause:       &brokerPause{store: cfg.Store, broker: broker, log: cfg.Logger},
	}
	r.Applier.observe = cfg.Observe
	r.Applier.fg = cfg.Foreground
	r.Heartbeats.observe = cfg.Observe
	return r, nil
}

// Services returns the leader duties in start order: the broker and
// blocked evals first (empty and enabled), then the feed that restores them
// from the evaluations in state and keeps them fed, the plan applier before
// the workers that submit to it, then heartbeats, the drainer, the
// deployment watcher and GC.
func (r *Runtime) Services() []Service {
	return []Service{r.Broker, r.pause, r.Blocked, r.feed, r.Applier, r.Workers, r.Heartbeats, r.Drainer, r.Deployments, r.GC, r.Periodic}
}

// Heartbeat resets a node's heartbeat timer and returns its TTL; see
// Heartbeater.Heartbeat.
func (r *Runtime) Heartbeat(nodeID string) (time.Duration, error) {
	return r.Heartbeats.Heartbeat(nodeID)
}

// ForceGC runs garbage collection now, ignoring age thresholds; see
// GarbageCollector.Force.
func (r *Runtime) ForceGC(ctx context.Context) error { return r.GC.Force(ctx) }

// BrokerStats returns the eval broker's and blocked evals' counters.
func (r *Runtime) BrokerStats() (*BrokerStats, error) {
	st, err := r.Broker.Stats()
	if err != nil {
		return nil, err
	}
	b := r.Blocked.Stats()
	st.TotalBlocked = b.TotalBlocked
	st.TotalEscaped = b.TotalEscaped
	return st, nil
}

// runner owns the goroutines of one service run: it starts them with a
// context derived from the leadership context, and stop cancels that
// context and waits for every one of them.
type runner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start runs each fn in its own goroutine until ctx ends or stop is called.
// It fails when the runner is already running.
func (r *runner) start(ctx context.Context, fns ...func(ctx context.Context)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return errors.New("already running")
	}
	ctx, r.cancel = context.WithCancel(ctx)
	for _, fn := range fns {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			fn(ctx)
		}()
	}
	return nil
}

// stop cancels the run and waits for its goroutines. It is safe to call
// when not running.
func (r *runner) stop() {
	r.mu.Lock()
	cancel := r.cancel
	r.cancel = nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.wg.Wait()
}

// waitForIndex blocks until the store has applied index, ctx ends or
// timeout (zero: none) passes. It wakes on the store's writes, never by
// polling.
func waitForIndex(ctx context.Context, store *store.Store, index uint64, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		ws := memdb.NewWatchSet()
		ws.Add(store.AbandonCh())
		if store.WatchLatestIndex(ws) >= index {
			return nil
		}
		if err := ws.WatchCtx(ctx); err != nil {
			return fmt.Errorf("wait for state index %d (at %d): %w", index, store.LatestIndex(), err)
		}
	}
}

// snapshotAt returns a snapshot of the store at index or later.
func snapshotAt(ctx context.Context, store *store.Store, index uint64, timeout time.Duration) (*store.StateSnapshot, error) {
	if err := waitForIndex(ctx, store, index, timeout); err != nil {
		return nil, err
	}
	return store.Snapshot()
}

// retryWrite applies a command, retrying with backoff while this server
// still leads (ctx alive) and the failure is not the state machine
// refusing the command. Leader duties use it for writes that must not be
// lost to a transient error, such as a busy raft.
func retryWrite(ctx context.Context, r Raft, log *slog.Logger, what string, t store.MessageType, req any) (uint64, error) {
	delay := 100 * time.Millisecond
	for {
		_, index, err := r.Apply(ctx, t, req)
		if err == nil || state.IsRefusal(err) || ctx.Err() != nil {
			return index, err
		}
		log.Warn("scheduler write failed; retrying", "write", what, "error", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// followTables runs pass after every change of the named tables, and
// again at the time the last pass returned (zero: only on a change), the
// passes spaced by every; it returns when ctx ends. pass reads through ws
// what it wants to be woken by, beyond the tables.
func followTables(ctx context.Context, st *store.Store, every time.Duration, tables []string, pass func(ctx context.Context, ws memdb.WatchSet) time.Time) {
	pace := pacer{every: every}
	for {
		if !pace.wait(ctx) {
			return
		}
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		for _, t := range tables {
			st.WatchIndex(ws, t)
		}
		next := pass(ctx, ws)
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if !next.IsZero() {
			wctx, cancel = context.WithDeadline(ctx, next)
		}
		err := ws.WatchCtx(wctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return
		}
	}
}

// pacer spaces out the passes of a table follower: a pass that would
// follow the previous one sooner than every first waits out the rest, so a
// burst of writes (thousands of nodes registering) costs a few passes over
// the table rather than one per write. It waits on a timer, not on state.
type pacer struct {
	every time.Duration
	last  time.Time
}

// wait returns once the next pass may run, or false when ctx ends first.
func (p *pacer) wait(ctx context.Context) bool {
	if d := p.every - time.Since(p.last); p.every > 0 && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	p.last = time.Now()
	return ctx.Err() == nil
}

// jobKey names a job across namespaces.
type jobKey struct{ ns, id string }

func jobKeyOf(e *state.Evaluation) jobKey { return jobKey{e.Namespace, e.JobID} }

// schedulerTypes returns the eval types of a scheduler map, sorted.
func schedulerTypes(m map[string]scheduler.Factory) []string {
	types := make([]string, 0, len(m))
	for t := range m {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}
