package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/schedhq/sched/http/api"
)

func (c *cli) eventCommands() []command {
	return []command{
		{"stream", "Stream the cluster's events (jobs, evaluations, allocations, deployments, nodes, services)", c.eventStream, nil},
	}
}

const eventStreamHelp = `
Print the cluster's events as they are applied, one JSON object per line
({"Index":N,"Events":[...]}), until interrupted. -topic selects what to
follow (repeatable): Job, Evaluation, Allocation, Deployment, Node or
Service, optionally with :KEY (a job ID, an allocation ID, a node ID, a
service name, ... or *), e.g. -topic Job:web -topic Allocation:*. Without
-topic, every topic. -index N starts at index N while the server still
keeps it (resuming after the last index seen: N = that index + 1).
-namespace '*' follows every namespace.`

func (c *cli) eventStream(args []string) int {
	fs, m := c.flagSet("event stream", "[options]", eventStreamHelp)
	var topics stringList
	fs.Var(&topics, "topic", "`TOPIC[:KEY]` to follow (repeatable); default: every topic")
	index := fs.Uint64("index", 0, "start at this index (0: from now on)")
	heartbeats := fs.Bool("heartbeats", false, "also print the server's {} heartbeats")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	body, err := client.EventStream(c.ctx, topics, *index, nil)
	if err != nil {
		return c.fail("opening the event stream", err)
	}
	defer body.Close()
	return c.copyLines(body, func(line string) bool { return *heartbeats || line != "{}" }, "reading the event stream")
}

const monitorHelp = `
Stream the log of the agent at -address (a server's raft, gossip, scheduler
and HTTP lines, in one format) until interrupted. -log-level sets the
lowest level shown (trace, debug, info, warn, error; default info); -json
prints each line as a JSON object. -node-id follows the agent of that
client node instead, -server-id (name or ID) another server: the agent at
-address passes the stream on.`

func (c *cli) monitorCommand(args []string) int {
	fs, m := c.flagSet("monitor", "[options]", monitorHelp)
	level := fs.String("log-level", "info", "lowest level to show: trace, debug, info, warn or error")
	asJSON := fs.Bool("json", false, "print JSON log lines")
	nodeID := fs.String("node-id", "", "follow the agent of this client node")
	serverID := fs.String("server-id", "", "follow this server (name or ID)")
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	if *nodeID != "" && *serverID != "" {
		fmt.Fprintln(c.stderr, "Error: -node-id and -server-id cannot be combined")
		return 1
	}
	switch *level {
	case "trace", "debug", "info", "warn", "error":
	default:
		fmt.Fprintf(c.stderr, "Error: -log-level %q is not one of trace, debug, info, warn, error\n", *level)
		return 1
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	body, err := client.MonitorAgent(c.ctx, api.MonitorRequest{LogLevel: *level, JSON: *asJSON, NodeID: *nodeID, ServerID: *serverID}, nil)
	if err != nil {
		return c.fail("opening the agent's log stream", err)
	}
	defer body.Close()
	return c.copyLines(body, func(string) bool { return true }, "reading the agent's log")
}

// copyLines prints the lines of r that keep accepts until r ends or the
// command is interrupted (exit 0 either way); a broken stream is exit 1.
func (c *cli) copyLines(r io.Reader, keep func(string) bool, doing string) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || !keep(line) {
			continue
		}
		fmt.Fprintln(c.stdout, line)
	}
	if err := sc.Err(); err != nil && c.ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		return c.fail(doing, err)
	}
	return 0
}

const statusHelp = `
Without an argument, list the jobs (as 'sched job status'). With PREFIX,
search jobs, nodes, allocations, evaluations and deployments whose ID
starts with it (of every namespace unless -namespace names one): one
match shows that object's status, several are listed by kind.`

func (c *cli) statusCommand(args []string) int {
	fs, m := c.flagSet("status", "[options] [PREFIX]", statusHelp)
	asJSON := c.outputFlags(fs, "print the search matches as JSON")
	if done, code := parseFlags(fs, args, 0, 1); done {
		return code
	}
	if fs.NArg() == 0 {
		return c.dispatch("sched", append([]string{"job", "status"}, args...), c.commands())
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	prefix := fs.Arg(0)
	res, err := client.Search(c.ctx, prefix, "all", &api.QueryOptions{Namespace: m.lookupNamespace()})
	if err != nil {
		return c.fail("searching", err)
	}
	if *asJSON {
		return c.printJSON(res)
	}
	type match struct{ kind, id string }
	var all []match
	for _, kind := range []string{"jobs", "nodes", "allocs", "evals", "deployments"} {
		for _, id := range res.Matches[kind] {
			all = append(all, match{kind, id})
		}
	}
	if len(all) == 0 {
		fmt.Fprintf(c.stderr, "No matches for %q\n", prefix)
		return 1
	}
	if len(all) > 1 {
		fmt.Fprintf(c.stdout, "Prefix %q matched several objects:\n\n", prefix)
		rows := make([][]string, 0, len(all))
		for _, mt := range all {
			rows = append(rows, []string{mt.kind, mt.id})
		}
		writeTable(c.stdout, []string{"Kind", "ID"}, rows)
		return 0
	}
	// The shared flags as given, then the one match.
	rest := append(slices.Clone(args[:len(args)-1]), all[0].id)
	switch all[0].kind {
	case "jobs":
		return c.dispatch("sched", append([]string{"job", "status"}, rest...), c.commands())
	case "nodes":
		return c.dispatch("sched", append([]string{"node", "status"}, rest...), c.commands())
	case "allocs":
		return c.dispatch("sched", append([]string{"alloc", "status"}, rest...), c.commands())
	case "evals":
		return c.dispatch("sched", append([]string{"eval", "status"}, rest...), c.commands())
	default:
		return c.dispatch("sched", append([]string{"deployment", "status"}, rest...), c.commands())
	}
}

const systemGCHelp = `
Run garbage collection on the leader now: terminal evaluations and
allocations, dead jobs, down nodes and finished deployments are
collected whatever their age. Needs a management token with ACLs on.`

func (c *cli) systemCommands() []command {
	return []command{{"gc", "Run garbage collection now", c.systemGC, nil}}
}

func (c *cli) systemGC(args []string) int {
	fs, m := c.flagSet("system gc", "[options]", systemGCHelp)
	if done, code := parseFlags(fs, args, 0, 0); done {
		return code
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	if _, err := client.System().GarbageCollect(c.ctx, nil); err != nil {
		return c.fail("running garbage collection", err)
	}
	fmt.Fprintln(c.stdout, "Garbage collection done")
	return 0
}
