package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode"

	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/jobspec"
)

// JobParseRequest is the body of POST /v1/jobs/parse (spec §4.3).
type JobParseRequest struct {
	JobHCL       string
	Canonicalize bool
	// Variables is HCL2 variable values in var-file format.
	Variables string
	HCLv1     bool
	// Filename names the source in error positions (the user's file, as
	// the CLI was given it); empty means "input.hcl". At most
	// maxParseFilename bytes, without control characters.
	Filename string
}

// maxParseFilename bounds JobParseRequest.Filename.
const maxParseFilename = 256

// JobValidateRequest is the body of POST /v1/validate/job.
type JobValidateRequest struct {
	Job *state.Job
}

// jobParse serves POST /v1/jobs/parse: HCL in, the JSON job out. Without
// Canonicalize the job holds only what the source set (and Count 1 for a
// group without count).
func (h jobAPI) jobParse(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var req JobParseRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.JobHCL == "" {
		return nil, codec.BadRequest("JobHCL: required")
	}
	filename := "input.hcl"
	if req.Filename != "" {
		if len(req.Filename) > maxParseFilename || strings.IndexFunc(req.Filename, unicode.IsControl) >= 0 {
			return nil, codec.BadRequest("Filename: must be at most %d bytes without control characters", maxParseFilename)
		}
		filename = req.Filename
	}
	select {
	case h.hclSlots <- struct{}{}:
		defer func() { <-h.hclSlots }()
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	var job *state.Job
	var err error
	if req.HCLv1 {
		if req.Variables != "" {
			return nil, codec.BadRequest("Variables: not supported with HCLv1")
		}
		job, err = jobspec.ParseHCL1(filename, []byte(req.JobHCL))
	} else {
		cfg := jobspec.ParseConfig{Filename: filename, Body: []byte(req.JobHCL)}
		if req.Variables != "" {
			cfg.VarFiles = []jobspec.VarFile{{Filename: "variables.hcl", Body: []byte(req.Variables)}}
		}
		job, err = jobspec.Parse(cfg)
	}
	if err != nil {
		if errors.Is(err, state.ErrInvalid) {
			return nil, err
		}
		return nil, codec.BadRequest("%v", err)
	}
	if req.Canonicalize {
		if job.Namespace == "" {
			job.Namespace = h.core.Namespace(r)
		}
		job.Canonicalize()
		return job, nil
	}
	return unsetOmitted(job)
}

// unsetOmitted encodes a parsed but not canonicalized job without the
// fields its source left unset: zero numbers, empty strings, false,
// null and empty objects and arrays are dropped from every object, so a
// client decoding into pointer fields (Nomad's api.Job) sees them unset
// rather than set to zero. Array elements are kept as they are, and so
// are the zeros of zeroIsSet.
func unsetOmitted(job *state.Job) (json.RawMessage, error) {
	raw, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(pruneUnset(v, ""))
}

// pruneUnset drops the unset members of every object in v (see
// unsetOmitted) and returns what remains; name is the member v is the
// value of ("" for the job and array elements).
func pruneUnset(v any, name string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			e = pruneUnset(e, k)
			if isUnset(e) && (e == nil || !(zeroIsSet[k] || zeroIsSetIn[name][k])) {
				delete(t, k)
			} else {
				t[k] = e
			}
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = pruneUnset(e, "")
		}
		return t
	}
	return v
}

// zeroIsSetIn names, per object, the members whose zero is kept whenever
// the object is there: a reschedule block given at all decides its
// attempts and unlimited (sched fills neither from the job type's
// defaults), and `attempts = 0  unlimited = false` is Nomad's documented
// way to turn rescheduling off, so dropping them would drop the block and
// register the default policy instead.
var zeroIsSetIn = map[string]map[string]bool{
	"ReschedulePolicy": {"Attempts": true, "Unlimited": true},
}

// zeroIsSet names the members whose absence does not read as their zero,
// so a zero of theirs is something the source set and is kept: an absent
// Enabled (periodic, scaling) is true, an absent Count is 1, an absent
// MaxParallel is inherited, and the group's pointer durations are unset
// when absent but "0s" when given as such.
var zeroIsSet = map[string]bool{
	"Enabled": true, "Count": true, "MaxParallel": true,
	"MaxClientDisconnect": true, "ShutdownDelay": true, "StopAfterClientDisconnect": true,
}

// isUnset reports whether a decoded JSON value is a zero: null, false,
// 0, "", {} or [].
func isUnset(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case json.Number:
		f, err := t.Float64()
		return err == nil && f == 0
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// jobValidate serves POST /v1/validate/job.
func (h jobAPI) jobValidate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var req JobValidateRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Job == nil {
		return nil, codec.BadRequest("Job: a job definition is required")
	}
	if err := h.core.PlaceJob(r, req.Job); err != nil {
		return nil, err
	}
	req.Job.Canonicalize()
	out := &state.JobValidateResponse{DriverConfigValidated: true, ValidationErrors: []string{}}
	if err := h.checkJob(req.Job); err != nil {
		var ve *state.ValidationError
		if errors.As(err, &ve) {
			for _, fe := range ve.Errors {
				out.ValidationErrors = append(out.ValidationErrors, fe.Error())
			}
		}
		out.Error = err.Error()
	}
	return out, nil
}
