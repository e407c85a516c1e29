package store

import "github.com/schedhq/sched/state"

// AllocUpdateRequest records the result of a scheduler plan: new and
// updated allocations, the evaluations it created or updated, and the
// deployment it created or changed, in one command.
//
// For an allocation that already exists, Apply keeps what the client owns
// (TaskStates always; ClientStatus, ClientDescription and DeploymentStatus
// unless the update sets them) and its CreateIndex and CreateTime. An
// allocation with a nil Job gets the existing allocation's job or, when
// new, the job currently registered.
type AllocUpdateRequest struct {
	Allocs     []*state.Allocation
	Evals      []*state.Evaluation
	Deployment *state.Deployment
	// Now is the leader's clock (Unix nanoseconds) for allocation
	// CreateTime and ModifyTime.
	Now int64
}

// AllocClientUpdateRequest carries what client agents report about their
// allocations. Only ClientStatus, ClientDescription, TaskStates and (when
// set) DeploymentStatus of each listed allocation are used; allocations
// that no longer exist are skipped, since a client may report on one that
// was just garbage collected.
type AllocClientUpdateRequest struct {
	Allocs []*state.Allocation
	// Evals are created with the update, e.g. to reschedule a failed
	// allocation.
	Evals []*state.Evaluation
	// Now is the leader's clock (Unix nanoseconds) for ModifyTime.
	Now int64
}

// NodeRegisterRequest creates or updates a client node. On update, the
// server-owned scheduling fields (SchedulingEligibility, Drain,
// DrainStrategy) of the existing node are kept. A node pool that does not
// exist yet is created.
type NodeRegisterRequest struct {
	Node *state.Node
}

// NodeDeregisterRequest deletes nodes. It fails, deleting none, when one is
// unknown.
type NodeDeregisterRequest struct {
	NodeIDs []string
}

// NodeUpdateStatusRequest records a node's new status, e.g. `down` when its
// heartbeat was missed, with the evaluations that react to it.
type NodeUpdateStatusRequest struct {
	NodeID            string
	Status            string
	StatusDescription string
	// UpdatedAt is the leader's clock in Unix seconds.
	UpdatedAt int64
	Evals     []*state.Evaluation
}

// DeploymentUpsertRequest creates or updates deployments, with the
// evaluations that follow from the change (e.g. after a promotion).
type DeploymentUpsertRequest struct {
	Deployments []*state.Deployment
	Evals       []*state.Evaluation
	// Now is the leader's clock (Unix nanoseconds) for CreateTime (new
	// deployments) and ModifyTime.
	Now int64
}

// ServiceUpsertRequest creates or updates service registrations.
type ServiceUpsertRequest struct {
	Services []*state.ServiceRegistration
}

// ServiceDeleteRequest deletes service registrations by ID and, for
// AllocIDs, every registration of those allocations. Unknown IDs are
// ignored: a client may retry a delete that already happened.
type ServiceDeleteRequest struct {
	IDs      []string
	AllocIDs []string
}

// NodePoolUpsertRequest creates or updates node pools. The built-in `all`
// pool cannot be changed.
type NodePoolUpsertRequest struct {
	NodePools []*state.NodePool
}

// NodePoolDeleteRequest deletes node pools. It fails, deleting none, when
// one is built in, unknown, or still has nodes or non-dead jobs.
type NodePoolDeleteRequest struct {
	Names []string
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
