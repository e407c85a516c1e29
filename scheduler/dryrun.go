package scheduler

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
)

// DryRunResult is what scheduling a proposed job would do (the plan
// endpoint, spec §4.17).
type DryRunResult struct {
	// Plan is the plan the scheduler would submit, with Annotations.
	Plan *Plan
	// Annotations count, per task group, what the plan does.
	Annotations *state.PlanAnnotations
	// FailedTGAllocs explains, per task group, placements that would fail.
	FailedTGAllocs map[string]*state.AllocMetric
	// CreatedEvals are the evals the run would create: a blocked eval
	// for failed placements, follow-ups for delayed reschedules.
	CreatedEvals []*state.Evaluation
	// Eval is the evaluation the dry run processed, as it would be
	// closed.
	Eval *state.Evaluation
}

// DryRun schedules job as if it were registered now, against st, and
// reports what would happen, writing nothing: the job is overlaid on st
// (with the version and JobModifyIndex a register would give it, or the
// current ones when its spec is unchanged) and the planner records the
// plan and the evals instead of committing them. Every placement is
// assumed to commit, as nothing else competes for the nodes.
func DryRun(cfg Config, st State, job *state.Job) (*DryRunResult, error) {
	if job == nil {
		return nil, fmt.Errorf("dry run: missing job")
	}
	factory, ok := BuiltinSchedulers[job.Type]
	if !ok {
		return nil, fmt.Errorf("dry run: no scheduler for job type %q", job.Type)
	}
	cfg = cfg.withDefaults()
	existing, err := st.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("dry run: read job: %w", err)
	}
	proposed := job.Copy()
	next := st.LatestIndex() + 1
	switch {
	case existing == nil:
		proposed.Version = 0
		proposed.CreateIndex, proposed.ModifyIndex, proposed.JobModifyIndex = next, next, next
	case !existing.SpecChanged(proposed):
		proposed.Version = existing.Version
		proposed.CreateIndex, proposed.ModifyIndex, proposed.JobModifyIndex =
			existing.CreateIndex, existing.ModifyIndex, existing.JobModifyIndex
	default:
		proposed.Version = existing.Version + 1
		proposed.CreateIndex = existing.CreateIndex
		proposed.ModifyIndex, proposed.JobModifyIndex = next, next
	}
	now := cfg.Now()
	eval := &state.Evaluation{
		ID:             cfg.NewID(),
		Namespace:      proposed.Namespace,
		Priority:       proposed.Priority,
		Type:           proposed.Type,
		TriggeredBy:    state.EvalTriggerJobRegister,
		JobID:          proposed.ID,
		JobModifyIndex: proposed.JobModifyIndex,
		Status:         state.EvalStatusPending,
		AnnotatePlan:   true,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
	p := &recordingPlanner{}
	view := &overlayState{State: st, job: proposed}
	if err := factory(cfg, view, p).Process(eval); err != nil {
		return nil, fmt.Errorf("dry run: %w", err)
	}
	res := &DryRunResult{Plan: p.plan, CreatedEvals: p.created, Eval: p.updated}
	if res.Plan == nil {
		res.Plan = &Plan{EvalID: eval.ID, Job: proposed}
	}
	res.Annotations = res.Plan.Annotations
	if res.Annotations == nil {
		res.Annotations = &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{}}
	}
	res.Annotations.PreemptedAllocs = preemptedStubs(res.Plan) // preempt.go
	if p.updated != nil {
		res.FailedTGAllocs = p.updated.FailedTGAllocs
	}
	return res, nil
}

// overlayState is a State in which one job is replaced by a proposed
// version; it lists only allocations of that job's instance (none for a
// job that does not exist yet, even if a purged job with its ID left
// some).
type overlayState struct {
	State
	job *state.Job
}

var _ State = (*overlayState)(nil)

// JobByID returns the proposed job in place of the stored one.
func (o *overlayState) JobByID(ws memdb.WatchSet, ns, id string) (*state.Job, error) {
	if ns == o.job.Namespace && id == o.job.ID {
		return o.job, nil
	}
	return o.State.JobByID(ws, ns, id)
}

// AllocsByJob lists the allocations of the proposed job's instance.
func (o *overlayState) AllocsByJob(ws memdb.WatchSet, ns, id string, all bool) ([]*state.Allocation, error) {
	allocs, err := o.State.AllocsByJob(ws, ns, id, all)
	if err != nil || all || ns != o.job.Namespace || id != o.job.ID {
		return allocs, err
	}
	kept := allocs[:0:0]
	for _, a := range allocs {
		if a.Job == nil || a.Job.CreateIndex == o.job.CreateIndex {
			kept = append(kept, a)
		}
	}
	return kept, nil
}

// recordingPlanner is the planner of a dry run: it accepts every plan
// whole and commits nothing.
type recordingPlanner struct {
	plan    *Plan
	created []*state.Evaluation
	updated *state.Evaluation
}

var _ Planner = (*recordingPlanner)(nil)

// SubmitPlan records the plan and reports it committed whole.
func (p *recordingPlanner) SubmitPlan(plan *Plan) (*PlanResult, State, error) {
	p.plan = plan
	p.created = append(p.created, plan.FollowupEvals...)
	return &PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation, NodePreemptions: plan.NodePreemptions, Deployment: plan.Deployment}, nil, nil
}

// UpdateEval records the eval's final state.
func (p *recordingPlanner) UpdateEval(e *state.Evaluation) error {
	p.updated = e
	return nil
}

// CreateEval records an eval the run would create.
func (p *recordingPlanner) CreateEval(e *state.Evaluation) error {
	p.created = append(p.created, e)
	return nil
}

// ReblockEval records the eval's final state.
func (p *recordingPlanner) ReblockEval(e *state.Evaluation) error {
	p.updated = e
	return nil
}
