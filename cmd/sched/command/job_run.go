package command

import (
	"fmt"
	"strings"

	"github.com/schedhq/sched/http/api"
)

const jobRunHelp = `
Register the job in FILE (HCL, or JSON when named *.json or given -json;
"-" reads standard input) and, unless -detach, follow the evaluation it
creates until the scheduler has placed it, then the deployment of the new
version (if it has one) until it succeeds (exit 0) or fails (exit 2).
Exit codes: 0 success, 1 an error (bad file, refused, unreachable), 2
the scheduler could not place every allocation or the deployment failed.

HCL jobs are parsed by the server, with the values of -var-file and -var.
With -check-index the job is registered only if its current job modify
index is N; 0 means only if the job does not exist yet.`

func (c *jobCLI) jobRun(args []string) int {
	fs, m := c.flagSet("job run", "[options] FILE", jobRunHelp)
	var (
		files          jobFileFlags
		checkIndex     optionalUint
		detach         = fs.Bool("detach", false, "return once the job is registered, without following its evaluation")
		verbose        = fs.Bool("verbose", false, "print full IDs")
		preserveCounts = fs.Bool("preserve-counts", false, "keep the current counts of existing task groups")
		policyOverride = fs.Bool("policy-override", false, "override soft-mandatory policies")
		evalPriority   = fs.Int("eval-priority", 0, "priority of the evaluation; 0 uses the job's")
	)
	files.register(fs)
	fs.Var(&checkIndex, "check-index", "register only if the job modify index is `N` (0: only if new)")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}

	job, sub, err := c.readJob(client, fs.Arg(0), &files)
	if err != nil {
		return c.fail("getting job struct", err)
	}
	opts := &api.RegisterOptions{
		EnforceIndex:   checkIndex.set,
		ModifyIndex:    checkIndex.value,
		EvalPriority:   *evalPriority,
		PolicyOverride: *policyOverride,
		PreserveCounts: *preserveCounts,
		Submission:     sub,
	}
	// A namespace in the file wins over -namespace, as in Nomad.
	ns := job.Namespace
	if ns == "" {
		ns = m.namespace
	}
	resp, _, err := client.Jobs().Register(c.ctx, job, opts, &api.WriteOptions{Namespace: ns})
	if err != nil {
		return c.fail("submitting job", err)
	}

	if resp.Warnings != "" {
		fmt.Fprintf(c.stdout, "Job Warnings:\n%s\n\n", strings.TrimSpace(resp.Warnings))
	}
	fmt.Fprintln(c.stdout, "Job registration successful")
	if resp.EvalID != "" {
		fmt.Fprintf(c.stdout, "Evaluation ID: %s\n", resp.EvalID)
	}
	fmt.Fprintf(c.stdout, "Job Modify Index: %d\n", resp.JobModifyIndex)
	switch {
	case job.IsPeriodic():
		fmt.Fprintln(c.stdout, "The job is periodic: it launches on its schedule, not now.")
		return 0
	case job.IsParameterized():
		fmt.Fprintln(c.stdout, "The job is parameterized: run instances of it with dispatch.")
		return 0
	case resp.EvalID == "" || *detach:
		return 0
	}
	fmt.Fprintln(c.stdout)
	code = c.monitorEval(client, job.ID, resp.EvalID, ns, *verbose)
	if code != 0 && code != exitPlacementFailed {
		return code
	}
	// What was placed rolls out even when some of it could not be: follow
	// the deployment, then report the placement failure (2), as Nomad.
	if dcode := c.followDeployment(client, job.ID, ns, resp.JobModifyIndex, *verbose); dcode != 0 {
		return dcode
	}
	return code
}
