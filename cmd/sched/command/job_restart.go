package command

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const jobRestartHelp = `
Restart the running allocations of the job with ID (or a unique prefix of
one) in batches, as Nomad 1.6's command: -batch-size allocations at a time
(a number, or a percentage of the running allocations, rounded up), with
-batch-wait between batches (a duration, or "ask" to be asked at each).

By default the tasks running in each allocation are restarted in place;
-task restarts only the tasks named (repeatable), -all-tasks every task
of the group, even those that already ran. With -reschedule each
allocation is stopped instead and the command waits until its replacement
runs (no new deployment: the update block's max_parallel does not apply).
-group restricts the restart to the groups named (repeatable).

When a batch fails, -on-error=ask (the default) asks whether to go on,
-on-error=fail stops with exit 1. -yes answers every question with yes:
batch errors are ignored and the batches follow one another with no
question (waiting -batch-wait when it is a duration).

Not implemented: -no-shutdown-delay (the restart API has no such option).`

// restartMaxAllocs bounds how many allocations one `job restart` takes
// on: far more than any job's running count in practice, and a bound on
// what a confused job list could make the command do.
const restartMaxAllocs = 100_000

// restartOpts are the parsed flags of `job restart`.
type restartOpts struct {
	batch      int     // allocations per batch; 0 when batchPct is used
	batchPct   float64 // percentage of the running allocations, (0, 100]
	wait       time.Duration
	waitAsk    bool
	groups     []string
	tasks      []string
	allTasks   bool
	reschedule bool
	onErrorAsk bool
	yes        bool
	verbose    bool
}

// batchSize is how many of n allocations one batch restarts.
func (o *restartOpts) batchSize(n int) int {
	if o.batch > 0 {
		return o.batch
	}
	return max(1, int(math.Ceil(float64(n)*o.batchPct/100)))
}

// parseBatchSize reads -batch-size: N >= 1 or P% with 0 < P <= 100.
func (o *restartOpts) parseBatchSize(v string) error {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || !(f > 0 && f <= 100) {
			return fmt.Errorf("-batch-size %q: a percentage must be above 0%% and at most 100%%", v)
		}
		o.batch, o.batchPct = 0, f
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("-batch-size %q: want a number of allocations (1 or more) or a percentage such as 25%%", v)
	}
	o.batch, o.batchPct = n, 0
	return nil
}

// parseBatchWait reads -batch-wait: a non-negative duration or "ask".
func (o *restartOpts) parseBatchWait(v string) error {
	if v == "ask" {
		o.waitAsk = true
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("-batch-wait %q: want a duration such as 10s, or ask", v)
	}
	o.wait, o.waitAsk = d, false
	return nil
}

