package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/schedhq/sched/http/api"
)

// streamCLI holds the commands that print a stream of lines until
// interrupted: `sched event stream` and `sched monitor` (an agent's log).
type streamCLI struct{ *cli }

func (c *streamCLI) eventTable() []entry {
	return []entry{
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

func (c *streamCLI) eventStream(args []string) int {
	fs, m := c.flagSet("event stream", "[options]", eventStreamHelp)
	var topics stringList
	fs.Var(&topics, "topic", "`TOPIC[:KEY]` to follow (repeatable); default: every topic")
	index := fs.Uint64("index", 0, "start at this index (0: from now on)")
	heartbeats := fs.Bool("heartbeats", false, "also print the server's {} heartbeats")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
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

func (c *streamCLI) agentMonitor(args []string) int {
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
func (c *streamCLI) copyLines(r io.Reader, keep func(string) bool, doing string) int {
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
