package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// snapshotWait bounds how long a worker waits for the store to reach the
// index an evaluation or a plan result needs. On the leader the store is
// normally there already; a longer wait means something is wrong, and the
// evaluation is nacked to be tried again.
const snapshotWait = 5 * time.Second

// WorkerPool runs the scheduling workers. Each worker takes an evaluation
// from the broker, waits until the store holds at least the evaluation's
// index, snapshots it, and runs the scheduler of the evaluation's type on
// the snapshot, as its Planner: plans go to the plan queue and the worker
// waits for the applier's answer; evaluation updates go through Raft. The
// worker acks the evaluation when the scheduler returns without error and
// nacks it otherwise.
type WorkerPool struct {
	observe    Observer
	store      *store.Store
	raft       Raft
	broker     *EvalBroker
	plans      *PlanQueue
	schedulers map[string]scheduler.Factory
	types      []string
	// n workers take any evaluation, and small more only small jobs'
	// (eval_broker_small.go).
	n, small int
	log      *slog.Logger
	now      func() time.Time
	newID    func() string
	limits   state.JobLimits
	// fg holds every worker but the first back while API writes are in
	// flight (Foreground); nil holds none back.
	fg  *Foreground
	run runner
	// nodeSets keeps the ready nodes the workers' evaluations read while
	// the nodes do not change (scheduler.NodeSets).
	nodeSets *scheduler.NodeSets

	mu    sync.Mutex
	stats WorkerStats
}

// WorkerStats counts the workers' evaluations since the pool was built.
type WorkerStats struct {
	Acked, Nacked int
	// SmallAcked counts the acks of the workers that take only small
	// jobs' evaluations (RuntimeConfig.SmallWorkers), within Acked.
	SmallAcked int
	// Plans counts plans submitted, and PlanRefused those the applier
	// refused for a stale token.
	Plans, PlanRefused int
	// GaveWay counts the times a worker waited for the API's writes in
	// flight before taking an evaluation (Foreground).
	GaveWay int
}

// NewWorkerPool returns stopped workers; cfg must have its defaults.
func NewWorkerPool(cfg RuntimeConfig, broker *EvalBroker, plans *PlanQueue) *WorkerPool {
	if cfg.Observe == nil {
		cfg.Observe = nopObserver{}
	}
	return &WorkerPool{
		store:      cfg.Store,
		raft:       cfg.Raft,
		broker:     broker,
		plans:      plans,
		schedulers: cfg.Schedulers,
		types:      schedulerTypes(cfg.Schedulers),
		n:          cfg.Workers,
		small:      cfg.SmallWorkers,
		log:        cfg.Logger,
		now:        cfg.Now,
		newID:      cfg.NewID,
		limits:     cfg.JobLimits,
		observe:    cfg.Observe,
		fg:         cfg.Foreground,
		nodeSets:   scheduler.NewNodeSets(),
	}
}

// Name implements Service.
func (p *WorkerPool) Name() string { return "workers" }

// Start runs the workers.
func (p *WorkerPool) Start(ctx context.Context) error {
	fns := make([]func(context.Context), p.n+p.small)
	for i := range fns {
		fns[i] = func(ctx context.Context) { p.work(ctx, i) }
	}
	return p.run.start(ctx, fns...)
}

// Stop stops the workers and waits for them; an evaluation being processed
// is abandoned (its plan fails or its writes are cancelled) and nacked, or
// simply dropped with the broker, and is redelivered by the next leader.
func (p *WorkerPool) Stop() { p.run.stop() }