func (c *jobCLI) jobRestart(args []string) int {
	fs, m := c.flagSet("job restart", "[options] ID", jobRestartHelp)
	o := &restartOpts{batch: 1}
	var groups, tasks stringList
	batchSize := fs.String("batch-size", "1", "allocations restarted at once: a `number`, or a percentage of the running ones (25%)")
	batchWait := fs.String("batch-wait", "0s", "time to wait between batches: a `duration`, or ask")
	fs.Var(&groups, "group", "restart only the allocations of task group `NAME` (repeatable)")
	fs.Var(&tasks, "task", "restart only task `NAME` (repeatable); not with -all-tasks or -reschedule")
	fs.BoolVar(&o.allTasks, "all-tasks", false, "restart every task, even those that already ran")
	fs.BoolVar(&o.reschedule, "reschedule", false, "stop each allocation and wait for its replacement instead of restarting in place")
	onError := fs.String("on-error", "ask", "what a failed batch does: ask, or fail (exit 1)")
	fs.BoolVar(&o.yes, "yes", false, "answer yes to every question: ignore batch errors and do not ask between batches")
	fs.BoolVar(&o.verbose, "verbose", false, "print full IDs")
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	o.groups, o.tasks = groups, tasks
	if err := c.checkRestartFlags(o, *batchSize, *batchWait, *onError); err != nil {
		fmt.Fprintf(c.stderr, "Error: %v\n", err)
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
	job, _, err := client.Jobs().Info(c.ctx, stub.ID, nsQuery(stub))
	if err != nil {
		return c.fail("retrieving job", err)
	}
	if err := checkRestartTargets(job, o); err != nil {
		fmt.Fprintf(c.stderr, "Error: %v\n", err)
		return 1
	}
	stubs, _, err := client.Jobs().Allocations(c.ctx, job.ID, false, nsQuery(stub))
	if err != nil {
		return c.fail("retrieving allocations", err)
	}
	allocs := restartTargets(stubs, job, o)
	if len(allocs) > restartMaxAllocs {
		fmt.Fprintf(c.stderr, "Error: job %q has %d running allocations; job restart takes at most %d\n", job.ID, len(allocs), restartMaxAllocs)
		return 1
	}
	if len(allocs) == 0 {
		fmt.Fprintf(c.stdout, "No running allocations of job %q to restart\n", job.ID)
		return 0
	}
	return c.restartInBatches(client, job, allocs, o)
}

// checkRestartFlags judges the flags alone, before any request.
func (c *jobCLI) checkRestartFlags(o *restartOpts, batchSize, batchWait, onError string) error {
	var errs []error
	errs = append(errs, o.parseBatchSize(batchSize), o.parseBatchWait(batchWait))
	switch onError {
	case "ask":
		o.onErrorAsk = true
	case "fail":
	default:
		errs = append(errs, fmt.Errorf("-on-error %q: want ask or fail", onError))
	}
	if len(o.tasks) > 0 && o.allTasks {
		errs = append(errs, errors.New("-task and -all-tasks are exclusive"))
	}
	if len(o.tasks) > 0 && o.reschedule {
		errs = append(errs, errors.New("-task and -reschedule are exclusive: a rescheduled allocation restarts every task"))
	}
	if o.allTasks && o.reschedule {
		errs = append(errs, errors.New("-all-tasks and -reschedule are exclusive: a rescheduled allocation restarts every task"))
	}
	return errors.Join(errs...)
}

// checkRestartTargets checks that the groups and tasks named exist in the
// job: each -group a group, each -task a task of at least one of the
// groups restarted.
func checkRestartTargets(job *state.Job, o *restartOpts) error {
	if o.reschedule && job.Type != state.JobTypeService && job.Type != state.JobTypeBatch && job.Type != state.JobTypeSystem {
		return fmt.Errorf("-reschedule: allocations of %s job %q cannot be rescheduled (service, batch and system jobs can)", job.Type, job.ID)
	}
	var errs []error
	for _, g := range o.groups {
		if job.LookupTaskGroup(g) == nil {
			errs = append(errs, fmt.Errorf("-group %q: job %q has no such task group", g, job.ID))
		}
	}
	for _, t := range o.tasks {
		found := false
		for _, tg := range job.TaskGroups {
			if len(o.groups) > 0 && !slices.Contains(o.groups, tg.Name) {
				continue
			}
			found = found || tg.LookupTask(t) != nil
		}
		if !found {
			errs = append(errs, fmt.Errorf("-task %q: no task group restarted has such a task", t))
		}
	}
	return errors.Join(errs...)
}

// restartTargets are the allocations to restart, oldest first: the
// running allocations of the job's groups (those of -group only).
func restartTargets(stubs []*state.AllocListStub, job *state.Job, o *restartOpts) []*state.AllocListStub {
	var out []*state.AllocListStub
	for _, a := range stubs {
		if a.ClientStatus != state.AllocClientStatusRunning || a.DesiredStatus != state.AllocDesiredStatusRun {
			continue
		}
		if len(o.groups) > 0 && !slices.Contains(o.groups, a.TaskGroup) {
			continue
		}
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b *state.AllocListStub) int { return cmp.Compare(a.CreateIndex, b.CreateIndex) })
	return out
}

