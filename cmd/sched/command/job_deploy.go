package command

import (
	"fmt"
	"strconv"

	"github.com/schedhq/sched/state"
)

const jobRevertHelp = `
Register version VERSION of the job with ID (or a unique prefix of one)
again, as a new version, and follow its evaluation unless -detach. With
-check-version, only if the job's current version is N.`

func (c *jobCLI) jobRevert(args []string) int {
	fs, m := c.flagSet("job revert", "[options] ID VERSION", jobRevertHelp)
	detach := fs.Bool("detach", false, "return once the revert is registered")
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := fs.Bool("json", false, "print the answer as JSON (implies -detach)")
	var prior optionalUint
	fs.Var(&prior, "check-version", "revert only if the current version is `N`")
	if done, code := parseFlags(fs, args, 2, 2); done {
		return code
	}
	version, err := strconv.ParseUint(fs.Arg(1), 10, 64)
	if err != nil {
		fmt.Fprintf(c.stderr, "Error: VERSION must be a version number, got %q\n", fs.Arg(1))
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	var enforce *uint64
	if prior.set {
		enforce = &prior.value
	}
	resp, _, err := client.Jobs().Revert(c.ctx, stub.ID, version, enforce, nsWrite(stub))
	if err != nil {
		return c.fail("reverting job", err)
	}
	if *asJSON {
		return c.printJSON(resp)
	}
	fmt.Fprintf(c.stdout, "Job %q reverted to version %d\n", stub.ID, version)
	if resp.EvalID == "" || *detach {
		if resp.EvalID != "" {
			fmt.Fprintf(c.stdout, "Evaluation ID: %s\n", resp.EvalID)
		}
		return 0
	}
	return c.monitorEval(client, stub.ID, resp.EvalID, stub.Namespace, *verbose)
}

const jobScaleHelp = `
Set the count of task group GROUP of the job with ID (or a unique prefix
of one) to COUNT, recording a scaling event with -message (default
"submitted using the sched CLI"), and follow the evaluation unless
-detach. GROUP may be left out when the job has one group. Refused while
a deployment of the job is active.`

func (c *jobCLI) jobScale(args []string) int {
	fs, m := c.flagSet("job scale", "[options] ID [GROUP] COUNT", jobScaleHelp)
	detach := fs.Bool("detach", false, "return once the scale is registered")
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := fs.Bool("json", false, "print the answer as JSON (implies -detach)")
	message := fs.String("message", "submitted using the sched CLI", "the scaling event's `MESSAGE`")
	policyOverride := fs.Bool("policy-override", false, "override soft-mandatory policies")
	if done, code := parseFlags(fs, args, 2, 3); done {
		return code
	}
	countArg := fs.Arg(fs.NArg() - 1)
	count, err := strconv.ParseInt(countArg, 10, 64)
	if err != nil || count < 0 {
		fmt.Fprintf(c.stderr, "Error: COUNT must be a number of allocations, got %q\n", countArg)
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	group := ""
	if fs.NArg() == 3 {
		group = fs.Arg(1)
	} else {
		job, _, err := client.Jobs().Info(c.ctx, stub.ID, nsQuery(stub))
		if err != nil {
			return c.fail("retrieving job", err)
		}
		if len(job.TaskGroups) != 1 {
			fmt.Fprintf(c.stderr, "Error: job %q has %d task groups: name the one to scale\n", stub.ID, len(job.TaskGroups))
			return 1
		}
		group = job.TaskGroups[0].Name
	}
	resp, _, err := client.Jobs().Scale(c.ctx, stub.ID, &state.JobScaleRequest{
		Count: &count, Target: map[string]string{"Group": group}, Message: *message, PolicyOverride: *policyOverride,
	}, nsWrite(stub))
	if err != nil {
		return c.fail("scaling job", err)
	}
	if *asJSON {
		return c.printJSON(resp)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(c.stdout, "Job Warnings:\n%s\n\n", resp.Warnings)
	}
	if resp.EvalID == "" || *detach {
		if resp.EvalID != "" {
			fmt.Fprintf(c.stdout, "Evaluation ID: %s\n", resp.EvalID)
		}
		return 0
	}
	return c.monitorEval(client, stub.ID, resp.EvalID, stub.Namespace, *verbose)
}

// awaitingPromotion reports whether a running deployment waits only for an
// operator: a group without auto_promote has all its canaries healthy.
func awaitingPromotion(d *state.Deployment) bool {
	if d.Status != state.DeploymentStatusRunning {
		return false
	}
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted && !g.AutoPromote && g.HealthyAllocs >= g.DesiredCanaries {
			return true
		}
	}
	return false
}
