package command

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// Exit codes of `sched job plan`, Nomad's: scripts branch on them.
const (
	planNoChange = 0
	planChanges  = 1
	// planPlacementFailed: some allocations could not be placed (as
	// `job run`'s exit code 2).
	planPlacementFailed = exitPlacementFailed
	planError           = 255
)

const jobPlanHelp = `
Ask the scheduler what registering the job in FILE would do, changing
nothing: the difference from the registered version, what would happen to
each task group, and the placements that would fail and why. The job
modify index it prints makes a later 'sched job run -check-index' apply
exactly what was planned.

Exit codes: 0 when no allocation would be created or destroyed, 1 when
some would, 2 when some allocations could not be placed (as 'job run';
Nomad's plan exits 1 then), 255 when the plan could not be made.`

func (c *jobCLI) jobPlan(args []string) int {
	fs, m := c.flagSet("job plan", "[options] FILE", jobPlanHelp)
	var (
		files          jobFileFlags
		diff           = fs.Bool("diff", true, "show the difference from the registered job")
		verbose        = fs.Bool("verbose", false, "show unchanged fields of the diff too, and full IDs")
		policyOverride = fs.Bool("policy-override", false, "override soft-mandatory policies")
	)
	files.register(fs)
	if done, code := parseFlags(fs, args, 1, 1); done {
		if code != 0 {
			return planError
		}
		return code
	}
	client, err := m.client()
	if err != nil {
		c.fail("creating client", err)
		return planError
	}
	path := fs.Arg(0)
	job, _, err := c.readJob(client, path, &files)
	if err != nil {
		c.fail("getting job struct", err)
		return planError
	}
	ns := job.Namespace
	if ns == "" {
		ns = m.namespace
	}
	resp, _, err := client.Jobs().Plan(c.ctx, job, true, *policyOverride, &api.WriteOptions{Namespace: ns})
	if err != nil {
		c.fail("during plan", err)
		return planError
	}

	if *diff && resp.Diff != nil {
		writePlanDiff(c.stdout, resp.Diff, *verbose)
		fmt.Fprintln(c.stdout)
	}
	fmt.Fprintln(c.stdout, "Scheduler dry-run:")
	c.writeDryRun(resp, job)
	fmt.Fprintln(c.stdout)
	if resp.Annotations != nil && len(resp.Annotations.PreemptedAllocs) > 0 {
		writePreemptions(c.stdout, resp.Annotations.PreemptedAllocs) // job_plan_preempt.go
		fmt.Fprintln(c.stdout)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(c.stdout, "Job Warnings:\n%s\n\n", strings.TrimSpace(resp.Warnings))
	}
	fmt.Fprintf(c.stdout, "Job Modify Index: %d\n", resp.JobModifyIndex)
	fmt.Fprintf(c.stdout, "To submit the job with version verification run:\n\nsched job run -check-index %d %s\n\n", resp.JobModifyIndex, path)
	fmt.Fprint(c.stdout, `With -check-index the job is registered only if its job modify index still
matches: if someone changed the job since this plan, the register fails
instead of applying changes this plan did not show.
`)
	return planExitCode(resp)
}

// planExitCode is 2 when some placements would fail (sched's, not
// Nomad's, whose plan says 1 then: a script must not run a job that
// cannot be placed), 1 when the plan creates, stops, migrates or replaces
// an allocation, 0 otherwise.
func planExitCode(resp *state.JobPlanResponse) int {
	if len(resp.FailedTGAllocs) > 0 {
		return planPlacementFailed
	}
	if resp.Annotations == nil {
		return planNoChange
	}
	for _, u := range resp.Annotations.DesiredTGUpdates {
		if u != nil && u.Place+u.Stop+u.Migrate+u.DestructiveUpdate+u.Canary > 0 {
			return planChanges
		}
	}
	return planNoChange
}