// restartInBatches restarts allocs batch by batch, asking or waiting
// between batches and on errors as o says.
func (c *jobCLI) restartInBatches(client *api.Client, job *state.Job, allocs []*state.AllocListStub, o *restartOpts) int {
	size := o.batchSize(len(allocs))
	fmt.Fprintf(c.stdout, "==> %s: Restarting %d allocation(s) of job %q, %d at a time\n", c.stamp(), len(allocs), job.ID, size)
	in := bufio.NewReader(c.stdin)
	failed := 0
	for start := 0; start < len(allocs); start += size {
		if start > 0 {
			proceed, code := c.betweenBatches(in, o)
			if !proceed {
				return code
			}
		}
		batch := allocs[start:min(start+size, len(allocs))]
		errs := c.restartBatch(client, job, batch, o)
		if len(errs) == 0 {
			continue
		}
		failed += len(errs)
		for _, err := range errs {
			fmt.Fprintf(c.stderr, "Error: %v\n", err)
		}
		if start+size >= len(allocs) {
			break
		}
		switch {
		case o.yes:
			fmt.Fprintf(c.stdout, "    %s: Ignoring the errors (-yes) and going on\n", c.stamp())
		case !o.onErrorAsk:
			fmt.Fprintf(c.stdout, "==> %s: Job restart stopped after a failed batch (-on-error=fail)\n", c.stamp())
			return 1
		default:
			ok, err := c.ask(in, "==> Restarting the batch failed. Ignore the errors and go on? [y/N]: ")
			if err != nil || !ok {
				fmt.Fprintf(c.stdout, "==> %s: Job restart canceled\n", c.stamp())
				return 1
			}
		}
	}
	if failed > 0 {
		fmt.Fprintf(c.stdout, "==> %s: Finished job restart: %d of %d allocation(s) failed to restart\n", c.stamp(), failed, len(allocs))
		return 1
	}
	fmt.Fprintf(c.stdout, "==> %s: Finished job restart\n\nAll allocations restarted successfully!\n", c.stamp())
	return 0
}

// betweenBatches waits -batch-wait, or asks when it is "ask" (without
// -yes). An answer that is a duration becomes the wait of the remaining
// batches, as in Nomad. It returns false with the exit code when the user
// stops the restart or the command is interrupted.
func (c *jobCLI) betweenBatches(in *bufio.Reader, o *restartOpts) (bool, int) {
	if o.waitAsk && !o.yes {
		for {
			fmt.Fprint(c.stdout, "==> Proceed with the next batch? [Y/n/<duration>]: ")
			line, err := in.ReadString('\n')
			answer := strings.ToLower(strings.TrimSpace(line))
			if err != nil && answer == "" {
				fmt.Fprintf(c.stdout, "\n==> %s: Job restart canceled (no answer)\n", c.stamp())
				return false, 1
			}
			switch answer {
			case "", "y", "yes":
				return true, 0
			case "n", "no":
				fmt.Fprintf(c.stdout, "==> %s: Job restart canceled\n", c.stamp())
				return false, 1
			}
			if d, err := time.ParseDuration(answer); err == nil && d >= 0 {
				o.wait, o.waitAsk = d, false
				break
			}
			fmt.Fprintf(c.stdout, "Answer y, n or a duration such as 10s (got %q)\n", answer)
		}
	}
	if o.wait <= 0 || o.waitAsk {
		return true, 0
	}
	fmt.Fprintf(c.stdout, "==> %s: Waiting %s before restarting the next batch\n", c.stamp(), o.wait)
	t := time.NewTimer(o.wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true, 0
	case <-c.ctx.Done():
		fmt.Fprintf(c.stderr, "Job restart interrupted; the allocations restarted so far stay restarted\n")
		return false, 1
	}
}

// ask prints question and reads a yes or no (no by default).
func (c *jobCLI) ask(in *bufio.Reader, question string) (bool, error) {
	fmt.Fprint(c.stdout, question)
	line, err := in.ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	if err != nil && answer == "" {
		return false, err
	}
	return answer == "y" || answer == "yes", nil
}

