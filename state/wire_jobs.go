package state

// JobValidateResponse lists what is wrong with a job, without registering
// it. A job with problems is a 200 with ValidationErrors, as in Nomad; only
// a malformed request is a 400.
type JobValidateResponse struct {
	DriverConfigValidated bool
	ValidationErrors      []string
	Error                 string
	Warnings              string
}

// JobVersionsResponse answers GET /v1/job/:job_id/versions (spec §4.6).
type JobVersionsResponse struct {
	Versions    []*Job
	Diffs       []*JobDiff
	Index       uint64
	KnownLeader bool
	LastContact int64
}

// EvalOptions tune an on-demand evaluation.
type EvalOptions struct {
	// ForceReschedule reschedules the job's failed allocations now,
	// ignoring their reschedule policy's attempts and delays.
	ForceReschedule bool
}

// JobRegisterResponse answers a job register or update (POST /v1/jobs,
// POST /v1/job/:job_id).
type JobRegisterResponse struct {
	// EvalID is the evaluation the register created; empty for periodic
	// and parameterized jobs, which are templates and create none.
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	// Warnings are non-fatal problems found with the job, one per line.
	Warnings    string
	Index       uint64
	LastContact int64
	KnownLeader bool
}

// JobDeregisterResponse answers a job stop (DELETE /v1/job/:job_id).
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}

// JobEvaluateResponse answers POST /v1/job/:job_id/evaluate.
type JobEvaluateResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}
