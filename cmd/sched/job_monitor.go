package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// monitorEval follows evaluation evalID of job jobID until the scheduler
// has finished with it, then prints what it placed and what it could not.
// It waits with blocking queries on the job's evaluations, so it costs one
// request per change rather than a poll. Exit code: 0 when the evaluation
// completed (even with placement failures, which are printed and which a
// blocked evaluation will retry), 1 when it failed or was canceled.
func (c *cli) monitorEval(client *api.Client, jobID, evalID, ns string, verbose bool) int {
	fmt.Fprintf(c.stdout, "==> %s: Monitoring evaluation %q\n", c.stamp(), shortID(evalID, verbose))
	var (
		index      uint64
		lastStatus string
		ev         *state.Evaluation
	)
	for {
		evals, qm, err := client.Jobs().Evaluations(c.ctx, jobID, &api.QueryOptions{Namespace: ns, WaitIndex: index})
		if err != nil {
			if c.ctx.Err() != nil {
				// Interrupted: the work goes on without us.
				fmt.Fprintf(c.stderr, "Monitoring interrupted; evaluation %q continues on the servers (see `sched job status %s`)\n", shortID(evalID, verbose), jobID)
				return 1
			}
			return c.fail("reading evaluation", err)
		}
		ev = nil
		for _, e := range evals {
			if e.ID == evalID {
				ev = e
				break
			}
		}
		if ev != nil {
			if lastStatus == "" {
				c.printTrigger(ev, jobID, verbose)
			} else if ev.Status != lastStatus {
				fmt.Fprintf(c.stdout, "    %s: Evaluation status changed: %q -> %q\n", c.stamp(), lastStatus, ev.Status)
			}
			lastStatus = ev.Status
			if ev.Terminal() {
				break
			}
		}
		// Block until something changes. Index 1 at least, so a server
		// that reports no index cannot turn this into a busy loop.
		index = max(qm.LastIndex, index, 1)
	}

	allocs, _, err := client.Jobs().Allocations(c.ctx, jobID, false, &api.QueryOptions{Namespace: ns})
	if err != nil {
		return c.fail("reading allocations", err)
	}
	for _, a := range allocs {
		if a.EvalID == evalID {
			fmt.Fprintf(c.stdout, "    %s: Allocation %q created: node %q, group %q\n",
				c.stamp(), shortID(a.ID, verbose), shortID(a.NodeID, verbose), a.TaskGroup)
		}
	}

	if len(ev.FailedTGAllocs) == 0 {
		fmt.Fprintf(c.stdout, "==> %s: Evaluation %q finished with status %q\n", c.stamp(), shortID(evalID, verbose), ev.Status)
	} else {
		fmt.Fprintf(c.stdout, "==> %s: Evaluation %q finished with status %q but failed to place all allocations:\n",
			c.stamp(), shortID(evalID, verbose), ev.Status)
		for _, group := range slices.Sorted(maps.Keys(ev.FailedTGAllocs)) {
			m := ev.FailedTGAllocs[group]
			fmt.Fprintf(c.stdout, "    Task Group %q (failed to place %d allocation(s)):\n", group, m.CoalescedFailures+1)
			for _, line := range placementFailure(m) {
				fmt.Fprintf(c.stdout, "      * %s\n", line)
			}
		}
		if ev.BlockedEval != "" {
			fmt.Fprintf(c.stdout, "    Evaluation %q waiting for additional capacity to place remainder\n", shortID(ev.BlockedEval, verbose))
		}
	}
	if ev.Status != state.EvalStatusComplete {
		if ev.StatusDescription != "" {
			fmt.Fprintf(c.stderr, "Evaluation %s: %s\n", ev.Status, ev.StatusDescription)
		}
		return 1
	}
	return 0
}

func (c *cli) printTrigger(ev *state.Evaluation, jobID string, verbose bool) {
	switch ev.TriggeredBy {
	case state.EvalTriggerJobRegister, state.EvalTriggerJobDeregister:
		fmt.Fprintf(c.stdout, "    %s: Evaluation triggered by job %q\n", c.stamp(), jobID)
	default:
		fmt.Fprintf(c.stdout, "    %s: Evaluation triggered by %q\n", c.stamp(), ev.TriggeredBy)
	}
	if ev.DeploymentID != "" {
		fmt.Fprintf(c.stdout, "    %s: Evaluation within deployment: %q\n", c.stamp(), shortID(ev.DeploymentID, verbose))
	}
}

// placementFailure explains, one reason per line, why the scheduler could
// not place a group: that is what a user needs to fix the job or the
// cluster.
func placementFailure(m *state.AllocMetric) []string {
	if m == nil {
		return nil
	}
	var out []string
	if m.NodesEvaluated == 0 {
		out = append(out, "No nodes were eligible for evaluation")
	}
	for _, dc := range slices.Sorted(maps.Keys(m.NodesAvailable)) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("No nodes are available in datacenter %q", dc))
		}
	}
	for _, class := range slices.Sorted(maps.Keys(m.ClassFiltered)) {
		out = append(out, fmt.Sprintf("Class %q: %d nodes excluded by filter", class, m.ClassFiltered[class]))
	}
	for _, cons := range slices.Sorted(maps.Keys(m.ConstraintFiltered)) {
		out = append(out, fmt.Sprintf("Constraint %q: %d nodes excluded by filter", cons, m.ConstraintFiltered[cons]))
	}
	if m.NodesExhausted > 0 {
		out = append(out, fmt.Sprintf("Resources exhausted on %d nodes", m.NodesExhausted))
	}
	for _, dim := range slices.Sorted(maps.Keys(m.DimensionExhausted)) {
		out = append(out, fmt.Sprintf("Dimension %q exhausted on %d nodes", dim, m.DimensionExhausted[dim]))
	}
	return out
}

// stamp is the current time as the monitor prints it.
func (c *cli) stamp() string {
	return c.now().In(c.loc).Format(time.RFC3339)
}
