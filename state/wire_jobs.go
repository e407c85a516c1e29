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
