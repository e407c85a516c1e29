package command

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/schedhq/sched/http/api"
)

const jobStopHelp = `
Stop the job with ID (or a unique prefix of one): its allocations are
stopped, and the job is kept until garbage collection unless -purge.
A prefix match asks for confirmation unless -yes.`

func (c *jobCLI) jobStop(args []string) int {
	fs, m := c.flagSet("job stop", "[options] ID", jobStopHelp)
	var (
		purge    = fs.Bool("purge", false, "delete the job now instead of leaving it for garbage collection")
		detach   = fs.Bool("detach", false, "print the evaluation ID and return without following it")
		yes      = fs.Bool("yes", false, "do not ask for confirmation")
		noDelay  = fs.Bool("no-shutdown-delay", false, "skip group and task shutdown delays")
		global   = fs.Bool("global", false, "stop a multiregion job in every region")
		verbose  = fs.Bool("verbose", false, "print full IDs")
		evalPrio = fs.Int("eval-priority", 0, "priority of the stop evaluation; 0 uses the job's")
	)
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, exact, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	// Stopping the wrong job is costly: a prefix is confirmed first.
	if !exact && !*yes {
		fmt.Fprintf(c.stdout, "Are you sure you want to stop job %q? [y/N] ", stub.ID)
		answer, _ := bufio.NewReader(c.stdin).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
		default:
			fmt.Fprintln(c.stdout, "\nCancelling job stop")
			return 0
		}
	}

	opts := &api.DeregisterOptions{Global: *global, EvalPriority: *evalPrio, NoShutdownDelay: *noDelay}
	resp, _, err := client.Jobs().Deregister(c.ctx, stub.ID, *purge, opts, nsWrite(stub))
	if err != nil {
		return c.fail("deregistering job", err)
	}
	if resp.EvalID == "" {
		// Periodic and parameterized jobs have no allocations to stop.
		fmt.Fprintf(c.stdout, "Job %q stopped\n", stub.ID)
		return 0
	}
	if *detach {
		fmt.Fprintln(c.stdout, resp.EvalID)
		return 0
	}
	return c.monitorEval(client, stub.ID, resp.EvalID, stub.Namespace, *verbose)
}
