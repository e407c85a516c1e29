package command

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const allocLogsHelp = `
Print the stdout (or, with -stderr, the stderr) log of a task of the
allocation ID (or a unique prefix of one). TASK may be left out when the
allocation's group has one task. The log is read from the node that runs
the allocation, through the agent at -address; rotated files are read in
order as one log.

With -f, keep printing what the task writes, across rotations, until the
task is dead or the command is interrupted. With -tail, start with the
last -n lines (default 10) instead of the beginning.

With -job, ALLOC is a job ID (or a unique prefix of one) and the log is
that of the job's newest running allocation (its newest allocation when
none runs), as Nomad's -job (which picks one at random).`

// tailBytesPerLine is the guess of a line's length that -tail uses to
// read enough of the log's end for -n lines.
const tailBytesPerLine = 256

func (c *allocCLI) allocLogs(args []string) int {
	fs, m := c.flagSet("alloc logs", "[options] ALLOC [TASK] | -job JOB [TASK]", allocLogsHelp)
	stderr := fs.Bool("stderr", false, "print the task's stderr instead of its stdout")
	follow := fs.Bool("f", false, "follow the log: keep printing as the task writes")
	taskFlag := fs.String("task", "", "the task whose log to print (or give it as the second argument)")
	tail := fs.Bool("tail", false, "start with the last -n lines rather than the beginning")
	nLines := fs.Int("n", 10, "with -tail, how many of the last lines to print (implies -tail)")
	verbose := fs.Bool("verbose", false, "print full IDs when listing ambiguous allocations")
	byJob := fs.Bool("job", false, "the first argument is a job ID (or prefix): print the log of its newest running allocation")
	if done, code := parseFlags(fs, args, 1, 2); done {
		return code
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "n" {
			*tail = true
		}
	})
	if *nLines < 0 {
		fmt.Fprintf(c.stderr, "Error: -n must not be negative, got %d\n", *nLines)
		return 1
	}
	task := *taskFlag
	if fs.NArg() == 2 {
		if task != "" && task != fs.Arg(1) {
			fmt.Fprintf(c.stderr, "Error: -task %q and the TASK argument %q disagree\n", task, fs.Arg(1))
			return 1
		}
		task = fs.Arg(1)
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	var stub *state.AllocListStub
	if *byJob {
		stub, err = c.jobAlloc(client, m, fs.Arg(0), *verbose)
	} else {
		stub, err = c.resolveAlloc(client, m, fs.Arg(0), *verbose)
	}
	if err != nil {
		return 1
	}
	if task == "" {
		a, _, err := client.Allocations().Info(c.ctx, stub.ID, &api.QueryOptions{Namespace: stub.Namespace})
		if err != nil {
			return c.fail("querying allocation", err)
		}
		tasks := groupTasks(a)
		if len(tasks) != 1 {
			fmt.Fprintf(c.stderr, "Allocation %q has %d tasks (%s): name one with -task or as the second argument\n",
				shortID(stub.ID, *verbose), len(tasks), strings.Join(tasks, ", "))
			return 1
		}
		task = tasks[0]
	}

	opts := &api.LogsOptions{Task: task, Type: "stdout", Follow: *follow}
	if *stderr {
		opts.Type = "stderr"
	}
	if *tail {
		opts.FromEnd, opts.Offset = true, int64(max(*nLines, 1)*tailBytesPerLine)
	}
	ls, err := client.AllocFS().Logs(c.ctx, stub.ID, opts, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return c.fail("reading logs", err)
	}
	defer ls.Close()
	if *tail {
		if err := c.printTail(ls, *nLines, opts.Offset); err != nil {
			return c.logsDone(err)
		}
	}
	_, err = io.Copy(c.stdout, ls)
	return c.logsDone(err)
}

// printTail reads the part of the stream that was on disk when it was
// opened (at most window bytes from the end) and prints its last n lines.
func (c *allocCLI) printTail(ls *api.LogStream, n int, window int64) error {
	buf := make([]byte, ls.InitialBytes)
	if _, err := io.ReadFull(ls, buf); err != nil {
		return err
	}
	buf = lastLines(buf, n, ls.InitialBytes >= window)
	_, err := c.stdout.Write(buf)
	return err
}