// Stats returns the workers' counters.
func (p *WorkerPool) Stats() WorkerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *WorkerPool) count(fn func(*WorkerStats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(&p.stats)
}

// work is one worker's loop. Every worker but the first gives way to the
// API's writes in flight before it takes an evaluation (Foreground); the
// workers from p.n on take only small jobs' evaluations, and give way
// until the burst ends.
func (p *WorkerPool) work(ctx context.Context, id int) {
	dequeue, giveWayFor := p.broker.Dequeue, giveWayMax
	if id >= p.n {
		// The small-job workers wait out a burst whole: taking an
		// evaluation every giveWayMax each, 26 of them scheduled as much
		// during a burst of dispatches as the burst's own writes cost
		// (10,000 dispatches from 16 clients went 1,917-2,023/s ->
		// 1,407-1,489/s). The general workers keep the burst from
		// stopping the scheduling.
		dequeue, giveWayFor = p.broker.DequeueSmall, 0
	}
	for {
		if id > 0 {
			p.fg.giveWay(ctx, foregroundQuiet, giveWayFor, func() { p.count(func(s *WorkerStats) { s.GaveWay++ }) })
		}
		eval, token, err := dequeue(ctx, p.types, 0)
		if err != nil {
			return
		}
		if eval == nil {
			continue
		}
		p.process(ctx, id, eval, token)
	}
}

// process runs one delivery of an evaluation.
func (p *WorkerPool) process(ctx context.Context, id int, eval *state.Evaluation, token string) {
	log := p.log.With("worker", id, "eval_id", eval.ID, "job_id", eval.JobID, "namespace", eval.Namespace, "type", eval.Type)
	err := p.invoke(ctx, eval, token, log)
	if err == nil {
		if aerr := p.broker.Ack(eval.ID, token); aerr != nil {
			log.Warn("could not ack evaluation", "error", aerr)
			return
		}
		p.count(func(s *WorkerStats) {
			s.Acked++
			if id >= p.n {
				s.SmallAcked++
			}
		})
		return
	}
	if ctx.Err() == nil {
		log.Warn("evaluation failed; nacking it", "error", err)
	}
	if nerr := p.broker.Nack(eval.ID, token); nerr == nil {
		p.count(func(s *WorkerStats) { s.Nacked++ })
	}
}

// invoke runs the evaluation's scheduler on a fresh snapshot.
func (p *WorkerPool) invoke(ctx context.Context, eval *state.Evaluation, token string, log *slog.Logger) error {
	snap, err := snapshotAt(ctx, p.store, eval.ModifyIndex, snapshotWait)
	if err != nil {
		return err
	}
	factory := p.schedulers[eval.Type]
	if factory == nil {
		return fmt.Errorf("no scheduler for evaluation type %q", eval.Type)
	}
	planner := &workerPlanner{pool: p, ctx: ctx, eval: eval, token: token, snapIndex: snap.LatestIndex()}
	job, err := snap.JobByID(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return err
	}
	if job != nil && !job.Stop { // a stop places nothing, and must not be kept from stopping
		if lerr := p.limits.CheckCounts(job); lerr != nil {
			// Scheduling it could exhaust the leader's memory, and would
			// again on every redelivery and after every restart: the
			// evaluation fails, the server goes on.
			log.Warn("evaluation fails: its job is over the server's limits", "error", lerr)
			failed := eval.Copy()
			failed.Status = state.EvalStatusFailed
			failed.StatusDescription = fmt.Sprintf("job is over the server's limits: %v", lerr)
			return planner.UpdateEval(failed)
		}
	}
	sched := factory(scheduler.Config{Logger: log, Now: p.now, NewID: p.newID, Cancel: ctx.Done(), NodeSets: p.nodeSets}, p.withInflight(snap), planner)
	start := time.Now()
	err = sched.Process(eval.Copy())
	p.observe.SchedulerInvoked(eval.Type, time.Since(start))
	return err
}

// workerPlanner is the Planner of one delivery.
type workerPlanner struct {
	pool  *WorkerPool
	ctx   context.Context
	eval  *state.Evaluation
	token string
	// snapIndex is the index of the snapshot the scheduler works on,
	// recorded on the evaluations it writes so blocked evals know which
	// capacity changes it saw.
	snapIndex uint64
}

var _ scheduler.Planner = (*workerPlanner)(nil)

// SubmitPlan queues the plan for the applier and waits for its answer.
func (w *workerPlanner) SubmitPlan(plan *scheduler.Plan) (*scheduler.PlanResult, scheduler.State, error) {
	if plan.EvalID == "" {
		plan.EvalID = w.eval.ID
	}
	plan.EvalToken = w.token
	if plan.Priority == 0 {
		plan.Priority = w.eval.Priority
	}
	if plan.SnapshotIndex == 0 {
		plan.SnapshotIndex = w.snapIndex
	}
	if len(plan.FollowupEvals) > 0 {
		// Written with the plan: stamped as CreateEval stamps.
		followups := make([]*state.Evaluation, len(plan.FollowupEvals))
		for i, e := range plan.FollowupEvals {
			followups[i] = w.stampCreate(e)
		}
		plan.FollowupEvals = followups
	}
	if plan.EvalUpdate != nil {
		// Written with the plan if it commits whole: stamped as
		// UpdateEval and CreateEval stamp what they write.
		plan.EvalUpdate = w.stampUpdate(plan.EvalUpdate)
		created := make([]*state.Evaluation, len(plan.CreatedEvals))
		for i, e := range plan.CreatedEvals {
			created[i] = w.stampCreate(e)
		}
		plan.CreatedEvals = created
	}
	w.pool.count(func(s *WorkerStats) { s.Plans++ })
	pending, err := w.pool.plans.Enqueue(plan)
	if err != nil {
		return nil, nil, err
	}
	result, err := pending.Wait(w.ctx)
	if err != nil {
		if errors.Is(err, ErrPlanTokenMismatch) {
			w.pool.count(func(s *WorkerStats) { s.PlanRefused++ })
		}
		return nil, nil, err
	}
	// The worker is making progress: give it a fresh unacked timeout.
	_ = w.pool.broker.OutstandingReset(w.eval.ID, w.token)
	if result.RefreshIndex == 0 {
		return result, nil, nil
	}
	snap, err := snapshotAt(w.ctx, w.pool.store, result.RefreshIndex, snapshotWait)
	if err != nil {
		return nil, nil, err
	}
	w.snapIndex = snap.LatestIndex()
	return result, w.pool.withInflight(snap), nil
}

// UpdateEval records the evaluation's new status (and its job's queued
// counts).
func (w *workerPlanner) UpdateEval(eval *state.Evaluation) error {
	return w.write(w.stampUpdate(eval))
}

// stampUpdate returns a copy of eval as UpdateEval writes it.
func (w *workerPlanner) stampUpdate(eval *state.Evaluation) *state.Evaluation {
	c := eval.Copy()
	if c.SnapshotIndex == 0 {
		c.SnapshotIndex = w.snapIndex
	}
	c.ModifyTime = w.pool.now().UnixNano()
	return c
}

// CreateEval creates a follow-up or blocked evaluation. The feed hands it
// to the broker or blocked evals once it is in state.
func (w *workerPlanner) CreateEval(eval *state.Evaluation) error {
	return w.write(w.stampCreate(eval))
}

// stampCreate returns a copy of eval as CreateEval writes it.
func (w *workerPlanner) stampCreate(eval *state.Evaluation) *state.Evaluation {
	c := eval.Copy()
	if c.SnapshotIndex == 0 {
		c.SnapshotIndex = w.snapIndex
	}
	if c.Status == "" {
		c.Status = state.EvalStatusPending
	}
	now := w.pool.now().UnixNano()
	if c.CreateTime == 0 {
		c.CreateTime = now
	}
	c.ModifyTime = now
	return c
}

// ReblockEval blocks again an evaluation that was unblocked and still
// cannot place everything, recording the snapshot it was processed on.
func (w *workerPlanner) ReblockEval(eval *state.Evaluation) error {
	stored, err := w.pool.store.EvalByID(nil, eval.ID)
	if err != nil {
		return err
	}
	if stored == nil {
		return state.NotFoundf("evaluation %q not found", eval.ID)
	}
	if stored.Status != state.EvalStatusBlocked {
		return fmt.Errorf("evaluation %s is %s, not blocked: it cannot be re-blocked", eval.ID, stored.Status)
	}
	c := eval.Copy()
	c.Status = state.EvalStatusBlocked
	c.SnapshotIndex = w.snapIndex
	c.ModifyTime = w.pool.now().UnixNano()
	return w.write(c)
}

func (w *workerPlanner) write(e *state.Evaluation) error {
	_, _, err := w.pool.raft.Apply(w.ctx, store.EvalStatusUpdateRequestType, &store.EvalStatusUpdateRequest{Evals: []*state.Evaluation{e}})
	if err != nil {
		return fmt.Errorf("write evaluation %s: %w", e.ID, err)
	}
	return nil
}

// withInflight returns snap with what the plan commits in flight add to
// their nodes counted in each node's usage (inflightState), or snap
// itself when no commit it does not hold is in flight.
func (p *WorkerPool) withInflight(snap scheduler.State) scheduler.State {
	var pending []*InflightCommit
	for _, c := range p.plans.Inflight() {
		held, err := snap.AllocByID(nil, c.Probe)
		if err != nil || held != nil {
			// Landed (or unreadable: the applier checks every plan
			// anyway, so the ranking may go without it).
			continue
		}
		pending = append(pending, c)
	}
	if len(pending) == 0 {
		return snap
	}
	return inflightState{State: snap, inflight: pending}
}

// inflightState is a snapshot whose NodeUsage also counts the
// allocations of the plan commits in flight that it does not hold yet:
// accepted by the plan applier, on their way through Raft. A large plan
// takes a few hundred milliseconds to land, and computing the next one
// takes a few dozen: workers that ranked nodes on the snapshot alone
// piled onto the nodes such a commit was filling, and the applier
// refused them there (at a million placements on 5,000 nodes, 5,626
// nodes refused and 787 plans made again out of 1,787). It only steers
// the ranking: the applier still checks every plan against the state and
// its own overlay, so a commit that fails or lands meanwhile costs at
// most a refusal. Whether a commit landed is decided once, when the
// snapshot is wrapped, from one allocation of it (InflightCommit.Probe);
// a node's usage then costs a map lookup per commit.
type inflightState struct {
	scheduler.State
	inflight []*InflightCommit
}

// NodeUsage adds to the node's usage what the commits in flight that the
// snapshot does not hold add to it.
func (s inflightState) NodeUsage(ws memdb.WatchSet, nodeID string) (*state.NodeUsage, error) {
	u, err := s.State.NodeUsage(ws, nodeID)
	if err != nil {
		return nil, err
	}
	var out *state.NodeUsage
	for _, c := range s.inflight {
		add, ok := c.Usage[nodeID]
		if !ok {
			continue
		}
		if out == nil {
			out = &state.NodeUsage{NodeID: nodeID}
			if u != nil {
				*out = *u
			}
		}
		out.CPU += add.CPU
		out.MemoryMB += add.MemoryMB
		out.DiskMB += add.DiskMB
		out.Allocs += add.Allocs
	}
	if out == nil {
		return u, nil
	}
	return out, nil
}

// NodesStamp is the snapshot's (scheduler.NodesStamper): the commits in
// flight change no node.
func (s inflightState) NodesStamp() any {
	if st, ok := s.State.(scheduler.NodesStamper); ok {
		return st.NodesStamp()
	}
	return nil
}

// EachNodeUsage lists the snapshot's node usage, then what each commit
// in flight adds (scheduler.NodeUsageScanner: a node's usage is the sum
// of its parts).
func (s inflightState) EachNodeUsage(fn func(u *state.NodeUsage)) error {
	sc, ok := s.State.(scheduler.NodeUsageScanner)
	if !ok {
		return fmt.Errorf("state %T cannot list node usage", s.State)
	}
	if err := sc.EachNodeUsage(fn); err != nil {
		return err
	}
	for _, c := range s.inflight {
		for _, add := range c.Usage {
			fn(&add)
		}
	}
	return nil
}
