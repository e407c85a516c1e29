package store

import (
	"github.com/schedhq/sched/state"
)

// coalesceNodeEvals drops from evals (a node status change's) the
// node-update evaluations of jobs that already have a pending node-update
// evaluation due after coalesceAfter (Unix nanoseconds): that one, still
// held by the broker until its WaitUntil, reconciles the job against the
// state as it will be then, this change included. A zero coalesceAfter
// keeps every evaluation (commands written before coalescing existed).
// It reads the job's evaluations: a few per job.
func coalesceNodeEvals(t *writeTxn, evals []*state.Evaluation, coalesceAfter int64) ([]*state.Evaluation, error) {
	if coalesceAfter == 0 || len(evals) == 0 {
		return evals, nil
	}
	out := evals[:0:0]
	for _, e := range evals {
		if e == nil || e.TriggeredBy != state.EvalTriggerNodeUpdate {
			out = append(out, e)
			continue
		}
		pending, err := list[*state.Evaluation](nil, t.Txn, func(p *state.Evaluation) bool {
			return p.Status == state.EvalStatusPending && p.TriggeredBy == state.EvalTriggerNodeUpdate &&
				!p.WaitUntil.IsZero() && p.WaitUntil.UnixNano() > coalesceAfter
		}, TableEvals, indexJob, e.Namespace, e.JobID)
		if err != nil {
			return nil, err
		}
		if len(pending) == 0 {
			out = append(out, e)
		}
	}
	return out, nil
}

// joinHeldOnReturn drops from evals (those of a node coming back ready)
// the node-update evaluations of service and batch jobs that have a
// pending node-update evaluation held by the broker (a WaitUntil set when
// their nodes went down): their allocations on the returned node were
// never marked lost, and the held one reconciles the job against the
// state as it will be then, this node ready again. A system or sysbatch
// job's evaluation is kept: the node may need its allocation now.
func joinHeldOnReturn(t *writeTxn, evals []*state.Evaluation) ([]*state.Evaluation, error) {
	out := evals[:0:0]
	for _, e := range evals {
		if e == nil || e.TriggeredBy != state.EvalTriggerNodeUpdate || e.Type == state.JobTypeSystem || e.Type == state.JobTypeSysBatch {
			out = append(out, e)
			continue
		}
		held, err := list[*state.Evaluation](nil, t.Txn, func(p *state.Evaluation) bool {
			return p.Status == state.EvalStatusPending && p.TriggeredBy == state.EvalTriggerNodeUpdate && !p.WaitUntil.IsZero()
		}, TableEvals, indexJob, e.Namespace, e.JobID)
		if err != nil {
			return nil, err
		}
		if len(held) == 0 {
			out = append(out, e)
		}
	}
	return out, nil
}