// lastLines returns the last n lines of b (a final line without a newline
// counts). When cut, b starts mid-log: its first line may be partial and
// is dropped unless more than n lines follow it anyway.
func lastLines(b []byte, n int, cut bool) []byte {
	if n == 0 {
		return nil
	}
	body := bytes.TrimSuffix(b, []byte("\n"))
	starts := []int{0}
	for i, ch := range body {
		if ch == '\n' {
			starts = append(starts, i+1)
		}
	}
	if cut && len(starts) > 0 {
		starts = starts[1:]
		if len(starts) == 0 {
			return nil
		}
	}
	if len(starts) > n {
		starts = starts[len(starts)-n:]
	}
	return b[starts[0]:]
}

// logsDone turns the end of a log stream into an exit code: the command
// being interrupted is a normal end of -f.
func (c *allocCLI) logsDone(err error) int {
	if err == nil || c.ctx.Err() != nil || errors.Is(err, io.EOF) {
		return 0
	}
	return c.fail("reading logs", err)
}

// groupTasks lists the tasks of an allocation's group.
func groupTasks(a *state.Allocation) []string {
	var out []string
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				out = append(out, t.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// errAllocLookup is a lookup that already printed why it failed.
var errAllocLookup = errors.New("allocation lookup failed")

// resolveAlloc finds the allocation the user meant by id, an ID or a
// unique prefix, in the namespace named by -namespace or in every one. On
// failure it has printed why (listing the matches of an ambiguous
// prefix).
func (c *allocCLI) resolveAlloc(client *api.Client, m *meta, id string, verbose bool) (*state.AllocListStub, error) {
	id = strings.TrimSpace(id)
	stubs, _, err := client.Allocations().List(c.ctx, &api.QueryOptions{Namespace: m.lookupNamespace(), Prefix: id,
		Params: map[string]string{"task_states": "false"}})
	if err != nil {
		c.fail("querying allocation", err)
		return nil, errAllocLookup
	}
	for _, s := range stubs {
		if s.ID == id {
			return s, nil
		}
	}
	switch len(stubs) {
	case 1:
		return stubs[0], nil
	case 0:
		fmt.Fprintf(c.stderr, "No allocation(s) with prefix or ID %q found\n", id)
		return nil, errAllocLookup
	}
	fmt.Fprintf(c.stderr, "Prefix matched multiple allocations\n\n")
	rows := make([][]string, 0, len(stubs))
	for _, s := range stubs {
		rows = append(rows, []string{shortID(s.ID, verbose), s.Namespace, s.JobID, s.TaskGroup, s.ClientStatus})
	}
	writeTable(c.stderr, []string{"ID", "Namespace", "Job ID", "Task Group", "Status"}, rows)
	return nil, errAllocLookup
}

// jobAlloc is the allocation `alloc logs -job` reads: the newest running
// allocation of the job id names (a unique prefix will do), or its newest
// allocation when none runs. On failure it has printed why.
func (c *allocCLI) jobAlloc(client *api.Client, m *meta, id string, verbose bool) (*state.AllocListStub, error) {
	stub, _, err := (&jobCLI{c.cli}).resolveJob(client, m, id)
	if err != nil {
		return nil, err
	}
	allocs, _, err := client.Jobs().Allocations(c.ctx, stub.ID, false, nsQuery(stub))
	if err != nil {
		c.fail("retrieving allocations", err)
		return nil, err
	}
	var best *state.AllocListStub
	rank := func(a *state.AllocListStub) int {
		if a.ClientStatus == state.AllocClientStatusRunning {
			return 1
		}
		return 0
	}
	for _, a := range allocs {
		if best == nil || rank(a) > rank(best) || (rank(a) == rank(best) && a.CreateIndex > best.CreateIndex) {
			best = a
		}
	}
	if best == nil {
		fmt.Fprintf(c.stderr, "Job %q has no allocations\n", stub.ID)
		return nil, errJobLookup
	}
	return best, nil
}
