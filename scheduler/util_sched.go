package scheduler

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/schedhq/sched/state"
)

// maxPlanAttempts bounds how many times in a row an eval's plan may be
// partly rejected without anything being committed before the scheduler
// gives up and leaves the work to a follow-up eval.
const maxPlanAttempts = 5

// maxAttemptsBackoff is how long the follow-up of an eval that ran out of
// plan attempts waits, so a contended cluster gets time to settle.
const maxAttemptsBackoff = 5 * time.Second

// BuiltinSchedulers maps a job (and eval) type to its scheduler.
var BuiltinSchedulers = map[string]Factory{
	state.JobTypeService:  NewServiceScheduler,
	state.JobTypeBatch:    NewBatchScheduler,
	state.JobTypeSystem:   NewSystemScheduler,
	state.JobTypeSysBatch: NewSysBatchScheduler,
}

// schedCore is what the generic and system schedulers share: the retry
// loop around plan submission, the plan being built, failure metrics, and
// how the eval is closed (complete, blocked eval, follow-up).
type schedCore struct {
	cfg     Config
	state   State
	planner Planner
	logger  *slog.Logger

	eval *state.Evaluation
	job  *state.Job
	plan *Plan
	ctx  *evalContext

	// failed holds the metric of the first failed placement of each
	// group; queued counts the placements each group could not make.
	failed map[string]*state.AllocMetric
	queued map[string]int
	// desired counts what the plan does per group, for annotations.
	desired map[string]*state.DesiredUpdates
	// stops maps an allocation ID to its stop in the plan, so a
	// replacement placed later can link to it.
	stops map[string]*state.Allocation
	// quota checks placements against the namespace's quota (quota.go);
	// quotaFailed marks the groups whose placements it refused.
	quota       quotaCheck
	quotaFailed map[string]bool
}

func newCore(cfg Config, st State, p Planner, kind string) schedCore {
	cfg = cfg.withDefaults()
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return schedCore{cfg: cfg, state: st, planner: p, logger: logger.With("scheduler", kind)}
}

// process runs compute (which fills c.plan from c.state) and submits the
// plan until it commits whole, refreshing the state after each partial
// commit, then closes the eval. The plan carries the eval's closing, so
// a plan the applier commits in full closes the eval in the same Raft
// entry; otherwise the scheduler writes it once done.
func (c *schedCore) process(eval *state.Evaluation, compute func() error) error {
	c.eval = eval
	c.logger = c.logger.With("eval_id", eval.ID, "job_id", eval.JobID, "namespace", eval.Namespace)
	misses := 0
	var cl closing
	for {
		if err := c.begin(); err != nil {
			return err
		}
		if err := compute(); err != nil {
			return err
		}
		if len(c.desired) > 0 && c.eval.AnnotatePlan {
			c.plan.Annotations = &state.PlanAnnotations{DesiredTGUpdates: c.desired}
		}
		cl = c.closing()
		if c.plan.IsNoOp() && !c.eval.AnnotatePlan {
			break
		}
		if !cl.reblock {
			c.plan.EvalUpdate = cl.done
			if cl.blocked != nil {
				c.plan.CreatedEvals = []*state.Evaluation{cl.blocked}
			}
		}
		result, fresh, err := c.planner.SubmitPlan(c.plan)
		if err != nil {
			return fmt.Errorf("submit plan: %w", err)
		}
		if fresh != nil {
			c.state = fresh
		}
		full, expected, actual := result.FullCommit(c.plan)
		if full {
			if result.EvalUpdated {
				return nil
			}
			break
		}
		c.logger.Debug("plan partly committed, retrying", "expected", expected, "committed", actual)
		if actual > 0 {
			misses = 0
		} else {
			misses++
		}
		if misses >= maxPlanAttempts {
			return c.giveUp()
		}
	}
	return c.finish(cl)
}

