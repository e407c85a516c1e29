package command

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/schedhq/sched/state"
)

// The job commands that look at or move a job's rollout, with Nomad's
// flags: job promote, job deployments, job allocs and job eval.

const jobPromoteHelp = `
Promote the canaries of the latest deployment of the job with ID (or a
unique prefix of one): every group's, or those of the groups named with
-group. Unless -detach, follow the evaluation the promotion creates and
then the rollout until the deployment ends: exit 0 when it succeeds, 2
when it fails, as 'sched deployment promote'.`

func (c *jobCLI) jobPromote(args []string) int {
	fs, m := c.flagSet("job promote", "[options] ID", jobPromoteHelp)
	var groups stringList
	fs.Var(&groups, "group", "promote only task group `NAME` (repeatable)")
	detach := fs.Bool("detach", false, "return once the promotion is recorded")
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := fs.Bool("json", false, "print the answer as JSON (implies -detach)")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	d, _, err := client.Jobs().LatestDeployment(c.ctx, stub.ID, nsQuery(stub))
	if err != nil {
		return c.fail("retrieving deployment", err)
	}
	if d == nil {
		fmt.Fprintf(c.stderr, "Error: job %q has no deployment to promote\n", stub.ID)
		return 1
	}
	if !d.Active() {
		fmt.Fprintf(c.stderr, "Error: the latest deployment of job %q (%s) is %s: there is nothing to promote\n",
			stub.ID, shortID(d.ID, *verbose), d.Status)
		return 1
	}
	return c.promoteAndFollow(client, d, groups, *detach, *verbose, *asJSON)
}

const jobDeploymentsHelp = `
List the deployments of the job with ID (or a unique prefix of one),
newest first: those of the job registered under this ID now, or, with
-all, of earlier jobs with the same ID too. With -latest, show only the
latest deployment, as 'sched deployment status' does.`

func (c *jobCLI) jobDeployments(args []string) int {
	fs, m := c.flagSet("job deployments", "[options] ID", jobDeploymentsHelp)
	latest := fs.Bool("latest", false, "show only the latest deployment")
	all := fs.Bool("all", false, "include deployments of earlier jobs with the same ID")
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := c.outputFlags(fs, "print the deployments (with -latest: the deployment) as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	if *latest {
		d, _, err := client.Jobs().LatestDeployment(c.ctx, stub.ID, nsQuery(stub))
		if err != nil {
			return c.fail("retrieving deployment", err)
		}
		if *asJSON {
			return c.printJSON(d)
		}
		if d == nil {
			fmt.Fprintf(c.stdout, "No deployment found for job %q\n", stub.ID)
			return 0
		}
		(&deploymentCLI{c.cli}).writeDeploymentStatus(d, *verbose)
		return 0
	}
	ds, _, err := client.Jobs().Deployments(c.ctx, stub.ID, *all, nsQuery(stub))
	if err != nil {
		return c.fail("retrieving deployments", err)
	}
	slices.SortStableFunc(ds, func(a, b *state.Deployment) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
	if *asJSON {
		return c.printJSON(ds)
	}
	if len(ds) == 0 {
		fmt.Fprintf(c.stdout, "No deployments found for job %q\n", stub.ID)
		return 0
	}
	writeDeploymentList(c.stdout, ds, *verbose)
	return 0
}

const jobAllocsHelp = `
List the allocations of the job with ID (or a unique prefix of one),
newest first: those of the job registered under this ID now, or, with
-all, of earlier jobs with the same ID too.`

func (c *jobCLI) jobAllocs(args []string) int {
	fs, m := c.flagSet("job allocs", "[options] ID", jobAllocsHelp)
	all := fs.Bool("all", false, "include allocations of earlier jobs with the same ID")
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := c.outputFlags(fs, "print the allocations as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	allocs, _, err := client.Jobs().Allocations(c.ctx, stub.ID, *all, nsQuery(stub))
	if err != nil {
		return c.fail("retrieving allocations", err)
	}
	if *asJSON {
		return c.printJSON(allocs)
	}
	if len(allocs) == 0 {
		fmt.Fprintf(c.stdout, "No allocations found for job %q\n", stub.ID)
		return 0
	}
	c.writeAllocTable(c.stdout, allocs, *verbose)
	return 0
}

const jobEvalHelp = `
Create an evaluation of the job with ID (or a unique prefix of one): the
scheduler looks at the job again, as after a register, and places what
is missing. With -force-reschedule, failed allocations are rescheduled
now, whatever their reschedule policy's attempts and delay. Unless
-detach, follow the evaluation (exit codes as 'sched job run': 2 when
some placements failed). Periodic and parameterized jobs are templates
and cannot be evaluated.`

func (c *jobCLI) jobEval(args []string) int {
	fs, m := c.flagSet("job eval", "[options] ID", jobEvalHelp)
	force := fs.Bool("force-reschedule", false, "reschedule failed allocations now, ignoring their reschedule policy")
	detach := fs.Bool("detach", false, "return once the evaluation is created")
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := fs.Bool("json", false, "print the answer as JSON (implies -detach)")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	resp, _, err := client.Jobs().Evaluate(c.ctx, stub.ID, state.EvalOptions{ForceReschedule: *force}, nsWrite(stub))
	if err != nil {
		return c.fail("evaluating job", err)
	}
	if *asJSON {
		return c.printJSON(resp)
	}
	if *detach {
		fmt.Fprintf(c.stdout, "Created eval ID: %q\n", shortID(resp.EvalID, *verbose))
		return 0
	}
	return c.monitorEval(client, stub.ID, resp.EvalID, stub.Namespace, *verbose)
}
