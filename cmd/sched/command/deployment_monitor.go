package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// The deployment monitor: what `job run`, `deployment promote`, `job
// promote` and `deployment status -monitor` end with. It follows one
// deployment by blocking queries and prints its per-group table each
// time it changes.

// monitorDeployment follows deployment d until it ends, or until only an
// operator can move it on (canaries healthy, waiting for a promotion: it
// says how, and returns 0). It returns 0 when the deployment succeeded
// and exitPlacementFailed (2) when it failed or was cancelled; 1 on a
// read error. An interrupt (the command's context) returns 0: the
// deployment goes on without us.
func (c *cli) monitorDeployment(client *api.Client, d *state.Deployment, verbose bool) int {
	fmt.Fprintf(c.stdout, "\n==> %s: Monitoring deployment %q\n", c.stamp(), shortID(d.ID, verbose))
	var (
		index uint64
		last  string
	)
	for {
		var b strings.Builder
		writeDeploymentGroups(&b, d)
		if view := d.Status + d.StatusDescription + b.String(); view != last {
			last = view
			fmt.Fprintf(c.stdout, "  %s: %s (%s)\n", c.stamp(), d.Status, d.StatusDescription)
			fmt.Fprint(c.stdout, b.String())
		}
		if !d.Active() {
			if d.Status == state.DeploymentStatusSuccessful {
				return 0
			}
			return exitPlacementFailed
		}
		if awaitingPromotion(d) {
			fmt.Fprintf(c.stdout, "  %s: canaries healthy: promote them with 'sched deployment promote %s'\n", c.stamp(), shortID(d.ID, verbose))
			return 0
		}
		// Index 1 at least, so a server that reports no index cannot turn
		// this into a busy loop.
		index = max(index, d.ModifyIndex, 1)
		next, qm, err := client.Deployments().Info(c.ctx, d.ID,
			&api.QueryOptions{Namespace: d.Namespace, WaitIndex: index, WaitTime: 30 * time.Second})
		if err != nil {
			if c.ctx.Err() != nil {
				fmt.Fprintf(c.stdout, "Deployment following interrupted; the deployment goes on\n")
				return 0
			}
			return c.fail("reading deployment", err)
		}
		index = max(index, qm.LastIndex)
		d = next
	}
}

// promoteAndFollow promotes deployment d (every group, or those named)
// and, unless detach, follows the evaluation the promotion created, then
// the rollout it starts, as Nomad's promote commands do. Exit codes as
// `job run`'s: 0 success, 1 an error, 2 placements or the deployment
// failed.
func (c *cli) promoteAndFollow(client *api.Client, d *state.Deployment, groups []string, detach, verbose, asJSON bool) int {
	resp, _, err := client.Deployments().Promote(c.ctx, d.ID, len(groups) == 0, groups, &api.WriteOptions{Namespace: d.Namespace})
	if err != nil {
		return c.fail("promoting deployment", err)
	}
	if asJSON {
		return c.printJSON(resp)
	}
	fmt.Fprintf(c.stdout, "Deployment %q promoted\n", shortID(d.ID, verbose))
	if detach {
		if resp.EvalID != "" {
			fmt.Fprintf(c.stdout, "Evaluation ID: %s\n", shortID(resp.EvalID, verbose))
		}
		return 0
	}
	if resp.EvalID != "" {
		fmt.Fprintln(c.stdout)
		if code := c.monitorEval(client, d.JobID, resp.EvalID, d.Namespace, verbose); code != 0 {
			return code
		}
	}
	now, _, err := client.Deployments().Info(c.ctx, d.ID, &api.QueryOptions{Namespace: d.Namespace})
	if err != nil {
		return c.fail("reading deployment", err)
	}
	return c.monitorDeployment(client, now, verbose)
}

const deploymentPromoteHelp = `
Promote the canaries of the deployment with ID (or a unique prefix of
one): every group's, or those of the groups named with -group. The old
allocations are then replaced, max_parallel at a time. Unless -detach,
follow the evaluation the promotion creates and then the rollout until
the deployment ends: exit 0 when it succeeds, 2 when it fails.`

func (c *deploymentCLI) deploymentPromote(args []string) int {
	fs, m := c.flagSet("deployment promote", "[options] ID", deploymentPromoteHelp)
	var groups stringList
	fs.Var(&groups, "group", "promote only task group `NAME` (repeatable)")
	detach := fs.Bool("detach", false, "return once the promotion is recorded")
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := fs.Bool("json", false, "print the answer as JSON (implies -detach)")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	d := c.resolveDeployment(client, m, fs.Arg(0), *verbose)
	if d == nil {
		return 1
	}
	return c.promoteAndFollow(client, d, groups, *detach, *verbose, *asJSON)
}
