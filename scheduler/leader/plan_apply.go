package leader

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// PlanApplier is the one goroutine on the leader that commits plans. Every
// plan is checked against the latest state, not the snapshot its scheduler
// saw: for each node the plan places on, the node must exist and be ready
// (for new placements), and the allocations that will be on it (those
// there now that the plan does not stop or replace, plus the plan's) must
// fit it, as AllocsFit decides, in CPU, memory, disk and ports. What fits
// is committed in one Raft write; a node that does not fit is left out
// whole (its stops too, so a destructive update never stops without
// placing), and an AllAtOnce plan is committed whole or not at all. The
// worker is told what was committed, and, when anything was left out, the
// index to refresh its state to before retrying.
//
// Because there is one applier and every check reads state that includes
// every earlier commit, no node is ever over-committed, however many
// workers plan concurrently from stale snapshots.
//
// The applier overlaps work: it checks the next plan while earlier
// commits are in flight (up to maxInflightCommits, so that Raft writes
// the plans of several evaluations in one disk write), against the latest
// state plus the in-flight plans' allocations (pendingOverlay). Counting
// what they take and nothing they free keeps the check safe whether each
// of them lands or fails, so no plan is checked again.
//
// A node left out because of a commit still in flight (the overlay) is
// answered only once that commit has landed, with a refresh index that
// covers it: the scheduler's fresh state then shows what the node was
// refused for. Answered at once, the worker refreshed to a state without
// the in-flight placements, picked the same node again, and was refused
// again until its plan attempts ran out (scheduler.maxPlanAttempts) and
// its job waited for a follow-up evaluation 5 s later.
//
// The applier refuses a plan whose EvalToken is no longer the broker's
// outstanding delivery of its evaluation: that evaluation was redelivered
// to another worker, whose plan is the one that counts.
type PlanApplier struct {
	// observe receives timings (nopObserver unless the runtime sets one).
	observe Observer
	store   *store.Store
	raft    Raft
	queue   *PlanQueue
	broker  *EvalBroker
	log     *slog.Logger
	now     func() time.Time
	run     runner
	// fg is the API's writes in flight: while a burst of them is, fewer
	// large commits go in flight at once (busyInflightAllocs). nil: never.
	fg *Foreground

	// answers counts the goroutines that have a plan still to answer:
	// its commit's, or one held until the commits in flight it was
	// refused for land (refreshAfter). The loop waits for them as it
	// exits.
	answers sync.WaitGroup

	mu    sync.Mutex
	stats PlanApplierStats
}

// PlanApplierStats counts what the applier did since it was built.
type PlanApplierStats struct {
	// Plans is the number of plans answered, Committed those with
	// something committed, Partial those with a node left out, and
	// Refused those refused for a stale token.
	Plans, Committed, Partial, Refused int
	// Placements and Stops count committed allocations.
	Placements, Stops int
	// NodesRejected counts node plans left out, and PlacementsRefused
	// the allocations they would have placed or updated (the scheduler
	// places them again).
	NodesRejected, PlacementsRefused int
	// EvalsClosed counts plans committed with their evaluation's status.
	EvalsClosed int
}

// NewPlanApplier returns a stopped applier of queue's plans.
func NewPlanApplier(store *store.Store, raft Raft, queue *PlanQueue, broker *EvalBroker, log *slog.Logger, now func() time.Time) *PlanApplier {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &PlanApplier{store: store, raft: raft, queue: queue, broker: broker, log: log, now: now, observe: nopObserver{}}
}

// Name implements Service.
func (a *PlanApplier) Name() string { return "plan-applier" }

// Start enables the plan queue and applies its plans until Stop.
func (a *PlanApplier) Start(ctx context.Context) error {
	a.queue.SetEnabled(true)
	return a.run.start(ctx, a.loop)
}

// Stop disables the queue (queued plans fail with ErrNotLeader), waits for
// a commit in flight, and returns once the applier has exited.
func (a *PlanApplier) Stop() {
	a.queue.SetEnabled(false)
	a.run.stop()
}

