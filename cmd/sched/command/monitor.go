package command

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// The monitors a write command ends with: an evaluation followed until the
// scheduler is done with it, then the deployment it started. The job
// commands use them today (run, stop, revert, scale, dispatch, periodic
// force); they are on the base so that any write that creates an
// evaluation can follow it.

// monitorEval follows evaluation evalID of job jobID until the scheduler
// has finished with it, printing its status changes and each allocation
// it places as the placement is committed, then what it could not place.
// Two blocking queries run side by side: one on the job's evaluations and
// one on the evaluation's allocations, so it costs one request per change
// rather than a poll. The allocations watch is best effort (a server
// without the endpoint just shows the placements at the end). Exit code:
// 0 when the evaluation completed (even with placement failures, which are
// printed and which a blocked evaluation will retry), 1 when it failed or
// was canceled.
func (c *cli) monitorEval(client *api.Client, jobID, evalID, ns string, verbose bool) int {
	fmt.Fprintf(c.stdout, "==> %s: Monitoring evaluation %q\n", c.stamp(), shortID(evalID, verbose))
	ctx, cancel := context.WithCancel(c.ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	evalCh := make(chan evalUpdate)
	allocCh := make(chan []*state.AllocListStub)
	wg.Add(2)
	go func() {
		defer wg.Done()
		watchEval(ctx, client, jobID, evalID, ns, evalCh)
	}()
	go func() {
		defer wg.Done()
		watchEvalAllocs(ctx, client, evalID, ns, allocCh)
	}()

	placed := map[string]bool{}
	printPlaced := func(id, node, group string) {
		if placed[id] {
			return
		}
		placed[id] = true
		fmt.Fprintf(c.stdout, "    %s: Allocation %q created: node %q, group %q\n",
			c.stamp(), shortID(id, verbose), shortID(node, verbose), group)
	}
	var (
		lastStatus string
		ev         *state.Evaluation
		early      []*state.AllocListStub
	)
	for ev == nil || !ev.Terminal() {
		select {
		case allocs := <-allocCh:
			if ev == nil {
				// Placements committed before the evaluation showed
				// up: print them after the line that introduces it.
				early = append(early, allocs...)
				continue
			}
			for _, a := range allocs {
				printPlaced(a.ID, a.NodeID, a.TaskGroup)
			}
		case <-ctx.Done():
			return c.monitorInterrupted(jobID, evalID, verbose)
		case u := <-evalCh:
			if u.err != nil {
				if c.ctx.Err() != nil {
					return c.monitorInterrupted(jobID, evalID, verbose)
				}
				return c.fail("reading evaluation", u.err)
			}
			if u.eval == nil {
				continue
			}
			ev = u.eval
			if lastStatus == "" {
				c.printTrigger(ev, jobID, verbose)
				for _, a := range early {
					printPlaced(a.ID, a.NodeID, a.TaskGroup)
				}
			} else if ev.Status != lastStatus {
				fmt.Fprintf(c.stdout, "    %s: Evaluation status changed: %q -> %q\n", c.stamp(), lastStatus, ev.Status)
			}
			lastStatus = ev.Status
		}
	}
	cancel()

	allocs, _, err := client.Jobs().Allocations(c.ctx, jobID, false, &api.QueryOptions{Namespace: ns})
	if err != nil {
		return c.fail("reading allocations", err)
	}
	for _, a := range allocs {
		if a.EvalID == evalID {
			printPlaced(a.ID, a.NodeID, a.TaskGroup)
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
	if len(ev.FailedTGAllocs) > 0 {
		return exitPlacementFailed
	}
	return 0
}

// exitPlacementFailed is the exit code of a command whose evaluation
// could not place everything, or whose deployment failed, as Nomad's
// CLI: scripts tell it from an error (1).
const exitPlacementFailed = 2

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
	for _, q := range m.QuotaExhausted {
		out = append(out, fmt.Sprintf("Quota limit hit: %s", q))
	}
	return out
}

// stamp is the current time as the monitor prints it.
func (c *cli) stamp() string {
	return c.now().In(c.loc).Format(time.RFC3339)
}

// monitorInterrupted says the user stopped watching: the work goes on
// without us.
func (c *cli) monitorInterrupted(jobID, evalID string, verbose bool) int {
	fmt.Fprintf(c.stderr, "Monitoring interrupted; evaluation %q continues on the servers (see `sched job status %s`)\n", shortID(evalID, verbose), jobID)
	return 1
}

// evalUpdate is one answer of the evaluation watch: the evaluation (nil
// while it is not visible yet) or the error that ended the watch.
type evalUpdate struct {
	eval *state.Evaluation
	err  error
}

// watchEval sends evaluation evalID each time the job's evaluations
// change, until it is terminal, an error ends the watch (sent too), or ctx
// is done. Each send completes before the next query, so what the monitor
// prints follows what the server answered.
func watchEval(ctx context.Context, client *api.Client, jobID, evalID, ns string, out chan<- evalUpdate) {
	var index uint64
	for {
		evals, qm, err := client.Jobs().Evaluations(ctx, jobID, &api.QueryOptions{Namespace: ns, WaitIndex: index})
		u := evalUpdate{err: err}
		if err == nil {
			for _, e := range evals {
				if e.ID == evalID {
					u.eval = e
					break
				}
			}
			// Block until something changes. Index 1 at least, so a
			// server that reports no index cannot turn this into a busy
			// loop.
			index = max(qm.LastIndex, index, 1)
		}
		select {
		case out <- u:
		case <-ctx.Done():
			return
		}
		if err != nil || (u.eval != nil && u.eval.Terminal()) {
			return
		}
	}
}

// watchEvalAllocs sends the allocations evaluation evalID has placed each
// time they change, until ctx is done or a query fails.
func watchEvalAllocs(ctx context.Context, client *api.Client, evalID, ns string, out chan<- []*state.AllocListStub) {
	var index uint64
	for {
		allocs, qm, err := client.Evaluations().Allocations(ctx, evalID,
			&api.QueryOptions{Namespace: ns, WaitIndex: index, Params: map[string]string{"task_states": "false"}})
		if err != nil {
			return
		}
		index = max(qm.LastIndex, index, 1)
		if len(allocs) == 0 {
			continue
		}
		select {
		case out <- allocs:
		case <-ctx.Done():
			return
		}
	}
}

// followDeployment follows the deployment of the job version registered
// at jobModifyIndex until it ends (monitorDeployment). A job whose version
// has no deployment (batch, system, no update strategy) returns 0 at
// once. It returns exitPlacementFailed (2) when the deployment does not
// succeed.
func (c *cli) followDeployment(client *api.Client, jobID, ns string, jobModifyIndex uint64, verbose bool) int {
	d, _, err := client.Jobs().LatestDeployment(c.ctx, jobID, &api.QueryOptions{Namespace: ns})
	if err != nil && api.IsNotFound(err) {
		return 0 // a server without deployments
	}
	if err != nil {
		if c.ctx.Err() != nil {
			fmt.Fprintf(c.stdout, "Deployment following interrupted; the deployment goes on\n")
			return 0
		}
		return c.fail("reading deployment", err)
	}
	if d == nil || d.JobModifyIndex < jobModifyIndex {
		// The evaluation finished without a deployment for this version:
		// there is nothing to follow.
		return 0
	}
	return c.monitorDeployment(client, d, verbose)
}
