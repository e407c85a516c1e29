package command

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// writePlacementFailures prints, for a job whose latest evaluation could
// not place everything, why (quota, capacity, constraints), and the
// blocked evaluation that waits to place the rest with why it waits and
// its place in the queue. A server without the job's evaluations endpoint
// (404) prints nothing.
func (c *jobCLI) writePlacementFailures(w io.Writer, client *api.Client, job *state.Job, q *api.QueryOptions, verbose bool) error {
	evals, _, err := client.Jobs().Evaluations(c.ctx, job.ID, q)
	if api.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var failed, blocked *state.Evaluation
	for _, e := range evals {
		if e.Status == state.EvalStatusBlocked && (blocked == nil || e.CreateIndex > blocked.CreateIndex) {
			blocked = e
		}
		if len(e.FailedTGAllocs) > 0 && e.Status != state.EvalStatusBlocked && (failed == nil || e.CreateIndex > failed.CreateIndex) {
			failed = e
		}
	}
	if blocked == nil {
		return nil
	}
	if failed != nil {
		fmt.Fprintln(w, "\nPlacement Failure")
		for _, group := range slices.Sorted(maps.Keys(failed.FailedTGAllocs)) {
			m := failed.FailedTGAllocs[group]
			fmt.Fprintf(w, "Task Group %q (failed to place %d allocation(s)):\n", group, m.CoalescedFailures+1)
			for _, line := range placementFailure(m) {
				fmt.Fprintf(w, "  * %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "\nEvaluation %q is blocked: %s\n", shortID(blocked.ID, verbose), blockedReason(blocked))
	return nil
}

// blockedReason says what a blocked evaluation waits for, and its place
// in the queue when the server gave it.
func blockedReason(e *state.Evaluation) string {
	if e.QueuePosition > 0 && e.WaitReason != "" {
		return fmt.Sprintf("position %d of %d in the queue; %s", e.QueuePosition, e.QueueLength, e.WaitReason)
	}
	if e.QuotaLimitReached != "" {
		return fmt.Sprintf("waiting for the usage of quota %q to fall", e.QuotaLimitReached)
	}
	return "waiting for additional capacity to place the remainder"
}
