package http

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/schedhq/sched/state"
)

// Limits on what one request may make a server do. Each is checked before
// anything is parsed into deep structures or proposed to raft, and a
// request over one is answered 400 or 413 naming the limit.

// maxJSONDepth bounds how deeply a request body may nest JSON objects and
// arrays. A job needs about ten levels around its free-form values, which
// may nest state.MaxNestingDepth more.
const maxJSONDepth = state.MaxNestingDepth + 36

// checkJSONDepth scans data, without recursion, and returns a 400 naming
// the byte offset where it nests deeper than max. It does not check that
// data is JSON: the decoder that follows does.
func checkJSONDepth(data []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return badRequest("failed to parse request body: JSON nested more than %d levels deep (at byte %d)", max, i+1)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// checkJob validates a canonicalized job and the servers' limits on it:
// every field (state.Job.Validate, with the paths under "Job"), the group
// counts, and the size of its encoding (413).
func (s *Server) checkJob(job *state.Job) error {
	if err := job.Validate(); err != nil {
		return prefixFields("Job", err)
	}
	if err := s.cfg.JobLimits.CheckCounts(job); err != nil {
		return prefixFields("Job", err)
	}
	limit := s.cfg.JobLimits.WithDefaults().MaxJobBytes
	buf, err := json.Marshal(job)
	if err != nil {
		return badRequest("Job: cannot be encoded: %v", err)
	}
	if len(buf) > limit {
		return &CodedError{Code: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("Job: encoded size %d bytes is above the limit of %d bytes (server max_job_size)", len(buf), limit)}
	}
	return nil
}