// writeDryRun prints what the scheduler would do: success, or each group's
// failed placements with the reasons, and when a periodic job would next
// launch.
func (c *jobCLI) writeDryRun(resp *state.JobPlanResponse, job *state.Job) {
	if len(resp.FailedTGAllocs) == 0 {
		fmt.Fprintln(c.stdout, "- All tasks successfully allocated.")
	} else {
		fmt.Fprintln(c.stdout, "- WARNING: Failed to place all allocations.")
		for _, group := range slices.Sorted(maps.Keys(resp.FailedTGAllocs)) {
			m := resp.FailedTGAllocs[group]
			fmt.Fprintf(c.stdout, "  Task Group %q (failed to place %d allocation(s)):\n", group, m.CoalescedFailures+1)
			for _, line := range placementFailure(m) {
				fmt.Fprintf(c.stdout, "    * %s\n", line)
			}
		}
	}
	for _, e := range resp.CreatedEvals {
		if e.TriggeredBy == state.EvalTriggerRollingUpdate && e.Wait > 0 {
			fmt.Fprintf(c.stdout, "- Rolling update, next evaluation will be in %s.\n", e.Wait)
		}
	}
	if job.IsPeriodic() && !resp.NextPeriodicLaunch.IsZero() {
		next := resp.NextPeriodicLaunch
		fmt.Fprintf(c.stdout, "- If submitted now, next periodic launch would be at %s (%s from now).\n",
			next.In(c.loc).Format(time.RFC3339), next.Sub(c.now()).Round(time.Second))
	}
}

// writePlanDiff prints a plan's diff as Nomad's CLI does: the job, then
// every group with what the plan does to it, and every task with what its
// change forces. The fields of an edited job, group or task are listed
// (only the changed ones unless verbose); those of an added or removed
// one only when verbose, since every one of them changes.
func writePlanDiff(w io.Writer, d *state.JobDiff, verbose bool) {
	fmt.Fprintf(w, "%sJob: %q\n", diffMarker(d.Type), d.ID)
	writeChanges(w, 1, d.Type, d.Fields, d.Objects, verbose)
	for _, g := range d.TaskGroups {
		fmt.Fprintf(w, "%sTask Group: %q%s\n", diffMarker(g.Type), g.Name, updatesNote(g.Updates))
		writeChanges(w, 1, g.Type, g.Fields, g.Objects, verbose)
		for _, t := range g.Tasks {
			note := ""
			if len(t.Annotations) > 0 {
				note = " (" + strings.Join(t.Annotations, ", ") + ")"
			}
			fmt.Fprintf(w, "  %sTask: %q%s\n", diffMarker(t.Type), t.Name, note)
			writeChanges(w, 2, t.Type, t.Fields, t.Objects, verbose)
		}
	}
}

// writeChanges prints the fields and objects of a job, group or task
// whose diff type is typ, as writePlanDiff describes.
func writeChanges(w io.Writer, depth int, typ state.DiffType, fields []*state.FieldDiff, objects []*state.ObjectDiff, verbose bool) {
	if typ != state.DiffTypeEdited && !verbose {
		return
	}
	fields, objects = changedOnly(fields, objects, verbose)
	writeFieldsAndObjects(w, depth, fields, objects)
}

// changedOnly drops the unchanged fields and objects of a contextual diff,
// unless verbose.
func changedOnly(fields []*state.FieldDiff, objects []*state.ObjectDiff, verbose bool) ([]*state.FieldDiff, []*state.ObjectDiff) {
	if verbose {
		return fields, objects
	}
	var fs []*state.FieldDiff
	for _, f := range fields {
		if f.Type != state.DiffTypeNone {
			fs = append(fs, f)
		}
	}
	var os []*state.ObjectDiff
	for _, o := range objects {
		if o.Type == state.DiffTypeNone {
			continue
		}
		c := *o
		c.Fields, c.Objects = changedOnly(o.Fields, o.Objects, verbose)
		os = append(os, &c)
	}
	return fs, os
}
