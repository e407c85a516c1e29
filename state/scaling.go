package state

// ScalingEvent records one scale request of a task group (spec §4.21): a
// count change with its message, or an error reported by an autoscaler.
type ScalingEvent struct {
	// Time is Unix nanoseconds from the leader's clock.
	Time          int64
	Count         *int64
	PreviousCount int64
	Message       string
	Error         bool
	Meta          map[string]any
	// EvalID is the evaluation the scale created, nil when it created
	// none.
	EvalID      *string
	CreateIndex uint64
}

// JobScalingEvents holds the latest scaling events of one job's groups,
// newest first, at most MaxScalingEventsPerGroup each.
type JobScalingEvents struct {
	Namespace     string
	JobID         string
	ScalingEvents map[string][]*ScalingEvent
	ModifyIndex   uint64
}

// MaxScalingEventsPerGroup is how many scaling events a group keeps.
const MaxScalingEventsPerGroup = 20

// JobScaleStatus answers GET /v1/job/:job_id/scale (spec §4.20).
type JobScaleStatus struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]*TaskGroupScaleStatus
}

// TaskGroupScaleStatus is one group's counts in a JobScaleStatus: Desired
// is its count; Placed, Running, Healthy and Unhealthy count its live
// allocations of the current job (healthy and unhealthy by their
// deployment health).
type TaskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	Events    []*ScalingEvent
}
