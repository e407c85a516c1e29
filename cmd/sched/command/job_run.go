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
the scheduler could not place every allocation (reported as soon as the
evaluation is done, with the reasons; the deployment of what was placed
is not followed then) or the deployment failed.

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
	if code == exitPlacementFailed {
		// The evaluation is done and left a blocked evaluation: waiting
		// for the deployment would only wait out its progress deadline.
		// Say how to follow what was placed, and exit now, as Nomad.
		c.hintDeployment(client, job.ID, ns, resp.JobModifyIndex, *verbose)
		return code
	}
	if code != 0 {
		return code
	}
	return c.followDeployment(client, job.ID, ns, resp.JobModifyIndex, *verbose)
}

// hintDeployment prints how to follow the deployment of the job version
// registered at jobModifyIndex, when there is one; a read error only
// leaves the hint out.
func (c *cli) hintDeployment(client *api.Client, jobID, ns string, jobModifyIndex uint64, verbose bool) {
	d, _, err := client.Jobs().LatestDeployment(c.ctx, jobID, &api.QueryOptions{Namespace: ns})
	if err != nil || d == nil || d.JobModifyIndex < jobModifyIndex || !d.Active() {
		return
	}
	fmt.Fprintf(c.stdout, "    Deployment %q goes on with what was placed: follow it with 'sched deployment status -monitor %s'\n",
		shortID(d.ID, verbose), shortID(d.ID, verbose))
}
