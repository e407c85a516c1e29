// Package command is every subcommand of the sched CLI but `sched agent`:
// clients of a cluster's HTTP APIs (through packages http/api and
// http/api/mgmt), modelled on Nomad's CLI so that its users feel at home.
// It links no store and no Raft; the binary's main package hands it the
// agent runner.
//
// The commands are grouped by noun: each noun's commands are methods of
// one small type (jobCLI in job*.go, allocCLI in alloc*.go, nodeCLI,
// deploymentCLI, aclCLI, operatorCLI, adminCLI, ...) that embeds cli, the
// base every command shares: the process's streams, environment and
// clock, the shared flags (meta.go: address, token, namespace, TLS) and the
// client they make (parseClient), the output format (output.go, format.go)
// and the evaluation and deployment monitors (monitor.go). Everything a
// command reads from the outside world comes through cli, so tests run
// commands in-process against a fake server and compare their output.
// table (cli.go) is the tree of every command, bound to one invocation.
package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Run executes the sched command line args with the process environment
// and returns the exit code. agent runs `sched agent` (the agent package
// is linked only by the binary's main package).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, agent func(ctx context.Context, args []string, stdout, stderr io.Writer) int) int {
	c := &cli{
		ctx:    ctx,
		stdin:  os.Stdin,
		stdout: stdout,
		stderr: stderr,
		getenv: os.Getenv,
		now:    time.Now,
		loc:    time.Local,
		agent:  agent,
	}
	return c.run(args)
}

// cli is one invocation of the sched command, and the base each noun's
// commands embed. Everything a command reads from the outside world comes
// through it.
type cli struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
	// loc is the time zone dates are printed in.
	loc *time.Location
	// tmpl is the -t template of a read command ("": none; output.go).
	tmpl string
	// agent runs `sched agent`; a field so tests need no real agent.
	agent func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// entry is one word of the command tree: its name, a one-line synopsis
// for the usage text, and either what it does with the words after its
// name (run) or the commands under it (subs, for a group such as `job`).
type entry struct {
	name     string
	synopsis string
	run      func(args []string) int
	subs     []entry
}

// table is the tree of every command, each bound to this invocation.
func (c *cli) table() []entry {
	return []entry{
		{"acl", "Interact with ACL tokens and policies", nil, (&aclCLI{c}).table()},
		{"admin", "Administer the installation's organizations, workspaces and versions", nil, (&adminCLI{c}).table()},
		{"agent", "Run a sched agent (server or client)", c.runAgent, nil},
		{"alloc", "Interact with allocations", nil, (&allocCLI{c}).table()},
		{"completion", "Install shell completion of sched's commands", nil, (&completionCLI{c}).table()},
		{"deployment", "Interact with deployments", nil, (&deploymentCLI{c}).table()},
		{"eval", "Interact with evaluations", nil, (&evalCLI{c}).table()},
		{"event", "Stream the cluster's events", nil, (&streamCLI{c}).eventTable()},
		{"job", "Interact with jobs", nil, (&jobCLI{c}).table()},
		{"monitor", "Stream an agent's logs", (&streamCLI{c}).agentMonitor, nil},
		{"namespace", "Interact with namespaces", nil, (&namespaceCLI{c}).table()},
		{"quota", "Interact with namespace quotas", nil, (&quotaCLI{c}).table()},
		{"node", "Interact with nodes", nil, (&nodeCLI{c}).table()},
		{"operator", "Operate the cluster: Raft peers, snapshots, gossip keys, security check", nil, (&operatorCLI{c}).table()},
		{"org", "Interact with organizations", nil, (&orgCLI{c}).table()},
		{"project", "Interact with projects", nil, (&projectCLI{c}).table()},
		{"server", "Interact with servers: members and join", nil, (&serverCLI{c}).table()},
		{"service", "Interact with the registered services", nil, (&serviceCLI{c}).table()},
		{"status", "Find jobs, nodes, allocations, evaluations and deployments by ID prefix", (&clusterCLI{c}).status, nil},
		{"system", "Run cluster maintenance: garbage collection", nil, (&clusterCLI{c}).systemTable()},
		{"tls", "Create a CA and certificates for TLS", nil, (&tlsCLI{c}).table()},
		{"tfe-worker", "Run a Terraform run's plan or apply (the task of its job; docs/terraform.md)", c.tfeWorker, nil},
		{"version", "Print the sched version", c.printVersion, nil},
	}
}

// run dispatches args to the top-level command they name.
func (c *cli) run(args []string) int {
	if line := c.getenv("COMP_LINE"); line != "" {
		// The shell asks for completions (completion.go).
		point, err := strconv.Atoi(c.getenv("COMP_POINT"))
		if err != nil {
			point = len(line)
		}
		return c.complete(line, point)
	}
	if len(args) == 0 {
		c.usage(c.stderr, "sched", "", c.table())
		return 1
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// `sched help job [run]`: the usage of that command.
			return c.dispatch("sched", append(append([]string{}, args[1:]...), "-h"), c.table())
		}
		c.usage(c.stdout, "sched", "", c.table())
		return 0
	case "-v", "-version", "--version":
		return c.printVersion(nil)
	}
	return c.dispatch("sched", args, c.table())
}

// dispatch runs the command of cmds named by args[0], or prints usage.
func (c *cli) dispatch(prefix string, args []string, cmds []entry) int {
	if len(args) == 0 {
		c.usage(c.stderr, prefix, "", cmds)
		return 1
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		c.usage(c.stdout, prefix, "", cmds)
		return 0
	}
	for _, cmd := range cmds {
		if cmd.name != args[0] {
			continue
		}
		if cmd.subs != nil {
			return c.dispatch(prefix+" "+cmd.name, args[1:], cmd.subs)
		}
		return cmd.run(args[1:])
	}
	c.usage(c.stderr, prefix, fmt.Sprintf("unknown command %q", args[0]), cmds)
	return 1
}

// usage lists cmds under prefix, after problem when there is one.
func (c *cli) usage(w io.Writer, prefix, problem string, cmds []entry) {
	if problem != "" {
		fmt.Fprintf(w, "Error: %s\n\n", problem)
	}
	fmt.Fprintf(w, "Usage: %s <command> [args]\n\nCommands:\n", prefix)
	tw := newTable(w)
	for _, cmd := range cmds {
		fmt.Fprintf(tw, "    %s\t%s\n", cmd.name, cmd.synopsis)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun '%s <command> -h' for the options of a command.\n", prefix)
}

// runAgent hands `sched agent` to the agent runner the binary wired.
func (c *cli) runAgent(args []string) int {
	return c.agent(c.ctx, args, c.stdout, c.stderr)
}
