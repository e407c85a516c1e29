package jobs

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
)

// Limits on what one request may make a server do. Each is checked before
// anything is parsed into deep structures or proposed to raft, and a
// request over one is answered 400 or 413 naming the limit.

// checkJob validates a canonicalized job and the servers' limits on it:
// every field (state.Job.Validate, with the paths under "Job"), the group
// counts, and the size of its encoding (413).
func (h jobAPI) checkJob(job *state.Job) error {
	if err := job.Validate(); err != nil {
		return prefixFields("Job", err)
	}
	if err := h.cfg.JobLimits.CheckCounts(job); err != nil {
		return prefixFields("Job", err)
	}
	limit := h.cfg.JobLimits.WithDefaults().MaxJobBytes
	buf, err := json.Marshal(job)
	if err != nil {
		return codec.BadRequest("Job: cannot be encoded: %v", err)
	}
	if len(buf) > limit {
		return &codec.CodedError{Code: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("Job: encoded size %d bytes is above the limit of %d bytes (server max_job_size)", len(buf), limit)}
	}
	return nil
}

// checkScaledCounts applies the servers' group and job count limits to job
// as it would be with group's count set to count: a scale request is held
// to the same limits as a register, before anything is proposed.
func (h jobAPI) checkScaledCounts(job *state.Job, group string, count int64) error {
	l := h.cfg.JobLimits.WithDefaults()
	if count > int64(l.MaxGroupCount) {
		return state.Invalidf("Count", "count %d is above the limit of %d per group (server max_group_count)", count, l.MaxGroupCount)
	}
	total := int(count) // at most MaxGroupCount here
	for _, tg := range job.TaskGroups {
		if tg != nil && tg.Name != group && tg.Count > 0 {
			total += min(tg.Count, l.MaxJobCount+1) // no overflow
		}
	}
	if total > l.MaxJobCount {
		return state.Invalidf("Count", "the groups' counts would add up to %d, above the limit of %d allocations per job (server max_job_count)", total, l.MaxJobCount)
	}
	return nil
}
