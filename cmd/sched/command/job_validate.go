package command

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/jobspec"
)

const jobValidateHelp = `
Check the job in FILE (HCL, or JSON when named *.json or given -json; "-"
reads standard input) as the server would on register, without registering
it. Exits 1 and lists every problem when the job is not valid.

The file is parsed and checked here first, so a job whose file alone is
wrong fails without a server; then the server at -address checks what
depends on it (its size and count limits). When no server answers, the
local checks decide and a note says the server's were skipped.`

func (c *jobCLI) jobValidate(args []string) int {
	fs, m := c.flagSet("job validate", "[options] FILE", jobValidateHelp)
	var files jobFileFlags
	files.register(fs)
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	job, err := c.readJobLocally(fs.Arg(0), &files)
	if err != nil {
		return c.fail("getting job struct", err)
	}
	if msgs := localValidation(job); len(msgs) > 0 {
		fmt.Fprintln(c.stderr, "Job validation errors:")
		for _, e := range msgs {
			fmt.Fprintf(c.stderr, "  * %s\n", e)
		}
		return 1
	}
	resp, err := client.Jobs().Validate(c.ctx, job, &api.WriteOptions{Namespace: job.Namespace})
	var se *api.StatusError
	if err != nil && !errors.As(err, &se) {
		// No server: what the file alone decides has passed.
		fmt.Fprintf(c.stdout, "Job validation successful (no server reached, its limit checks were skipped: %v)\n", err)
		return 0
	}
	if err != nil {
		return c.fail("validating job", err)
	}
	if len(resp.ValidationErrors) > 0 || resp.Error != "" {
		fmt.Fprintln(c.stderr, "Job validation errors:")
		if len(resp.ValidationErrors) == 0 {
			resp.ValidationErrors = []string{resp.Error}
		}
		for _, e := range resp.ValidationErrors {
			fmt.Fprintf(c.stderr, "  * %s\n", e)
		}
		return 1
	}
	if resp.Warnings != "" {
		fmt.Fprintf(c.stdout, "Job Warnings:\n%s\n\n", strings.TrimSpace(resp.Warnings))
	}
	fmt.Fprintln(c.stdout, "Job validation successful")
	return 0
}

// readJobLocally reads and parses a job file without a server, as the
// server's parse endpoint would (no SCHED_VAR_ environment: the server
// reads none either).
func (c *jobCLI) readJobLocally(path string, f *jobFileFlags) (*state.Job, error) {
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
		return nil, fmt.Errorf("reading job file: %w", err)
	}
	if f.json || strings.EqualFold(filepath.Ext(path), ".json") || (path == "-" && bytes.HasPrefix(bytes.TrimSpace(src), []byte("{"))) {
		if len(f.vars) > 0 || len(f.varFiles) > 0 {
			return nil, errors.New("-var and -var-file apply only to HCL jobs")
		}
		job, err := decodeJSONJob(src)
		if err != nil {
			return nil, fmt.Errorf("parsing JSON job file %s: %w", path, err)
		}
		return job, nil
	}
	name := sourceName(path)
	if f.hcl1 {
		if len(f.vars) > 0 || len(f.varFiles) > 0 {
			return nil, errors.New("-var and -var-file are not supported with -hcl1")
		}
		return jobspec.ParseHCL1(name, src)
	}
	vars, err := loadVariables(f.varFiles, f.vars)
	if err != nil {
		return nil, err
	}
	cfg := jobspec.ParseConfig{Filename: name, Body: src}
	if vars.doc != "" {
		cfg.VarFiles = []jobspec.VarFile{{Filename: "variables.hcl", Body: []byte(vars.doc)}}
	}
	return jobspec.Parse(cfg)
}

// localValidation runs the checks a job's own content decides, as the
// server runs them on a canonicalized copy; each problem names its field.
func localValidation(job *state.Job) []string {
	j := job.Copy()
	j.Canonicalize()
	err := j.Validate()
	if err == nil {
		return nil
	}
	var ve *state.ValidationError
	if errors.As(err, &ve) {
		out := make([]string, 0, len(ve.Errors))
		for _, fe := range ve.Errors {
			out = append(out, "Job."+fe.Error())
		}
		return out
	}
	return []string{err.Error()}
}
