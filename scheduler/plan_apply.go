package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

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
// The applier overlaps work: it checks the next plan while the previous
// one's commit is in flight, against the latest state plus the in-flight
// plan's allocations. It waits for that commit before starting the next;
// if the commit failed, it checks the next plan again without it.
//
// The applier refuses a plan whose EvalToken is no longer the broker's
// outstanding delivery of its evaluation: that evaluation was redelivered
// to another worker, whose plan is the one that counts.
type PlanApplier struct {
	store  *store.Store
	raft   Raft
	queue  *PlanQueue
	broker *EvalBroker
	log    *slog.Logger
	now    func() time.Time
	run    runner

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
	// NodesRejected counts node plans left out.
	NodesRejected int
}

// NewPlanApplier returns a stopped applier of queue's plans.
func NewPlanApplier(store *store.Store, raft Raft, queue *PlanQueue, broker *EvalBroker, log *slog.Logger, now func() time.Time) *PlanApplier {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &PlanApplier{store: store, raft: raft, queue: queue, broker: broker, log: log, now: now}
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
	// overlay holds the committed allocations by node, for checking the
	// next plan before the commit lands.
	overlay map[string][]*state.Allocation
	done    chan struct{}
	index   uint64
	err     error
}

func (a *PlanApplier) loop(ctx context.Context) {
	var inflight *commitOp
	defer func() {
		if inflight != nil {
			<-inflight.done
		}
	}()
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
		var overlay map[string][]*state.Allocation
		if inflight != nil {
			overlay = inflight.overlay
		}
		result, rejected, err := a.evaluate(plan, overlay)
		if inflight != nil {
			<-inflight.done
			failed := inflight.err != nil
			inflight = nil
			if failed && err == nil {
				// The plan was checked against allocations that were not
				// committed after all: check it again.
				result, rejected, err = a.evaluate(plan, nil)
			}
		}
		if err != nil {
			a.count(func(s *PlanApplierStats) { s.Plans++ })
			p.respond(nil, fmt.Errorf("check plan of eval %s: %w", plan.EvalID, err))
			continue
		}
		for _, r := range rejected {
			a.log.Debug("plan applier left out a node", "eval_id", plan.EvalID, "node_id", r.node, "reason", r.reason)
		}
		if resultEmpty(result) {
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
			p.respond(result, nil)
			continue
		}
		inflight = a.commit(ctx, p, result, len(rejected))
	}
}

// evaluate checks plan against the latest state plus overlay.
func (a *PlanApplier) evaluate(plan *Plan, overlay map[string][]*state.Allocation) (*PlanResult, []rejection, error) {
	snap, err := a.store.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	return evaluatePlan(snap, overlay, plan)
}

