package command

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// deploymentCLI holds the commands of `sched deployment`: list, status,
// promote, fail, pause and resume.
type deploymentCLI struct{ *cli }

func (c *deploymentCLI) table() []entry {
	return []entry{
		{"list", "List deployments", c.deploymentList, nil},
		{"status", "Show a deployment's status", c.deploymentStatus, nil},
		{"promote", "Promote a deployment's canaries", c.deploymentPromote, nil},
		{"fail", "Mark a deployment failed", c.deploymentFail, nil},
		{"pause", "Pause a deployment", c.deploymentPause, nil},
		{"resume", "Resume a paused deployment", c.deploymentResume, nil},
	}
}

// printJSON prints v as indented JSON, the output of every -json flag.

const deploymentListHelp = `
List the deployments (of every namespace unless -namespace names one),
newest first.`

func (c *deploymentCLI) deploymentList(args []string) int {
	fs, m := c.flagSet("deployment list", "[options]", deploymentListHelp)
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := c.outputFlags(fs, "print the deployments as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	ds, _, err := client.Deployments().List(c.ctx, &api.QueryOptions{Namespace: m.lookupNamespace()})
	if err != nil {
		return c.fail("retrieving deployments", err)
	}
	slices.SortStableFunc(ds, func(a, b *state.Deployment) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
	if *asJSON {
		return c.printJSON(ds)
	}
	if len(ds) == 0 {
		fmt.Fprintln(c.stdout, "No deployments found")
		return 0
	}
	writeDeploymentList(c.stdout, ds, *verbose)
	return 0
}

func writeDeploymentList(w io.Writer, ds []*state.Deployment, verbose bool) {
	rows := make([][]string, 0, len(ds))
	for _, d := range ds {
		rows = append(rows, []string{shortID(d.ID, verbose), d.JobID, itoa(int(d.JobVersion)), d.Status, orNone(d.StatusDescription)})
	}
	writeTable(w, []string{"ID", "Job ID", "Job Version", "Status", "Description"}, rows)
}

// resolveDeployment finds the deployment an ID (or unique prefix) names;
// on failure it has printed why and returns nil.
func (c *deploymentCLI) resolveDeployment(client *api.Client, m *meta, id string, verbose bool) *state.Deployment {
	id = strings.TrimSpace(id)
	ds, _, err := client.Deployments().List(c.ctx, &api.QueryOptions{Namespace: m.lookupNamespace(), Prefix: id})
	if err != nil {
		c.fail("retrieving deployment", err)
		return nil
	}
	for _, d := range ds {
		if d.ID == id {
			return d
		}
	}
	switch len(ds) {
	case 1:
		return ds[0]
	case 0:
		fmt.Fprintf(c.stderr, "No deployment(s) with prefix or ID %q found\n", id)
	default:
		fmt.Fprintf(c.stderr, "Prefix matched multiple deployments\n\n")
		writeDeploymentList(c.stderr, ds, verbose)
	}
	return nil
}

const deploymentStatusHelp = `
Show the deployment with ID (or a unique prefix of one): its status and,
per task group, the allocations desired, placed, healthy and unhealthy.
With -monitor, follow it by blocking queries, printing the table each time
it changes, until it ends (exit 0 when it succeeds, 2 when it fails) or
waits for its canaries to be promoted (exit 0).`

func (c *deploymentCLI) deploymentStatus(args []string) int {
	fs, m := c.flagSet("deployment status", "[options] ID", deploymentStatusHelp)
	verbose := fs.Bool("verbose", false, "print full IDs")
	monitor := fs.Bool("monitor", false, "follow the deployment until it ends (exit 0 when it succeeds, 2 when it fails)")
	asJSON := c.outputFlags(fs, "print the deployment as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	d := c.resolveDeployment(client, m, fs.Arg(0), *verbose)
	if d == nil {
		return 1
	}
	if *asJSON {
		return c.printJSON(d)
	}
	if *monitor {
		return c.monitorDeployment(client, d, *verbose)
	}
	c.writeDeploymentStatus(d, *verbose)
	return 0
}

// writeDeploymentStatus prints a deployment in full.
func (c *deploymentCLI) writeDeploymentStatus(d *state.Deployment, verbose bool) {
	writeKV(c.stdout, []kv{
		{"ID", shortID(d.ID, verbose)},
		{"Job ID", d.JobID},
		{"Job Version", itoa(int(d.JobVersion))},
		{"Status", d.Status},
		{"Description", orNone(d.StatusDescription)},
	})
	fmt.Fprintln(c.stdout)
	writeDeploymentGroups(c.stdout, d)
}

// writeDeploymentGroups prints the per-group table of a deployment, with
// the canary columns only when a group has canaries.
func writeDeploymentGroups(w io.Writer, d *state.Deployment) {
	canaries := false
	for _, g := range d.TaskGroups {
		canaries = canaries || g.DesiredCanaries > 0
	}
	header := []string{"Task Group", "Auto Revert"}
	if canaries {
		header = append(header, "Promoted")
	}
	header = append(header, "Desired")
	if canaries {
		header = append(header, "Canaries")
	}
	header = append(header, "Placed", "Healthy", "Unhealthy", "Progress Deadline")
	var rows [][]string
	for _, name := range sortedGroups(d) {
		g := d.TaskGroups[name]
		row := []string{name, fmt.Sprint(g.AutoRevert)}
		if canaries {
			row = append(row, fmt.Sprint(g.Promoted))
		}
		row = append(row, itoa(g.DesiredTotal))
		if canaries {
			row = append(row, itoa(g.DesiredCanaries))
		}
		deadline := "<none>"
		if !g.RequireProgressBy.IsZero() {
			deadline = g.RequireProgressBy.UTC().Format(time.RFC3339)
		}
		row = append(row, itoa(g.PlacedAllocs), itoa(g.HealthyAllocs), itoa(g.UnhealthyAllocs), deadline)
		rows = append(rows, row)
	}
	writeTable(w, header, rows)
}

func sortedGroups(d *state.Deployment) []string {
	names := make([]string, 0, len(d.TaskGroups))
	for n := range d.TaskGroups {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// deploymentWrite is the shape of promote, fail, pause and resume: resolve
// the deployment, do the write, print the result.
func (c *deploymentCLI) deploymentWrite(name, help string, args []string, extra func(fs *flag.FlagSet), do func(client *api.Client, d *state.Deployment) (*state.DeploymentUpdateResponse, error), done string) int {
	fs, m := c.flagSet("deployment "+name, "[options] ID", help)
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	if extra != nil {
		extra(fs)
	}
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	d := c.resolveDeployment(client, m, fs.Arg(0), *verbose)
	if d == nil {
		return 1
	}
	resp, err := do(client, d)
	if err != nil {
		return c.fail(name+" deployment", err)
	}
	if *asJSON {
		return c.printJSON(resp)
	}
	fmt.Fprintf(c.stdout, "Deployment %q %s\n", shortID(d.ID, *verbose), done)
	if resp.EvalID != "" {
		fmt.Fprintf(c.stdout, "Evaluation ID: %s\n", shortID(resp.EvalID, *verbose))
	}
	return 0
}

func (c *deploymentCLI) deploymentFail(args []string) int {
	return c.deploymentWrite("fail", "Mark the deployment with ID (or a unique prefix of one) failed.", args, nil,
		func(client *api.Client, d *state.Deployment) (*state.DeploymentUpdateResponse, error) {
			resp, _, err := client.Deployments().Fail(c.ctx, d.ID, &api.WriteOptions{Namespace: d.Namespace})
			return resp, err
		}, "marked as failed")
}

func (c *deploymentCLI) deploymentPause(args []string) int {
	return c.deploymentWrite("pause", "Pause the deployment with ID (or a unique prefix of one): nothing more is replaced until it resumes.", args, nil,
		func(client *api.Client, d *state.Deployment) (*state.DeploymentUpdateResponse, error) {
			resp, _, err := client.Deployments().Pause(c.ctx, d.ID, true, &api.WriteOptions{Namespace: d.Namespace})
			return resp, err
		}, "paused")
}

func (c *deploymentCLI) deploymentResume(args []string) int {
	return c.deploymentWrite("resume", "Resume the paused deployment with ID (or a unique prefix of one).", args, nil,
		func(client *api.Client, d *state.Deployment) (*state.DeploymentUpdateResponse, error) {
			resp, _, err := client.Deployments().Pause(c.ctx, d.ID, false, &api.WriteOptions{Namespace: d.Namespace})
			return resp, err
		}, "resumed")
}
