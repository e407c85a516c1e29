package http

import (
	"errors"
	"net/http"
	"strings"
	"unicode"

	"github.com/julienschmidt/httprouter"

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
func (s *Server) jobParse(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var req JobParseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.JobHCL == "" {
		return nil, badRequest("JobHCL: required")
	}
	filename := "input.hcl"
	if req.Filename != "" {
		if len(req.Filename) > maxParseFilename || strings.IndexFunc(req.Filename, unicode.IsControl) >= 0 {
			return nil, badRequest("Filename: must be at most %d bytes without control characters", maxParseFilename)
		}
		filename = req.Filename
	}
	var job *state.Job
	var err error
	if req.HCLv1 {
		if req.Variables != "" {
			return nil, badRequest("Variables: not supported with HCLv1")
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
		return nil, badRequest("%v", err)
	}
	if req.Canonicalize {
		if job.Namespace == "" {
			job.Namespace = namespaceOf(r)
		}
		job.Canonicalize()
	}
	return job, nil
}

// jobValidate serves POST /v1/validate/job.
func (s *Server) jobValidate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) (any, error) {
	var req JobValidateRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Job == nil {
		return nil, badRequest("Job: a job definition is required")
	}
	if req.Job.Namespace == "" {
		req.Job.Namespace = namespaceOf(r)
	}
	req.Job.Canonicalize()
	out := &state.JobValidateResponse{DriverConfigValidated: true, ValidationErrors: []string{}}
	if err := s.checkJob(req.Job); err != nil {
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
