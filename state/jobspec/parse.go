package jobspec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/schedhq/sched/state"
	"github.com/zclconf/go-cty/cty"
)

// DefaultFilename names the job file in error positions when ParseConfig
// gives none.
const DefaultFilename = "job.hcl"

// ParseConfig is the input of Parse: a job file and the values of its input
// variables.
type ParseConfig struct {
	// Filename is used in error positions, e.g. "example.sched.hcl"; empty
	// means DefaultFilename.
	Filename string
	// Body is the HCL2 source of the job file.
	Body []byte
	// VarFiles are var files (HCL `name = value` lines), applied in order,
	// so a later file overrides an earlier one.
	VarFiles []VarFile
	// VarFlags are -var name=value pairs. They override var files,
	// SCHED_VAR_ environment variables and defaults.
	VarFlags map[string]string
	// Env is the environment that SCHED_VAR_<name> values are read from; nil
	// means none. It is passed in, never read from the process, so a
	// server parsing a submitted job does not leak its own environment.
	Env map[string]string
}

// VarFile is the content of one var file.
type VarFile struct {
	// Filename is used in error positions.
	Filename string
	// Body holds `name = value` lines in HCL2 syntax.
	Body []byte
}

// Parse turns an HCL2 job file into a job. The file holds exactly one job
// block, and may declare variable and locals blocks that the job uses as
// var.<name> and local.<name>. The result has no defaults filled in; see
// the package comment.
func Parse(cfg ParseConfig) (*state.Job, error) {
	filename := cfg.Filename
	if filename == "" {
		filename = DefaultFilename
	}
	if err := state.CheckHCLDepth(filename, cfg.Body, state.MaxHCLDepth); err != nil {
		return nil, err
	}
	for _, f := range cfg.VarFiles {
		if err := state.CheckHCLDepth(f.Filename, f.Body, state.MaxHCLDepth); err != nil {
			return nil, err
		}
	}
	file, diags := hclsyntax.ParseConfig(cfg.Body, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagsError(diags)
	}
	body := file.Body.(*hclsyntax.Body)

	d := &decoder{ctx: &hcl.EvalContext{Functions: functions(), Variables: map[string]cty.Value{}}}
	d.add(keepRuntime(body, cfg.Body)...)
	top := d.content(body, spec("", blk("variable", "name"), blk("locals"), blk("job", "id")))
	vals := d.assign(d.declare(blocksOf(top, "variable")), cfg)
	d.ctx.Variables[rootVar] = cty.ObjectVal(vals)
	d.locals(blocksOf(top, "locals"))
	job := d.onlyJob(top, body.MissingItemRange())
	if err := diagsError(d.diags); err != nil {
		return nil, err
	}
	return job, nil
}

// onlyJob decodes the single job block of a file.
func (d *decoder) onlyJob(top *hcl.BodyContent, missing hcl.Range) *state.Job {
	jobs := blocksOf(top, "job")
	if len(jobs) == 0 {
		d.add(problem(missing, "Missing job block", "a job file must contain one job \"<id>\" { ... } block"))
		return nil
	}
	for _, extra := range jobs[1:] {
		d.add(problem(extra.DefRange, "Duplicate job block",
			"a job file holds one job; the first is at %s", pos(jobs[0].DefRange)))
	}
	return d.job(jobs[0])
}
