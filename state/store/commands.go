package store

import "github.com/schedhq/sched/state"

// MessageType tags a replicated command: the first byte of every log entry.
// The rest of the entry is the msgpack encoding of the command's request.
type MessageType uint8

// IgnoreUnknownTypeFlag set on a type byte means an older server that does
// not know the type may skip the entry instead of stopping. Newer optional
// commands set it so rolling upgrades do not crash older servers.
const IgnoreUnknownTypeFlag MessageType = 128

// Command types. Values are persisted in the log: never renumber. Ranges
// are reserved per area so that areas add commands without colliding:
//
//	1-19    jobs, namespaces and the store's core (this file; each request type
//	        sits beside its Apply: allocs.go, nodes.go, deployments.go, …)
//	20-29   plan application and eval broker writes (plan_apply.go)
//	30-39   node lifecycle: eligibility, drain, heartbeats (node_scheduling.go)
//	40-49   ACL tokens and policies (acl_requests.go)
//	50-59   cluster and operator (cluster.go)
//	60-99   management API (management_requests.go)
//	100-109 deployments and job stability (deployment_updates.go)
//	110-119 namespace quotas (quotas.go)
//	120-126 management API, continued: Terraform's state and runs (state_versions.go)
//	127     never used: the tests' unknown command (128 and up set IgnoreUnknownTypeFlag)
//
// Add IgnoreUnknownTypeFlag to a new type that older servers may skip.
const (
	JobRegisterRequestType       MessageType = 1
	JobDeregisterRequestType     MessageType = 2
	NamespaceUpsertRequestType   MessageType = 3
	NamespaceDeleteRequestType   MessageType = 4
	EvalUpdateRequestType        MessageType = 5
	EvalDeleteRequestType        MessageType = 6
	AllocUpdateRequestType       MessageType = 7
	AllocClientUpdateRequestType MessageType = 8
	NodeRegisterRequestType      MessageType = 9
	NodeDeregisterRequestType    MessageType = 10
	NodeUpdateStatusRequestType  MessageType = 11
	DeploymentUpsertRequestType  MessageType = 12
	ServiceUpsertRequestType     MessageType = 13
	ServiceDeleteRequestType     MessageType = 14
	NodePoolUpsertRequestType    MessageType = 15
	NodePoolDeleteRequestType    MessageType = 16
	JobSummaryUpsertRequestType  MessageType = 17
)

// JobRegisterRequest registers a new version of a job together with the
// evaluation it triggers, in one command.
type JobRegisterRequest struct {
	Job *state.Job
	// Eval is created with the job. Its JobModifyIndex is filled by Apply.
	// Nil when the job is periodic or parameterized (no eval on register).
	Eval *state.Evaluation
	// Submission, when set, is kept as the source of the new version.
	Submission *state.JobSubmission
	// EnforceIndex makes the register a check-and-set on JobModifyIndex:
	// it applies only when the current job's JobModifyIndex equals it, and
	// JobModifyIndex 0 means only when the job does not exist.
	EnforceIndex   bool
	JobModifyIndex uint64
	// PreserveCounts keeps the counts of existing task groups.
	PreserveCounts bool
	// Now is the leader's clock (Unix nanoseconds) for SubmitTime and eval
	// times.
	Now int64
}

// JobRegisterResponse is what Apply returns for a JobRegisterRequest.
type JobRegisterResponse struct {
	JobModifyIndex  uint64
	EvalID          string
	EvalCreateIndex uint64
	// Version is the job version after the register.
	Version uint64
	Index   uint64
}

// JobDeregisterRequest stops (or, with Purge, deletes) a job and creates the
// evaluation that stops its allocations, in one command.
type JobDeregisterRequest struct {
	Namespace       string
	JobID           string
	Purge           bool
	NoShutdownDelay bool
	Eval            *state.Evaluation
	// ChildEvals stop the children of a periodic or parameterized job,
	// which are stopped (or purged) with it: one evaluation per child that
	// still runs, built by the leader.
	ChildEvals []*state.Evaluation
	Now        int64
}

// JobDeregisterResponse is what Apply returns for a JobDeregisterRequest.
type JobDeregisterResponse struct {
	JobModifyIndex  uint64
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
}

// NamespaceUpsertRequest creates or updates namespaces.
type NamespaceUpsertRequest struct {
	Namespaces []*state.Namespace
}

// NamespaceDeleteRequest deletes namespaces. It fails, deleting none, when
// one is `default`, unknown, or still holds non-terminal jobs.
type NamespaceDeleteRequest struct {
	Names []string
}

// EvalUpdateRequest upserts evaluations (scheduler status updates, blocked
// and follow-up evals).
type EvalUpdateRequest struct {
	Evals []*state.Evaluation
}

// EvalDeleteRequest deletes evaluations and allocations (garbage collection).
type EvalDeleteRequest struct {
	Evals  []string
	Allocs []string
}