// restartBatch restarts (or reschedules) each allocation of batch and
// returns what failed.
func (c *jobCLI) restartBatch(client *api.Client, job *state.Job, batch []*state.AllocListStub, o *restartOpts) []error {
	var errs []error
	for _, a := range batch {
		id := shortID(a.ID, o.verbose)
		w := &api.WriteOptions{Namespace: a.Namespace}
		switch {
		case o.reschedule:
			fmt.Fprintf(c.stdout, "    %s: Rescheduling allocation %q of group %q\n", c.stamp(), id, a.TaskGroup)
			if err := c.rescheduleAlloc(client, a, o.verbose); err != nil {
				errs = append(errs, fmt.Errorf("rescheduling allocation %q: %w", id, err))
			}
		case len(o.tasks) > 0:
			tg := job.LookupTaskGroup(a.TaskGroup)
			for _, t := range o.tasks {
				if tg == nil || tg.LookupTask(t) == nil {
					continue
				}
				fmt.Fprintf(c.stdout, "    %s: Restarting task %q in allocation %q of group %q\n", c.stamp(), t, id, a.TaskGroup)
				if err := client.Allocations().Restart(c.ctx, a.ID, t, false, w); err != nil {
					errs = append(errs, fmt.Errorf("restarting task %q of allocation %q: %w", t, id, err))
				}
			}
		default:
			what := "running tasks"
			if o.allTasks {
				what = "all tasks"
			}
			fmt.Fprintf(c.stdout, "    %s: Restarting %s in allocation %q of group %q\n", c.stamp(), what, id, a.TaskGroup)
			if err := client.Allocations().Restart(c.ctx, a.ID, "", o.allTasks, w); err != nil {
				errs = append(errs, fmt.Errorf("restarting allocation %q: %w", id, err))
			}
		}
	}
	return errs
}

// rescheduleAlloc stops allocation a and waits, by blocking queries, until
// its replacement runs; it fails when the replacement ends before running.
func (c *jobCLI) rescheduleAlloc(client *api.Client, a *state.AllocListStub, verbose bool) error {
	if _, err := client.Allocations().Stop(c.ctx, a.ID, &api.WriteOptions{Namespace: a.Namespace}); err != nil {
		return err
	}
	next, err := c.waitAlloc(client, a.ID, a.Namespace, func(x *state.Allocation) (bool, error) {
		return x.NextAllocation != "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for a replacement: %w", err)
	}
	fmt.Fprintf(c.stdout, "    %s: Allocation %q replaced by %q, waiting for it to run\n", c.stamp(),
		shortID(a.ID, verbose), shortID(next.NextAllocation, verbose))
	_, err = c.waitAlloc(client, next.NextAllocation, a.Namespace, func(x *state.Allocation) (bool, error) {
		switch x.ClientStatus {
		case state.AllocClientStatusRunning:
			return true, nil
		case state.AllocClientStatusComplete, state.AllocClientStatusFailed, state.AllocClientStatusLost:
			return false, fmt.Errorf("replacement %q is %s", shortID(x.ID, verbose), x.ClientStatus)
		}
		return false, nil
	})
	return err
}

// waitAlloc reads allocation id by blocking queries until done says so
// (or fails), or the command is interrupted.
func (c *jobCLI) waitAlloc(client *api.Client, id, ns string, done func(*state.Allocation) (bool, error)) (*state.Allocation, error) {
	var index uint64
	for {
		a, qm, err := client.Allocations().Info(c.ctx, id, &api.QueryOptions{Namespace: ns, WaitIndex: index, WaitTime: 30 * time.Second})
		if err != nil {
			if errors.Is(c.ctx.Err(), context.Canceled) {
				return nil, errors.New("interrupted")
			}
			return nil, err
		}
		ok, err := done(a)
		if err != nil || ok {
			return a, err
		}
		index = max(index, qm.LastIndex, 1)
	}
}
