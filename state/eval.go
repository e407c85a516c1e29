package state

import "time"

// Evaluation statuses.
const (
	EvalStatusPending   = "pending"
	EvalStatusBlocked   = "blocked"
	EvalStatusComplete  = "complete"
	EvalStatusFailed    = "failed"
	EvalStatusCancelled = "canceled"
)

// Evaluation triggers.
const (
	EvalTriggerJobRegister       = "job-register"
	EvalTriggerJobDeregister     = "job-deregister"
	EvalTriggerPeriodicJob       = "periodic-job"
	EvalTriggerNodeDrain         = "node-drain"
	EvalTriggerNodeUpdate        = "node-update"
	EvalTriggerAllocStop         = "alloc-stop"
	EvalTriggerScheduled         = "scheduled"
	EvalTriggerRollingUpdate     = "rolling-update"
	EvalTriggerDeploymentWatcher = "deployment-watcher"
	EvalTriggerFailedFollowUp    = "failed-follow-up"
	EvalTriggerMaxPlans          = "max-plan-attempts"
	EvalTriggerRetryFailedAlloc  = "alloc-failure"
	EvalTriggerQueuedAllocs      = "queued-allocs"
	EvalTriggerPreemption        = "preemption"
	EvalTriggerScaling           = "job-scaling"
	EvalTriggerReconnect         = "reconnect"
	EvalTriggerJobEvaluate       = "job-evaluate"
	EvalTriggerJobDispatch       = "job-dispatch"
)

// Evaluation is a request for the scheduler to reconcile a job with the
// cluster. The leader creates it; a worker processes it.
type Evaluation struct {
	ID                   string
	Namespace            string
	Priority             int
	Type                 string
	TriggeredBy          string
	JobID                string
	JobModifyIndex       uint64
	NodeID               string
	NodeModifyIndex      uint64
	DeploymentID         string
	Status               string
	StatusDescription    string
	Wait                 time.Duration
	WaitUntil            time.Time
	NextEval             string
	PreviousEval         string
	BlockedEval          string
	FailedTGAllocs       map[string]*AllocMetric
	ClassEligibility     map[string]bool
	EscapedComputedClass bool
	AnnotatePlan         bool
	QueuedAllocations    map[string]int
	SnapshotIndex        uint64
	// ForceReschedule asks the scheduler to reschedule failed allocations
	// now, ignoring rescheduling limits and delays (spec §3).
	ForceReschedule bool `json:",omitempty"`
	// QuotaLimitReached names the namespace quota that kept every
	// failed placement of a blocked evaluation out: it is unblocked when
	// that quota's usage falls or its limits change, not by capacity.
	QuotaLimitReached string `json:",omitempty"`
	// QueuePosition, QueueLength and WaitReason describe a blocked
	// evaluation in the answers of /v1/evaluations and
	// /v1/job/:job_id/evaluations (docs/queue.md): its place in the
	// order blocked work is released in (1 goes next), how many are
	// blocked, and what it waits for. They are never stored.
	QueuePosition int    `json:",omitempty"`
	QueueLength   int    `json:",omitempty"`
	WaitReason    string `json:",omitempty"`
	CreateIndex   uint64
	ModifyIndex   uint64
	// CreateTime and ModifyTime are Unix nanoseconds from the leader's clock.
	CreateTime int64
	ModifyTime int64
}

// Terminal reports whether the evaluation needs no more work.
func (e *Evaluation) Terminal() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCancelled:
		return true
	}
	return false
}

// AllocMetric records what the scheduler saw while placing an allocation,
// for users to learn why a placement failed.
type AllocMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	Scores             Scores
	AllocationTime     time.Duration
	CoalescedFailures  int
}
