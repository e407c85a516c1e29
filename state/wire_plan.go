package state

import "time"

// JobPlanResponse is what registering the job would do, computed by the
// scheduler against the current state without writing anything.
type JobPlanResponse struct {
	// Index is the state index the plan was computed at.
	Index uint64
	// NextPeriodicLaunch is when a periodic job would next launch; the
	// zero time for other jobs.
	NextPeriodicLaunch time.Time
	Warnings           string
	// Diff is set when the request asked for it, with each group's
	// Updates and each changed task's Annotations filled from the plan.
	Diff *JobDiff
	// CreatedEvals are the evaluations the run would create, such as a
	// blocked evaluation for what could not be placed.
	CreatedEvals []*Evaluation
	// JobModifyIndex is the registered job's, 0 when it is new: register
	// with EnforceIndex and this index to apply exactly what was planned.
	JobModifyIndex uint64
	// FailedTGAllocs holds, per group, the metrics of the placements that
	// would fail.
	FailedTGAllocs map[string]*AllocMetric
	Annotations    *PlanAnnotations
}

// PlanAnnotations explain a plan to a user (the plan dry run, spec §4.17).
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
	// PreemptedAllocs are the allocations the plan would evict to make
	// room for its placements (docs/scheduler.md#preemption).
	PreemptedAllocs []*AllocListStub `json:",omitempty"`
}

// DesiredUpdates counts what a plan does to one task group.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
}