// begin resets the per-attempt state and loads the job.
func (c *schedCore) begin() error {
	job, err := c.state.JobByID(nil, c.eval.Namespace, c.eval.JobID)
	if err != nil {
		return fmt.Errorf("read job: %w", err)
	}
	c.job = job
	c.plan = &Plan{
		EvalID:        c.eval.ID,
		Priority:      c.eval.Priority,
		Job:           job,
		SnapshotIndex: c.state.LatestIndex(),
	}
	if job != nil {
		c.plan.Priority = job.Priority
		c.plan.AllAtOnce = job.AllAtOnce
	}
	c.ctx = newEvalContext(c.state, c.plan, c.logger, c.cfg.Now(), seedOf(c.eval.ID))
	c.failed = map[string]*state.AllocMetric{}
	c.queued = map[string]int{}
	c.desired = map[string]*state.DesiredUpdates{}
	c.stops = map[string]*state.Allocation{}
	c.quotaFailed = map[string]bool{}
	if c.quota, err = loadQuota(c.state, job); err != nil {
		return fmt.Errorf("read quota: %w", err)
	}
	if job != nil {
		for _, tg := range job.TaskGroups {
			c.queued[tg.Name] = 0
		}
	}
	return nil
}

// stop adds a stop request to the plan, keeping the allocation's
// DesiredTransition (so NoShutdownDelay reaches the client).
func (c *schedCore) stop(s stopRequest) *state.Allocation {
	c.quota.stopped(s.alloc)
	cp := s.alloc.CopySkipJob()
	cp.DesiredStatus = state.AllocDesiredStatusStop
	cp.DesiredDescription = s.desc
	cp.ClientStatus, cp.ClientDescription = "", ""
	if s.lost {
		cp.ClientStatus = state.AllocClientStatusLost
		cp.ClientDescription = descLost
	}
	c.ctx.planStop(cp)
	c.stops[cp.ID] = cp
	return cp
}

// unstop takes a stop back out of the plan.
func (c *schedCore) unstop(a *state.Allocation) {
	c.ctx.planUnstop(a)
	c.quota.unstopped(a.ID)
	delete(c.stops, a.ID)
}

// newAlloc builds a new allocation of group tg on the chosen node.
func (c *schedCore) newAlloc(tg *state.TaskGroup, name string, o *option, m *state.AllocMetric) *state.Allocation {
	a := &state.Allocation{
		ID:                 c.cfg.NewID(),
		Namespace:          c.job.Namespace,
		EvalID:             c.eval.ID,
		Name:               name,
		NodeID:             o.node.ID,
		NodeName:           o.node.Name,
		JobID:              c.job.ID,
		Job:                c.job,
		TaskGroup:          tg.Name,
		AllocatedResources: o.resources,
		Metrics:            m,
		DesiredStatus:      state.AllocDesiredStatusRun,
		ClientStatus:       state.AllocClientStatusPending,
	}
	if len(o.preempt) > 0 {
		c.evict(a, o.preempt) // preempt.go
	}
	return a
}

// link makes next the replacement of prev, whose stop is in the plan.
func (c *schedCore) link(prev, next *state.Allocation) {
	next.PreviousAllocation = prev.ID
	if s := c.stops[prev.ID]; s != nil {
		s.NextAllocation = next.ID
	}
}

// placementFailed records a placement of tg that found no node.
func (c *schedCore) placementFailed(tg string, m *state.AllocMetric) {
	c.queued[tg]++
	if prev := c.failed[tg]; prev != nil {
		prev.CoalescedFailures++
		return
	}
	c.failed[tg] = m
}

// quotaRefused records a placement of tg the namespace's quota refused,
// with the reason in its metric.
func (c *schedCore) quotaRefused(tg, reason string, m *state.AllocMetric) {
	if m == nil {
		m = &state.AllocMetric{}
	}
	m.QuotaExhausted = append(m.QuotaExhausted, reason)
	c.quotaFailed[tg] = true
	c.placementFailed(tg, m)
}

// quotaBlocked returns the quota that refused every failed placement, or
// "" when some failed for another reason (capacity, constraints).
func (c *schedCore) quotaBlocked() string {
	if c.quota.name == "" || len(c.failed) == 0 {
		return ""
	}
	for tg := range c.failed {
		if !c.quotaFailed[tg] {
			return ""
		}
	}
	return c.quota.name
}

