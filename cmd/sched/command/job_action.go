package command

import (
	"fmt"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const jobActionHelp = `
Run ACTION, an action block of task -task in group -group of job -job,
inside a running allocation of that group (-alloc, or the first running
one), printing its output. The exit code is the action's. Without ACTION,
list the job's actions. -t runs it on a terminal.`

func (c *jobCLI) jobAction(args []string) int {
	fs, m := c.flagSet("job action", "[options] -job JOB [-group G -task T] [ACTION]", jobActionHelp)
	jobID := fs.String("job", "", "the job (required)")
	group := fs.String("group", "", "the task group (default: the one that defines ACTION)")
	task := fs.String("task", "", "the task (default: the one that defines ACTION)")
	allocID := fs.String("alloc", "", "the allocation to run in (default: a running one of the group)")
	tty := fs.Bool("t", false, "run the action on a terminal")
	if done, code := parseFlags(fs, args, 0, 1); done {
		return code
	}
	if *jobID == "" {
		fmt.Fprintln(c.stderr, "Error: -job is required")
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	q := &api.QueryOptions{Namespace: m.namespace}
	actions, _, err := client.Jobs().Actions(c.ctx, *jobID, q)
	if err != nil {
		return c.fail("listing actions", err)
	}
	if fs.NArg() == 0 {
		rows := make([][]string, 0, len(actions))
		for _, a := range actions {
			rows = append(rows, []string{a.Name, a.TaskGroupName, a.TaskName, strings.Join(append([]string{a.Command}, a.Args...), " ")})
		}
		writeTable(c.stdout, []string{"Name", "Group", "Task", "Command"}, rows)
		return 0
	}
	name := fs.Arg(0)
	var match []*state.JobAction
	for _, a := range actions {
		if a.Name == name && (*group == "" || a.TaskGroupName == *group) && (*task == "" || a.TaskName == *task) {
			match = append(match, a)
		}
	}
	switch len(match) {
	case 0:
		fmt.Fprintf(c.stderr, "Error: job %q has no action %q (in group %q, task %q)\n", *jobID, name, *group, *task)
		return 1
	case 1:
	default:
		fmt.Fprintf(c.stderr, "Error: action %q is defined by %d tasks: name one with -group and -task\n", name, len(match))
		return 1
	}
	act := match[0]
	alloc := *allocID
	if alloc == "" {
		allocs, _, err := client.Jobs().Allocations(c.ctx, *jobID, false, q)
		if err != nil {
			return c.fail("listing allocations", err)
		}
		for _, a := range allocs {
			if a.TaskGroup == act.TaskGroupName && a.ClientStatus == state.AllocClientStatusRunning && a.DesiredStatus == state.AllocDesiredStatusRun {
				alloc = a.ID
				break
			}
		}
		if alloc == "" {
			fmt.Fprintf(c.stderr, "Error: no running allocation of group %q of job %q\n", act.TaskGroupName, *jobID)
			return 1
		}
	}
	streams := api.ExecStreams{Stdin: strings.NewReader(""), Stdout: c.stdout, Stderr: c.stderr}
	opts := &api.ActionOptions{AllocID: alloc, Task: act.TaskName, Action: name, TTY: *tty, ExecStreams: streams}
	if local, ok := localTerminal(c.stdin); ok && *tty {
		restore, size, resize, err := rawTerminal(c.ctx, local)
		if err != nil {
			return c.fail("setting up the terminal", err)
		}
		defer restore()
		opts.Size, opts.Resize, opts.Stdin = size, resize, c.stdin
	}
	exit, err := client.Jobs().RunAction(c.ctx, *jobID, opts, q)
	if err != nil {
		return c.fail("running action", err)
	}
	return exit
}
