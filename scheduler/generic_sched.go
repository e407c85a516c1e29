package scheduler

import (
	"fmt"

	"github.com/schedhq/sched/state"
)

// genericScheduler schedules service and batch jobs: it keeps Count
// allocations of each task group placed on the best nodes, replacing
// failed allocations per the group's ReschedulePolicy and lost ones at
// once. A batch allocation that completed successfully is never run
// again; a service allocation that exits is replaced.
type genericScheduler struct {
	schedCore
	batch bool
}

// NewServiceScheduler returns the scheduler of service jobs.
func NewServiceScheduler(cfg Config, st State, p Planner) Scheduler {
	return &genericScheduler{schedCore: newCore(cfg, st, p, state.JobTypeService)}
}

// NewBatchScheduler returns the scheduler of batch jobs.
func NewBatchScheduler(cfg Config, st State, p Planner) Scheduler {
	return &genericScheduler{schedCore: newCore(cfg, st, p, state.JobTypeBatch), batch: true}
}

// Process reconciles the eval's job with its allocations, places what is
// missing, submits the plan (retrying after partial commits against a
// refreshed state) and closes the eval: complete, with FailedTGAllocs and
// QueuedAllocations, and a blocked eval when some placements failed.
func (s *genericScheduler) Process(eval *state.Evaluation) error {
	return s.process(eval, s.compute)
}

// compute fills the plan for one attempt.
func (s *genericScheduler) compute() error {
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID, false)
	if err != nil {
		return fmt.Errorf("read allocations: %w", err)
	}
	nodes := map[string]*state.Node{}
	for _, a := range allocs {
		if a.Terminal() {
			continue
		}
		if _, ok := nodes[a.NodeID]; ok {
			continue
		}
		n, err := s.ctx.node(a.NodeID)
		if err != nil {
			return fmt.Errorf("read node: %w", err)
		}
		nodes[a.NodeID] = n
	}
	r := &reconciler{
		job:    s.job,
		batch:  s.batch,
		eval:   s.eval,
		now:    s.ctx.now,
		newID:  s.cfg.NewID,
		allocs: allocs,
		nodes:  nodes,
	}
	if s.job != nil {
		if r.deployment, err = s.state.LatestDeploymentByJob(nil, s.job.Namespace, s.job.ID); err != nil {
			return fmt.Errorf("read deployment: %w", err)
		}
	}
	res := r.reconcile()
	s.desired = res.desired
	s.plan.Deployment = res.deployment

	s.plan.FollowupEvals = res.followups
	for _, a := range res.attrUpdates {
		s.ctx.planPlace(a)
	}
	for _, st := range res.stops {
		s.stop(st)
	}
	for _, a := range res.inplace {
		s.ctx.planPlace(a)
	}
	return s.place(res.places, allocs)
}

// place finds nodes for the placements, in order. Once a placement of a
// group fails, the group's other placements are not tried again in this
// eval (they would fail the same way): they count as coalesced failures.
func (s *genericScheduler) place(places []placeRequest, jobAllocs []*state.Allocation) error {
	if len(places) == 0 {
		return nil
	}
	ready, byDC, inPool, total, sorted, err := cachedReadyNodes(s.cfg.NodeSets, s.state, s.job)
	if err != nil {
		return fmt.Errorf("read nodes: %w", err)
	}
	cursor := s.ctx.newCursor(ready, total, sorted)
	ready = cursor.nodes // in the cursor's shuffled order
	rankers := map[string]*groupRanker{}
	for _, p := range places {
		select {
		case <-s.cfg.Cancel:
			return ErrCanceled
		default:
		}
		tg := p.tg
		if s.failed[tg.Name] != nil {
			s.placementFailed(tg.Name, nil)
			continue
		}
		rk := rankers[tg.Name]
		if rk == nil {
			rk = &groupRanker{
				ctx:       s.ctx,
				job:       s.job,
				tg:        tg,
				checker:   newGroupChecker(s.ctx, s.job, tg),
				spread:    newSpreadScorer(s.ctx, s.job, tg, ready),
				affinity:  newAffinityScorer(s.ctx, s.job, tg),
				nodes:     cursor,
				limit:     rankLimit(s.job, tg, len(ready)),
				jobAllocs: jobAllocs,
				base:      state.AllocMetric{NodesAvailable: byDC, NodesInPool: inPool},
			}
			rankers[tg.Name] = rk
		}
		var stopped *state.Allocation
		if p.stopPrevious != nil {
			// Stop first, so a replacement may take the old one's room.
			stopped = s.stop(*p.stopPrevious)
		}
		opts := placeOptions{}
		if p.kind == placeReschedule {
			opts.penaltyNodes = penaltyNodes(p.previous)
		}
		o, m, err := rk.selectNode(opts)
		if err != nil {
			return err
		}
		if o == nil && s.preemptionEnabled() {
			if o, err = rk.selectPreempt(); err != nil { // preempt.go
				return err
			}
		}
		if o == nil {
			if stopped != nil {
				s.unstop(stopped)
			}
			s.placementFailed(tg.Name, m)
			continue
		}
		if reason := s.quota.admit(&state.Allocation{Job: s.job, TaskGroup: tg.Name, AllocatedResources: o.resources}); reason != "" {
			if stopped != nil {
				s.unstop(stopped)
			}
			s.quotaRefused(tg.Name, reason, m.Copy())
			continue
		}
		a := s.newAlloc(tg, p.name, o, m)
		a.DeploymentID = p.deploymentID
		if p.canary {
			a.DeploymentStatus = &state.AllocDeploymentStatus{Canary: true}
		}
		if p.previous != nil {
			s.link(p.previous, a)
			a.RescheduleTracker = p.previous.RescheduleTracker.Copy()
			if p.reschedule {
				a.RescheduleTracker = nextTracker(p.previous, tg.ReschedulePolicy, s.ctx.now, p.delay)
			}
		}
		s.ctx.planPlace(a)
	}
	return nil
}

// penaltyNodes are the nodes an allocation chain recently failed on: the
// failed allocation's node and those of its earlier reschedules.
func penaltyNodes(prev *state.Allocation) map[string]bool {
	out := map[string]bool{prev.NodeID: true}
	if prev.RescheduleTracker != nil {
		for _, ev := range prev.RescheduleTracker.Events {
			out[ev.PrevNodeID] = true
		}
	}
	return out
}