// Stats returns the applier's counters.
func (a *PlanApplier) Stats() PlanApplierStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// commitOp is a plan commit in flight.
type commitOp struct {
	// pending holds, by node, the live allocations the commit places,
	// under IDs of their own (see pendingOverlay), for checking the next
	// plans before the commit lands. They are made once per commit: a
	// commit stays in flight while up to maxInflightCommits plans are
	// checked.
	pending map[string][]*state.Allocation
	// adds is what the commit adds to its nodes, for the workers
	// (PlanQueue.Inflight); nil when it creates no allocation.
	adds *InflightCommit
	// allocs is how many allocations the commit writes (resultAllocs).
	allocs int
	done   chan struct{}
	index  uint64
	err    error
}

func (a *PlanApplier) loop(ctx context.Context) {
	// inflight are the commits sent to Raft and not landed yet, oldest
	// first. Up to maxInflightCommits go at once, so Raft writes the
	// plans of several evaluations in one disk write (group commit)
	// instead of one write per plan.
	var inflight []*commitOp
	defer a.answers.Wait()
	defer a.queue.setInflight(nil)
	for {
		p, err := a.queue.Dequeue(ctx)
		if err != nil {
			return
		}
		plan := p.Plan
		if token, ok := a.broker.Outstanding(plan.EvalID); !ok || token != plan.EvalToken {
			a.count(func(s *PlanApplierStats) { s.Plans++; s.Refused++ })
			p.respond(nil, fmt.Errorf("eval %s: %w", plan.EvalID, ErrPlanTokenMismatch))
			continue
		}
		inflight = landed(inflight)
		a.queue.setInflight(inflight)
		start := time.Now()
		result, rejected, err := a.evaluate(plan, pendingOverlay(inflight))
		a.observe.PlanEvaluated(time.Since(start))
		if err != nil {
			a.count(func(s *PlanApplierStats) { s.Plans++ })
			p.respond(nil, fmt.Errorf("check plan of eval %s: %w", plan.EvalID, err))
			continue
		}
		refused := 0
		for _, r := range rejected {
			a.log.Debug("plan applier left out a node", "eval_id", plan.EvalID, "node_id", r.Node, "reason", r.Reason)
			for _, al := range plan.NodeAllocation[r.Node] {
				if !al.Terminal() {
					refused++
				}
			}
		}
		if refused > 0 {
			a.count(func(s *PlanApplierStats) { s.PlacementsRefused += refused })
		}
		// The commits in flight on the nodes left out: the worker's
		// refreshed state must include them.
		refusedFor := inflightOn(inflight, rejected)
		// A plan committed whole closes its evaluation in the same entry;
		// one with anything left out leaves that to its scheduler.
		result.EvalUpdated = plan.EvalUpdate != nil && len(rejected) == 0 && result.RefreshIndex == 0
		if scheduler.ResultEmpty(result) && !result.EvalUpdated {
			if result.RefreshIndex != 0 {
				result.RefreshIndex = max(result.RefreshIndex, a.store.LatestIndex())
			}
			a.count(func(s *PlanApplierStats) {
				s.Plans++
				s.NodesRejected += len(rejected)
				if len(rejected) > 0 {
					s.Partial++
				}
			})
			if result.RefreshIndex == 0 || len(refusedFor) == 0 {
				p.respond(result, nil)
				continue
			}
			// Answered when those commits land; the applier goes on
			// with the next plan meanwhile.
			a.answers.Add(1)
			go func() {
				defer a.answers.Done()
				refreshAfter(result, refusedFor)
				p.respond(result, nil)
			}()
			continue
		}
		allocs := resultAllocs(result)
		busy := a.fg.busy(foregroundQuiet)
		for len(inflight) >= maxInflightCommits || busy && len(inflight) > 0 && inflightAllocCount(inflight)+allocs > busyInflightAllocs {
			<-inflight[0].done
			inflight = inflight[1:]
		}
		inflight = append(inflight, a.commit(ctx, p, result, len(rejected), refusedFor))
		a.queue.setInflight(inflight)
	}
}

// inflightPrefix starts the IDs of pendingOverlay's copies.
const inflightPrefix = "in-flight/"

