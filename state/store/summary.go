package store

import (
	"cmp"
	"maps"
	"slices"

	"github.com/hashicorp/go-memdb"
	"github.com/schedhq/sched/state"
)

// This file keeps what is derived from a job's allocations and evaluations
// up to date: its summary counts, its status, and its parent's children
// counts. Apply maintains them inside the command that changed their inputs,
// so readers never see them disagree.

// JobSummaryByID returns the summary of a job, or nil.
func (r reader) JobSummaryByID(ws memdb.WatchSet, ns, jobID string) (*state.JobSummary, error) {
	return first[*state.JobSummary](ws, r.txn(), TableJobSummary, indexID, ns, jobID)
}

// isParentJob reports whether job launches child jobs (periodic or
// parameterized), whose counts its summary's Children keeps.
func isParentJob(job *state.Job) bool { return job.IsPeriodic() || job.IsParameterized() }

// ensureJobSummary creates job's summary if it is missing and makes its
// groups follow the job's: a zero entry per new group, none for a removed
// one.
func ensureJobSummary(t *writeTxn, job *state.Job) error {
	old, err := first[*state.JobSummary](nil, t.Txn, TableJobSummary, indexID, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	next := &state.JobSummary{JobID: job.ID, Namespace: job.Namespace, CreateIndex: t.index}
	if old != nil {
		next = old.Copy()
	}
	changed := old == nil
	if next.Summary == nil {
		next.Summary = make(map[string]state.TaskGroupSummary, len(job.TaskGroups))
	}
	for _, tg := range job.TaskGroups {
		if _, ok := next.Summary[tg.Name]; !ok {
			next.Summary[tg.Name] = state.TaskGroupSummary{}
			changed = true
		}
	}
	for name := range next.Summary {
		if job.LookupTaskGroup(name) == nil {
			delete(next.Summary, name)
			changed = true
		}
	}
	if isParentJob(job) && next.Children == nil {
		next.Children = &state.JobChildrenSummary{}
		changed = true
	}
	if !changed {
		return nil
	}
	next.ModifyIndex = t.index
	return t.insert(TableJobSummary, next)
}

// updateSummaryForAlloc moves an allocation between the counters of its
// job's summary as it goes from before to after (nil for an insert or a
// delete). Allocations of an earlier job with the same ID, and groups the
// current version no longer has, are not counted.
func updateSummaryForAlloc(t *writeTxn, before, after *state.Allocation) error {
	a := after
	if a == nil {
		a = before
	}
	oldStatus, newStatus := "", ""
	if before != nil {
		oldStatus = summaryStatus(before)
	}
	if after != nil {
		newStatus = summaryStatus(after)
	}
	if oldStatus == newStatus {
		return nil
	}
	job, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, a.Namespace, a.JobID)
	if err != nil || job == nil || !sameJobInstance(a, job) {
		return err
	}
	sum, err := first[*state.JobSummary](nil, t.Txn, TableJobSummary, indexID, a.Namespace, a.JobID)
	if err != nil || sum == nil {
		return err
	}
	tg, ok := sum.Summary[a.TaskGroup]
	if !ok {
		return nil
	}
	countAlloc(&tg, oldStatus, -1)
	countAlloc(&tg, newStatus, +1)
	if t.summaries[sum] {
		// This transaction's copy, written already: changed in place
		// rather than copied and written again for each allocation of
		// a plan (nobody sees it before the transaction commits).
		sum.Summary[a.TaskGroup] = tg
		t.touched[TableJobSummary] = true
		t.record(TableJobSummary, sum, false)
		return nil
	}
	next := *sum
	next.Summary = maps.Clone(sum.Summary)
	next.Summary[a.TaskGroup] = tg
	next.ModifyIndex = t.index
	if t.summaries == nil {
		t.summaries = map[*state.JobSummary]bool{}
	}
	t.summaries[&next] = true
	return t.insert(TableJobSummary, &next)
}

// summaryStatus is the client status an allocation counts under; a new
// allocation the client has not reported on yet is pending.
func summaryStatus(a *state.Allocation) string {
	if a.ClientStatus == "" {
		return state.AllocClientStatusPending
	}
	return a.ClientStatus
}

// countAlloc adds delta to the counter of client status status.
func countAlloc(s *state.TaskGroupSummary, status string, delta int) {
	switch status {
	case state.AllocClientStatusPending:
		s.Starting += delta
	case state.AllocClientStatusRunning:
		s.Running += delta
	case state.AllocClientStatusComplete:
		s.Complete += delta
	case state.AllocClientStatusFailed:
		s.Failed += delta
	case state.AllocClientStatusLost:
		s.Lost += delta
	case state.AllocClientStatusUnknown:
		s.Unknown += delta
	}
}

// JobSummaryUpsertRequest sets the Queued counts of a job's summary, which
// only the scheduler knows (placements it could not make yet). Groups not
// in Queued keep their count; the other counters follow the allocations
// and cannot be set.
type JobSummaryUpsertRequest struct {
	Namespace string
	JobID     string
	Queued    map[string]int
}

