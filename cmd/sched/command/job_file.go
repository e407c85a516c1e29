package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// jobFileFlags are the flags of commands that read a job file.
type jobFileFlags struct {
	vars     stringList
	varFiles stringList
	json     bool
	hcl1     bool
}

func (f *jobFileFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.vars, "var", "set the HCL variable `NAME=VALUE`; repeatable, overrides -var-file")
	fs.Var(&f.varFiles, "var-file", "read HCL variables from `FILE` (HCL, or JSON if named *.json); repeatable, later files win")
	fs.BoolVar(&f.json, "json", false, "the job file is JSON (implied by a .json name)")
	fs.BoolVar(&f.hcl1, "hcl1", false, "parse the job file with the legacy HCL1 parser")
}

// readJob reads the job at path ("-" for standard input). A JSON file is
// decoded here, either {"Job": {...}} or a bare job; anything else is HCL,
// which the server parses with the variables. The submission records the
// source for `sched job history` and the UI.
func (c *jobCLI) readJob(client *api.Client, path string, f *jobFileFlags) (*state.Job, *state.JobSubmission, error) {
	var (
		src []byte
		err error
	)
	if path == "-" {
		src, err = io.ReadAll(c.stdin)
	} else {
		src, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading job file: %w", err)
	}

	isJSON := f.json || strings.EqualFold(filepath.Ext(path), ".json") ||
		(path == "-" && bytes.HasPrefix(bytes.TrimSpace(src), []byte("{")))
	if isJSON {
		if len(f.vars) > 0 || len(f.varFiles) > 0 {
			return nil, nil, errors.New("-var and -var-file apply only to HCL jobs")
		}
		job, err := decodeJSONJob(src)
		if err != nil {
			return nil, nil, fmt.Errorf("parsing JSON job file %s: %w", path, err)
		}
		return job, &state.JobSubmission{Format: state.SubmissionFormatJSON, Source: string(src)}, nil
	}

	format := state.SubmissionFormatHCL2
	vars := &jobVariables{}
	if f.hcl1 {
		if len(f.vars) > 0 || len(f.varFiles) > 0 {
			return nil, nil, errors.New("-var and -var-file are not supported with -hcl1")
		}
		format = state.SubmissionFormatHCL1
	} else if vars, err = loadVariables(f.varFiles, f.vars); err != nil {
		return nil, nil, err
	}
	// Not canonicalized: register and validate do that on the server, and
	// an unset namespace must stay unset so -namespace can apply.
	job, err := client.Jobs().ParseFile(c.ctx, sourceName(path), string(src), vars.doc, false, f.hcl1, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing job file %s: %w", path, err)
	}
	if job == nil {
		return nil, nil, fmt.Errorf("parsing job file %s: the server returned no job", path)
	}
	sub := &state.JobSubmission{
		Format:        format,
		Source:        string(src),
		VariableFlags: vars.flags,
		Variables:     vars.files,
	}
	return job, sub, nil
}

// decodeJSONJob decodes a job in the API's JSON form, wrapped in
// {"Job": ...} as `sched job inspect` prints it, or bare.
func decodeJSONJob(src []byte) (*state.Job, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(src, &top); err != nil {
		return nil, describeJSONError(src, err)
	}
	// Decode from src in both forms, so error offsets are the file's.
	var job *state.Job
	if _, wrapped := top["Job"]; wrapped {
		var w struct{ Job *state.Job }
		if err := json.Unmarshal(src, &w); err != nil {
			return nil, describeJSONError(src, err)
		}
		job = w.Job
	} else if err := json.Unmarshal(src, &job); err != nil {
		return nil, describeJSONError(src, err)
	}
	if job == nil {
		return nil, errors.New("the file holds no job")
	}
	return job, nil
}

// describeJSONError adds the line and column of a JSON error, which is
// what a person editing the file needs.
func describeJSONError(src []byte, err error) error {
	var offset int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = se.Offset
	case errors.As(err, &te):
		offset = te.Offset
	}
	if offset < 0 || offset > int64(len(src)) {
		return err
	}
	before := src[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	if col == 0 {
		col = 1
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// sourceName is how error positions name the job file: the path as the
// user gave it, "<stdin>" for "-".
func sourceName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}