// newEval returns a follow-up eval of the eval being processed.
func (c *schedCore) newEval(trigger, status, desc string) *state.Evaluation {
	now := c.ctx.now.UnixNano()
	e := &state.Evaluation{
		ID:                c.cfg.NewID(),
		Namespace:         c.eval.Namespace,
		Priority:          c.eval.Priority,
		Type:              c.eval.Type,
		TriggeredBy:       trigger,
		JobID:             c.eval.JobID,
		JobModifyIndex:    c.eval.JobModifyIndex,
		Status:            status,
		StatusDescription: desc,
		PreviousEval:      c.eval.ID,
		CreateTime:        now,
		ModifyTime:        now,
	}
	if c.job != nil {
		e.Priority = c.job.Priority
		e.JobModifyIndex = c.job.JobModifyIndex
	}
	return e
}

// closing is how an evaluation ends once its plan committed whole.
type closing struct {
	// done is the evaluation's final status: complete, with its failure
	// metrics and queued counts, or, when reblock is set, blocked again.
	done *state.Evaluation
	// blocked is the evaluation left to place what failed, when the eval
	// is not itself a blocked one being re-blocked.
	blocked *state.Evaluation
	// reblock: the eval was blocked and still cannot place everything.
	reblock bool
}

// closing builds the eval's closing from the attempt just computed.
func (c *schedCore) closing() closing {
	done := c.eval.Copy()
	done.FailedTGAllocs = nil
	if len(c.failed) > 0 {
		done.FailedTGAllocs = c.failed
	}
	done.QueuedAllocations = c.queued
	done.SnapshotIndex = c.plan.SnapshotIndex
	if len(c.failed) > 0 && c.eval.Status == state.EvalStatusBlocked {
		done.ClassEligibility = c.ctx.elig.classEligibility()
		done.EscapedComputedClass = c.ctx.elig.escaped
		done.QuotaLimitReached = c.quotaBlocked()
		return closing{done: done, reblock: true}
	}
	var blocked *state.Evaluation
	if len(c.failed) > 0 {
		blocked = c.newEval(state.EvalTriggerQueuedAllocs, state.EvalStatusBlocked,
			"created to place remaining allocations")
		blocked.ClassEligibility = c.ctx.elig.classEligibility()
		blocked.EscapedComputedClass = c.ctx.elig.escaped
		blocked.QueuedAllocations = c.queued
		blocked.QuotaLimitReached = c.quotaBlocked()
		done.BlockedEval = blocked.ID
	}
	done.Status = state.EvalStatusComplete
	done.StatusDescription = ""
	done.ModifyTime = c.ctx.now.UnixNano()
	return closing{done: done, blocked: blocked}
}

// finish writes the eval's closing: when placements failed it leaves a
// blocked eval (or re-blocks the eval if it was itself blocked), then
// marks the eval complete with its failure metrics and queued counts.
func (c *schedCore) finish(cl closing) error {
	if cl.reblock {
		if err := c.planner.ReblockEval(cl.done); err != nil {
			return fmt.Errorf("reblock eval: %w", err)
		}
		return nil
	}
	if cl.blocked != nil {
		if err := c.planner.CreateEval(cl.blocked); err != nil {
			return fmt.Errorf("create blocked eval: %w", err)
		}
	}
	if err := c.planner.UpdateEval(cl.done); err != nil {
		return fmt.Errorf("update eval: %w", err)
	}
	return nil
}

// giveUp fails an eval whose plans kept being rejected and leaves the
// work to a follow-up eval that runs after a pause.
func (c *schedCore) giveUp() error {
	next := c.newEval(state.EvalTriggerMaxPlans, state.EvalStatusPending,
		"created after the previous eval ran out of plan attempts")
	next.WaitUntil = c.ctx.now.Add(maxAttemptsBackoff)
	if err := c.planner.CreateEval(next); err != nil {
		return fmt.Errorf("create follow-up eval: %w", err)
	}
	done := c.eval.Copy()
	done.Status = state.EvalStatusFailed
	done.StatusDescription = fmt.Sprintf("maximum attempts reached (%d)", maxPlanAttempts)
	done.NextEval = next.ID
	done.QueuedAllocations = c.queued
	done.SnapshotIndex = c.plan.SnapshotIndex
	done.ModifyTime = c.ctx.now.UnixNano()
	if err := c.planner.UpdateEval(done); err != nil {
		return fmt.Errorf("update eval: %w", err)
	}
	return nil
}