// maxInflightCommits bounds the plan commits in flight at once. A plan's
// worker waits for its commit, so no more are in flight than there are
// workers; the bound sits above a two-core server's 32 (6 general and 26
// for small jobs) and keeps a larger one's from queueing without end in
// Raft. At 16, an execution trace of 2,000 one-allocation jobs' backlog
// (docs/scale.md, round 8) had all 32 workers waiting on their plans
// while 13 commits were in Raft on average: the rest waited for the
// applier to take them.
const maxInflightCommits = 48

// busyInflightAllocs bounds the allocations the commits in flight write
// while a burst of the API's writes is in flight (Foreground): a commit
// goes only if it and those in flight write at most this many, or if it
// would be the only one in flight. A write waits in Raft's queue behind every commit sent
// before it, and a plan placing a thousand allocations is a megabyte the
// state machine takes tens of milliseconds to apply: behind sixteen of
// them a job registration waited most of a second, and 1,000
// registrations from 16 clients took 14–25 s while C1M placed (7 s with
// this bound). Small plans (a few allocations each) still go up to
// maxInflightCommits at a time, so the group commit of a burst of
// one-allocation jobs is kept.
const busyInflightAllocs = 2000

// resultAllocs is how many allocations a plan's commit writes.
func resultAllocs(r *scheduler.PlanResult) int {
	n := 0
	for _, as := range r.NodeAllocation {
		n += len(as)
	}
	for _, as := range r.NodeUpdate {
		n += len(as)
	}
	return n
}

// inflightAllocCount is how many allocations the commits in flight write.
func inflightAllocCount(inflight []*commitOp) int {
	n := 0
	for _, op := range inflight {
		n += op.allocs
	}
	return n
}

// inflightOn returns the commits of inflight that place allocations on a
// node of rejected: what those nodes may have been refused for.
func inflightOn(inflight []*commitOp, rejected []scheduler.Rejection) []*commitOp {
	var out []*commitOp
	for _, op := range inflight {
		for _, r := range rejected {
			if len(op.pending[r.Node]) > 0 {
				out = append(out, op)
				break
			}
		}
	}
	return out
}

// refreshAfter waits for ops to land and raises result's RefreshIndex to
// cover those that committed, so the worker's refreshed state shows what
// its plan was refused for.
func refreshAfter(result *scheduler.PlanResult, ops []*commitOp) {
	for _, op := range ops {
		<-op.done
		if op.err == nil {
			result.RefreshIndex = max(result.RefreshIndex, op.index)
		}
	}
}

// landed drops the commits that have landed from inflight, wherever they
// are, not only from its front: a landed commit is in the state, and
// counted in the overlay as well it would make its node look fuller than
// it is (a plan refused for it would be refused again after its refresh,
// for as long as an older commit stayed in flight).
func landed(inflight []*commitOp) []*commitOp {
	out := inflight[:0]
	for _, op := range inflight {
		select {
		case <-op.done:
		default:
			out = append(out, op)
		}
	}
	clear(inflight[len(out):])
	return out
}

// pendingOverlay is what the next plan is checked against besides the
// state: the placements of the commits in flight, counted as taking their
// resources in addition to whatever the state holds (under IDs of their
// own, so nothing of the state is taken as replaced), and their stops not
// counted as freeing anything. Any of them may still fail, and they may
// land in any order: counting what they take and nothing they free keeps
// the check safe either way, so no plan is ever re-checked when one
// fails. What it costs: a plan that needs room an in-flight plan frees
// on the same node is refused there until that commit lands, and the
// scheduler retries on a fresh state (the result's RefreshIndex).
func pendingOverlay(inflight []*commitOp) map[string][]*state.Allocation {
	if len(inflight) == 0 {
		return nil
	}
	if len(inflight) == 1 {
		return inflight[0].pending // read only, like a merged one
	}
	out := map[string][]*state.Allocation{}
	for _, op := range inflight {
		for node, allocs := range op.pending {
			out[node] = append(out[node], allocs...)
		}
	}
	return out
}