// commit writes result through Raft in the background and answers the
// worker when it lands.
func (a *PlanApplier) commit(ctx context.Context, p *PendingPlan, result *PlanResult, rejected int) *commitOp {
	op := &commitOp{overlay: resultOverlay(result), done: make(chan struct{})}
	req := PlanApplyCommand(p.Plan, result, a.now().UnixNano())
	go func() {
		defer close(op.done)
		_, index, err := a.raft.Apply(ctx, store.PlanApplyRequestType, req)
		op.index, op.err = index, err
		if err != nil {
			a.count(func(s *PlanApplierStats) { s.Plans++ })
			p.respond(nil, fmt.Errorf("commit plan of eval %s: %w", p.Plan.EvalID, err))
			return
		}
		result.AllocIndex = index
		if result.RefreshIndex != 0 {
			result.RefreshIndex = max(result.RefreshIndex, index)
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

// rejection is a node plan left out, and why.
type rejection struct {
	node, reason string
}

// evaluatePlan decides what of plan can be committed on top of snap plus
// overlay (allocations by node that are being committed and are not in
// snap yet; nil for none). It is the plan applier's check, pure so it can
// be tested on its own: see PlanApplier for the rules. The result's
// RefreshIndex is set when a node was left out.
func evaluatePlan(snap State, overlay map[string][]*state.Allocation, plan *Plan) (*PlanResult, []rejection, error) {
	result := &PlanResult{
		NodeUpdate:     map[string][]*state.Allocation{},
		NodeAllocation: map[string][]*state.Allocation{},
		Deployment:     plan.Deployment,
	}
	nodes := make([]string, 0, len(plan.NodeUpdate)+len(plan.NodeAllocation))
	for id := range plan.NodeUpdate {
		nodes = append(nodes, id)
	}
	for id := range plan.NodeAllocation {
		if _, ok := plan.NodeUpdate[id]; !ok {
			nodes = append(nodes, id)
		}
	}
	slices.Sort(nodes)
	var rejected []rejection
	for _, id := range nodes {
		ok, reason, err := evaluateNodePlan(snap, overlay, plan, id)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			rejected = append(rejected, rejection{node: id, reason: reason})
			if plan.AllAtOnce {
				return &PlanResult{RefreshIndex: snap.LatestIndex()}, rejected, nil
			}
			continue
		}
		if u := plan.NodeUpdate[id]; len(u) > 0 {
			result.NodeUpdate[id] = u
		}
		if p := plan.NodeAllocation[id]; len(p) > 0 {
			result.NodeAllocation[id] = p
		}
	}
	if len(rejected) > 0 {
		result.RefreshIndex = snap.LatestIndex()
	}
	return result, rejected, nil
}

// evaluateNodePlan checks the part of plan on one node.
func evaluateNodePlan(snap State, overlay map[string][]*state.Allocation, plan *Plan, nodeID string) (bool, string, error) {
	placed := plan.NodeAllocation[nodeID]
	if len(placed) == 0 {
		// Stopping always fits.
		return true, "", nil
	}
	existing, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	current := make(map[string]*state.Allocation, len(existing)+len(overlay[nodeID]))
	for _, a := range existing {
		current[a.ID] = a
	}
	for _, a := range overlay[nodeID] {
		current[a.ID] = a
	}
	needsFit, newPlacement := false, false
	for _, a := range placed {
		if a.Terminal() {
			continue
		}
		needsFit = true
		if old, ok := current[a.ID]; !ok || old.Terminal() {
			newPlacement = true
		}
	}
	if !needsFit {
		// Only bookkeeping on allocations that are done (e.g. the
		// follow-up evaluation of a failed one): nothing to fit.
		return true, "", nil
	}
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	switch {
	case node == nil:
		return false, "node does not exist", nil
	case node.Status != state.NodeStatusReady:
		return false, fmt.Sprintf("node is %s", node.Status), nil
	case newPlacement && node.Drain:
		return false, "node is draining", nil
	case newPlacement && node.SchedulingEligibility != state.NodeSchedulingEligible:
		return false, "node is not eligible for new placements", nil
	}
	leaving := make(map[string]bool, len(plan.NodeUpdate[nodeID])+len(placed))
	for _, a := range plan.NodeUpdate[nodeID] {
		leaving[a.ID] = true
	}
	for _, a := range placed {
		leaving[a.ID] = true
	}
	proposed := make([]*state.Allocation, 0, len(current)+len(placed))
	for id, a := range current {
		if !leaving[id] && !a.Terminal() {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placed...)
	fit, dim, err := AllocsFit(node, proposed)
	if err != nil {
		return false, fmt.Sprintf("node resources are invalid: %v", err), nil
	}
	if !fit {
		return false, "resources exhausted: " + dim, nil
	}
	return true, "", nil
}

// resultEmpty reports whether nothing of a plan is to be committed.
func resultEmpty(r *PlanResult) bool {
	return len(r.NodeUpdate) == 0 && len(r.NodeAllocation) == 0 && r.Deployment == nil
}

// resultOverlay lists a result's allocations by node: its stops (which
// are terminal) and its placements.
func resultOverlay(r *PlanResult) map[string][]*state.Allocation {
	out := make(map[string][]*state.Allocation, len(r.NodeUpdate)+len(r.NodeAllocation))
	for id, allocs := range r.NodeUpdate {
		out[id] = append(out[id], allocs...)
	}
	for id, allocs := range r.NodeAllocation {
		out[id] = append(out[id], allocs...)
	}
	return out
}

// PlanApplyCommand returns the command that commits result, the accepted
// part of plan, at leader time now (Unix nanoseconds). Placements of
// plan's job version travel without their job, which the command carries
// once; stops carry only what a stop changes. Nodes go in ID order, so the
// command is the same whatever the maps' order. plan and result are not
// changed.
func PlanApplyCommand(plan *Plan, result *PlanResult, now int64) *store.PlanApplyRequest {
	req := &store.PlanApplyRequest{EvalID: plan.EvalID, Deployment: result.Deployment, Now: now}
	for _, node := range sortedKeys(result.NodeUpdate) {
		for _, a := range result.NodeUpdate[node] {
			req.Stops = append(req.Stops, stopOf(a))
		}
	}
	for _, node := range sortedKeys(result.NodeAllocation) {
		for _, a := range result.NodeAllocation[node] {
			c := *a
			if plan.Job != nil && (c.Job == nil || sameJobVersion(c.Job, plan.Job)) {
				c.Job = nil
				req.JobAllocs = append(req.JobAllocs, &c)
			} else {
				req.Allocs = append(req.Allocs, &c)
			}
		}
	}
	if len(req.JobAllocs) > 0 {
		req.Job = plan.Job
	}
	return req
}

// stopOf keeps what a stop changes of an allocation.
func stopOf(a *state.Allocation) *state.Allocation {
	s := &state.Allocation{
		ID:                 a.ID,
		Namespace:          a.Namespace,
		JobID:              a.JobID,
		NodeID:             a.NodeID,
		TaskGroup:          a.TaskGroup,
		DesiredStatus:      a.DesiredStatus,
		DesiredDescription: a.DesiredDescription,
		DesiredTransition:  a.DesiredTransition,
		FollowupEvalID:     a.FollowupEvalID,
		NextAllocation:     a.NextAllocation,
	}
	if a.ClientStatus == state.AllocClientStatusLost {
		s.ClientStatus, s.ClientDescription = a.ClientStatus, a.ClientDescription
	}
	return s
}

// sameJobVersion reports whether a and b are the same version of the same
// job registration.
func sameJobVersion(a, b *state.Job) bool {
	return a == b || (a.Namespace == b.Namespace && a.ID == b.ID && a.Version == b.Version &&
		a.JobModifyIndex == b.JobModifyIndex && a.CreateIndex == b.CreateIndex)
}
