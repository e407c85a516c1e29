package state

import (
	"encoding/json"
	"errors"
)

// DeploymentPromoteRequest is the body of POST
// /v1/deployment/promote/:deployment_id: All, or the Groups to promote.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
}

// DeploymentPauseRequest is the body of POST
// /v1/deployment/pause/:deployment_id: Pause true pauses, false resumes.
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
}

// DeploymentAllocHealthRequest is the body of POST
// /v1/deployment/allocation-health/:deployment_id.
type DeploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
}

// DeploymentUpdateResponse answers the deployment writes.
// RevertedJobVersion is set when a fail reverted the job to that version.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64 `json:",omitempty"`
	Index                 uint64
}

// JobRevertRequest is the body of POST /v1/job/:job_id/revert (spec
// §4.14). EnforcePriorVersion, when set, must be the job's current
// version.
type JobRevertRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	MeshToken           string
	SecretsToken        string
}

// JobStabilityRequest is the body of POST /v1/job/:job_id/stable (spec
// §4.15).
type JobStabilityRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
}

// JobStabilityResponse answers POST /v1/job/:job_id/stable.
type JobStabilityResponse struct {
	JobModifyIndex uint64
	Index          uint64
}

// JobScaleRequest is the body of POST /v1/job/:job_id/scale (spec
// §4.21).
type JobScaleRequest struct {
	Count          *int64
	Target         map[string]string
	Message        string
	Error          ScaleError
	Meta           map[string]any
	EnforceIndex   bool
	JobModifyIndex uint64
	PolicyOverride bool
}

// ScaleError is the Error of a scale request. The spec has it a string,
// Nomad's Go client a boolean; either marks the event an error, and a
// string is also its message. The zero value is no error.
type ScaleError struct {
	Set     bool
	Message string
}

// UnmarshalJSON accepts a boolean, a string or null.
func (e *ScaleError) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*e = ScaleError{}
	case bool:
		*e = ScaleError{Set: x}
	case string:
		*e = ScaleError{Set: x != "", Message: x}
	default:
		return errors.New("Error: want a string or a boolean")
	}
	return nil
}

// MarshalJSON writes the message when there is one, else a boolean.
func (e ScaleError) MarshalJSON() ([]byte, error) {
	if e.Message != "" {
		return json.Marshal(e.Message)
	}
	return json.Marshal(e.Set)
}

// JobScaleResponse answers a scale; EvalID and EvalCreateIndex are set
// only when an evaluation was created.
type JobScaleResponse struct {
	EvalID          string `json:",omitempty"`
	EvalCreateIndex uint64 `json:",omitempty"`
	JobModifyIndex  uint64
	Warnings        string
	Index           uint64
	KnownLeader     bool
	LastContact     int64
}