// applyJobSummaryUpsert sets the Queued counts of a job summary.
func applyJobSummaryUpsert(t *writeTxn, req *JobSummaryUpsertRequest) (any, error) {
	sum, err := first[*state.JobSummary](nil, t.Txn, TableJobSummary, indexID, req.Namespace, req.JobID)
	if err != nil {
		return nil, err
	}
	if sum == nil {
		return nil, state.NotFoundf("summary of job %q in namespace %q not found", req.JobID, req.Namespace)
	}
	next := *sum
	next.Summary = maps.Clone(sum.Summary)
	for _, group := range slices.Sorted(maps.Keys(req.Queued)) {
		tg, ok := next.Summary[group]
		if !ok {
			return nil, state.Invalidf("Queued", "job %q has no task group %q", req.JobID, group)
		}
		tg.Queued = req.Queued[group]
		next.Summary[group] = tg
	}
	next.ModifyIndex = t.index
	return nil, t.insert(TableJobSummary, &next)
}

// jobStatus derives a job's status from its allocations and evaluations.
// Jobs that are never done (system jobs, and periodic and parameterized
// templates, which only launch children) are running until stopped. Other
// jobs run while an allocation does, are pending while an evaluation is,
// and are dead once everything they started has finished or they are
// stopped. A job with neither is pending: its first eval is on its way.
func jobStatus(txn *memdb.Txn, job *state.Job) (string, error) {
	if job.Type == state.JobTypeSystem || isParentJob(job) {
		if job.Stop {
			return state.JobStatusDead, nil
		}
		return state.JobStatusRunning, nil
	}
	// Each walk stops at its first live row, so a running job costs one
	// allocation, a job whose evaluation is pending one evaluation, not a
	// walk of everything the job ever had.
	hasAllocs, live := false, false
	err := eachListedAlloc(txn, TableJobAllocs, jobAllocsKey(job.Namespace, job.ID), func(a *state.Allocation) bool {
		if sameJobInstance(a, job) {
			hasAllocs = true
			live = !a.Terminal()
		}
		return !live
	})
	if err != nil {
		return "", err
	}
	if live {
		return state.JobStatusRunning, nil
	}
	hasEvals := false
	pending, err := anyRow(txn, TableEvals, indexJob, func(e *state.Evaluation) bool {
		hasEvals = true
		return !e.Terminal()
	}, job.Namespace, job.ID)
	if err != nil {
		return "", err
	}
	if pending {
		return state.JobStatusPending, nil
	}
	if hasEvals || hasAllocs || job.Stop {
		return state.JobStatusDead, nil
	}
	return state.JobStatusPending, nil
}

// refreshJobStatuses recomputes the status of every job whose allocations
// or evaluations the command changed (t.jobs), in a fixed order, and
// rewrites the jobs whose status changed.
func refreshJobStatuses(t *writeTxn) error {
	keys := slices.SortedFunc(maps.Keys(t.jobs), func(a, b nsID) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.id, b.id))
	})
	for _, k := range keys {
		job, err := first[*state.Job](nil, t.Txn, TableJobs, indexID, k.ns, k.id)
		if err != nil {
			return err
		}
		if job == nil {
			continue
		}
		status, err := jobStatus(t.Txn, job)
		if err != nil {
			return err
		}
		if status == job.Status {
			continue
		}
		next := *job
		next.Status = status
		next.ModifyIndex = t.index
		if err := t.insert(TableJobs, &next); err != nil {
			return err
		}
		// Keep the current version's row in step, so the newest entry of
		// the version list is the job as read.
		if err := t.insert(TableJobVersion, &next); err != nil {
			return err
		}
		if err := updateParentChildren(t, job, job.Status, status); err != nil {
			return err
		}
	}
	return nil
}

// updateParentChildren moves a child job between its parent's children
// counters as its status goes from oldStatus to newStatus ("" when the
// child is created or purged).
func updateParentChildren(t *writeTxn, child *state.Job, oldStatus, newStatus string) error {
	if child.ParentID == "" || oldStatus == newStatus {
		return nil
	}
	sum, err := first[*state.JobSummary](nil, t.Txn, TableJobSummary, indexID, child.Namespace, child.ParentID)
	if err != nil || sum == nil || sum.Children == nil {
		return err
	}
	children := *sum.Children
	countChild(&children, oldStatus, -1)
	countChild(&children, newStatus, +1)
	next := *sum
	next.Children = &children
	next.ModifyIndex = t.index
	return t.insert(TableJobSummary, &next)
}

// countChild adds delta to the counter of job status status, never going
// below zero (a child created before its parent's summary was not counted).
func countChild(c *state.JobChildrenSummary, status string, delta int64) {
	var n *int64
	switch status {
	case state.JobStatusPending:
		n = &c.Pending
	case state.JobStatusRunning:
		n = &c.Running
	case state.JobStatusDead:
		n = &c.Dead
	default:
		return
	}
	*n = max(*n+delta, 0)
}