// inflightAllocs is a commit's part of pendingOverlay: the live
// allocations of result, by node, copied under IDs of their own.
func inflightAllocs(result *scheduler.PlanResult) map[string][]*state.Allocation {
	out := map[string][]*state.Allocation{}
	for node, allocs := range scheduler.ResultOverlay(result) {
		for _, a := range allocs {
			if a.Terminal() {
				continue
			}
			c := *a
			c.ID = inflightPrefix + a.ID
			out[node] = append(out[node], &c)
		}
	}
	return out
}

// evaluate checks plan against the latest state plus overlay.
func (a *PlanApplier) evaluate(plan *scheduler.Plan, overlay map[string][]*state.Allocation) (*scheduler.PlanResult, []scheduler.Rejection, error) {
	snap, err := a.store.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	return scheduler.EvaluatePlan(snap, overlay, plan)
}

// commit writes result through Raft in the background and answers the
// worker when it lands and, when nodes were left out, once refusedFor
// (the commits in flight on them) have landed too.
func (a *PlanApplier) commit(ctx context.Context, p *PendingPlan, result *scheduler.PlanResult, rejected int, refusedFor []*commitOp) *commitOp {
	op := &commitOp{pending: inflightAllocs(result), adds: inflightCommit(result), allocs: resultAllocs(result), done: make(chan struct{})}
	req := PlanApplyCommand(p.Plan, result, a.now().UnixNano())
	a.answers.Add(1)
	go func() {
		defer a.answers.Done()
		start := time.Now()
		packed, mt, err := req.Packed(a.store.HoldsJob)
		var index uint64
		if err == nil {
			_, index, err = a.raft.Apply(ctx, mt, packed)
		}
		a.observe.PlanApplied(time.Since(start))
		op.index, op.err = index, err
		close(op.done) // landed (or failed): no longer part of the overlay
		if err != nil {
			a.count(func(s *PlanApplierStats) { s.Plans++ })
			p.respond(nil, fmt.Errorf("commit plan of eval %s: %w", p.Plan.EvalID, err))
			return
		}
		result.AllocIndex = index
		if result.RefreshIndex != 0 {
			result.RefreshIndex = max(result.RefreshIndex, index)
			// Commits sent earlier may land later (each goes to Raft
			// from its own goroutine).
			refreshAfter(result, refusedFor)
		}
		a.count(func(s *PlanApplierStats) {
			s.Plans++
			s.Committed++
			s.Placements += len(req.JobAllocs) + len(req.Allocs)
			s.Stops += len(req.Stops)
			s.NodesRejected += rejected
			if rejected > 0 {
				s.Partial++
			}
			if result.EvalUpdated {
				s.EvalsClosed++
			}
		})
		p.respond(result, nil)
	}()
	return op
}

func (a *PlanApplier) count(fn func(*PlanApplierStats)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn(&a.stats)
}

// PlanApplyCommand returns the command that commits result, the accepted
// part of plan, at leader time now (Unix nanoseconds): CommitOf's
// allocations in a store command with the plan's follow-up evaluations,
// and, when result.EvalUpdated, the plan's created evaluations and then
// its evaluation's status, in the order the scheduler would have written
// them. plan and result are not changed.
func PlanApplyCommand(plan *scheduler.Plan, result *scheduler.PlanResult, now int64) *store.PlanApplyRequest {
	c := scheduler.CommitOf(plan, result)
	req := &store.PlanApplyRequest{
		EvalID: plan.EvalID, Deployment: result.Deployment, Now: now,
		Job: c.Job, JobAllocs: c.JobAllocs, Allocs: c.Allocs, Stops: c.Stops,
		Evals: plan.FollowupEvals,
	}
	if len(c.Evals) > 0 { // evaluations of preempted jobs
		req.Evals = append(slices.Clip(req.Evals), c.Evals...)
	}
	if result.EvalUpdated && plan.EvalUpdate != nil {
		req.EvalStatus = make([]*state.Evaluation, 0, len(plan.CreatedEvals)+1)
		req.EvalStatus = append(req.EvalStatus, plan.CreatedEvals...)
		req.EvalStatus = append(req.EvalStatus, plan.EvalUpdate)
	}
	return req
}
