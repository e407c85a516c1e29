package command

import (
	"bufio"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/schedhq/sched/state"
)

const nodeEligibilityHelp = `
Make the node ID (or a unique prefix of one) eligible (-enable) or
ineligible (-disable) for new placements. Allocations already on the node
keep running either way. A draining node cannot be made eligible: stop
the drain instead.`

func (c *nodeCLI) nodeEligibility(args []string) int {
	fs, m := c.flagSet("node eligibility", "-enable|-disable [options] ID", nodeEligibilityHelp)
	enable := fs.Bool("enable", false, "make the node eligible for new placements")
	disable := fs.Bool("disable", false, "make the node ineligible for new placements")
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	if *enable == *disable {
		fmt.Fprintln(c.stderr, "Exactly one of -enable and -disable is required")
		fs.Usage()
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, err := c.resolveNode(client, fs.Arg(0), false)
	if err != nil {
		return 1
	}
	if _, _, err := client.Nodes().ToggleEligibility(c.ctx, stub.ID, *enable, nil); err != nil {
		return c.fail("updating scheduling eligibility", err)
	}
	setting := "ineligible"
	if *enable {
		setting = "eligible"
	}
	fmt.Fprintf(c.stdout, "Node %q scheduling eligibility set: %s for scheduling\n", stub.ID, setting)
	return 0
}

const nodeDrainHelp = `
Drain the node ID (or a unique prefix of one) with -enable: it becomes
ineligible for new placements and the leader migrates its allocations as
each group's migrate block allows, and stops what is left at the deadline
(-deadline, 1h by default; -no-deadline waits for ever; -force stops
everything now). System jobs' allocations are stopped last, or kept with
-ignore-system. -disable stops draining; the node becomes eligible again
unless -keep-ineligible.

With -enable the command then follows the drain, printing each
allocation's migration, until the leader reports it complete and the
drained allocations have stopped; Ctrl-C stops following without
cancelling the drain. It exits 1 if the drain is cancelled meanwhile.
-detach returns as soon as the change is recorded. -monitor changes
nothing and follows the node's current drain.`

func (c *nodeCLI) nodeDrain(args []string) int {
	fs, m := c.flagSet("node drain", "-enable|-disable|-monitor [options] ID", nodeDrainHelp)
	var (
		enable         = fs.Bool("enable", false, "start draining the node, then follow the drain")
		disable        = fs.Bool("disable", false, "stop draining the node")
		monitor        = fs.Bool("monitor", false, "follow the node's current drain without changing it")
		detach         = fs.Bool("detach", false, "with -enable, return once the drain is recorded")
		deadline       = fs.Duration("deadline", time.Hour, "stop what is left on the node after `DURATION`")
		noDeadline     = fs.Bool("no-deadline", false, "never force the drain: wait for every allocation to migrate")
		force          = fs.Bool("force", false, "stop every allocation now")
		ignoreSystem   = fs.Bool("ignore-system", false, "leave system jobs' allocations running")
		keepIneligible = fs.Bool("keep-ineligible", false, "with -disable, leave the node ineligible")
		yes            = fs.Bool("yes", false, "do not ask for confirmation")
		verbose        = fs.Bool("verbose", false, "print full allocation IDs")
	)
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	usage := func(msg string) int {
		fmt.Fprintln(c.stderr, msg)
		fs.Usage()
		return 1
	}
	switch {
	case *monitor && (set["enable"] || set["disable"] || set["detach"] || set["deadline"] || set["no-deadline"] ||
		set["force"] || set["ignore-system"] || set["keep-ineligible"]):
		return usage("-monitor cannot be combined with -enable, -disable, -detach, -deadline, -no-deadline, -force, -ignore-system or -keep-ineligible")
	case !*monitor && *enable == *disable:
		return usage("Exactly one of -enable, -disable and -monitor is required")
	case *force && *noDeadline:
		return usage("-force and -no-deadline cannot be combined")
	case *deadline <= 0:
		return usage("-deadline must be positive; use -force to drain now or -no-deadline for none")
	case *disable && (*force || *noDeadline || *ignoreSystem || set["deadline"]):
		return usage("-deadline, -force, -no-deadline and -ignore-system apply only with -enable")
	case *enable && *keepIneligible:
		return usage("-keep-ineligible applies only with -disable")
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, err := c.resolveNode(client, fs.Arg(0), false)
	if err != nil {
		return 1
	}
	if *monitor {
		node, qm, err := client.Nodes().Info(c.ctx, stub.ID, nil)
		if err != nil {
			return c.fail("reading node", err)
		}
		if node.DrainStrategy == nil {
			fmt.Fprintf(c.stdout, "No drain strategy set for node %q\n", node.ID)
			return 0
		}
		fmt.Fprintf(c.stdout, "%s: Ctrl-C to stop monitoring: will not cancel the node drain\n", c.stamp())
		return c.monitorDrain(client, node.ID, node, qm.LastIndex, node.DrainStrategy.IgnoreSystemJobs, *verbose)
	}
	if !*yes {
		verb := "enable"
		if *disable {
			verb = "disable"
		}
		fmt.Fprintf(c.stdout, "Are you sure you want to %s drain mode for node %q? [y/N] ", verb, stub.ID)
		answer, _ := bufio.NewReader(c.stdin).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
		default:
			fmt.Fprintln(c.stdout, "\nCancelling drain strategy change")
			return 0
		}
	}
	if *disable {
		if _, _, err := client.Nodes().UpdateDrain(c.ctx, stub.ID, nil, !*keepIneligible, nil); err != nil {
			return c.fail("updating drain specification", err)
		}
		fmt.Fprintf(c.stdout, "Node %q drain strategy unset\n", stub.ID)
		return 0
	}
	spec := &state.DrainSpec{Deadline: *deadline, IgnoreSystemJobs: *ignoreSystem}
	switch {
	case *force:
		spec.Deadline = -1
	case *noDeadline:
		spec.Deadline = 0
	}
	if *detach {
		if _, _, err := client.Nodes().UpdateDrain(c.ctx, stub.ID, spec, false, nil); err != nil {
			return c.fail("updating drain specification", err)
		}
		fmt.Fprintf(c.stdout, "Node %q drain strategy set\n", stub.ID)
		return 0
	}
	fmt.Fprintf(c.stdout, "%s: Ctrl-C to stop monitoring: will not cancel the node drain\n", c.stamp())
	if _, _, err := client.Nodes().UpdateDrain(c.ctx, stub.ID, spec, false, nil); err != nil {
		return c.fail("updating drain specification", err)
	}
	fmt.Fprintf(c.stdout, "%s: Node %q drain strategy set\n", c.stamp(), stub.ID)
	// The node read that starts the monitor is a consistent one, so it
	// sees the drain just written (or its end, if it was over at once).
	return c.monitorDrain(client, stub.ID, nil, 0, *ignoreSystem, *verbose)
}
