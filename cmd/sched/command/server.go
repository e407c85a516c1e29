package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// serverCLI holds the commands of `sched server`.
type serverCLI struct{ *cli }

func (c *serverCLI) table() []entry {
	return []entry{
		{"members", "List the servers of the cluster", c.serverMembers, nil},
		{"join", "Join this agent to other servers", c.serverJoin, nil},
	}
}

// serverMembers prints the servers gossip knows, marking the leader.
func (c *serverCLI) serverMembers(args []string) int {
	fs, m := c.flagSet("server members", "[options]",
		"List the servers the agent knows through gossip, with their status and which one leads.")
	detailed := fs.Bool("detailed", false, "also print each server's tags")
	asJSON := c.outputFlags(fs, "print the members as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	members, err := client.Agent().Members(c.ctx)
	if err != nil {
		return c.fail("reading members", err)
	}
	if *asJSON {
		return c.printJSON(members)
	}
	// Which member leads is a question for raft, not gossip: match the
	// leader's Raft address against each member's.
	leader, err := client.Status().Leader(c.ctx)
	if err != nil {
		return c.fail("reading the leader", err)
	}
	header := []string{"Name", "Address", "Port", "Status", "Leader", "Build", "Datacenter", "Region"}
	if *detailed {
		header = append(header, "Tags")
	}
	rows := make([][]string, 0, len(members.Members))
	for _, mem := range members.Members {
		isLeader := leader != "" && mem.Tags["raft_addr"] == leader
		row := []string{mem.Name, mem.Addr, fmt.Sprint(mem.Port), mem.Status, fmt.Sprint(isLeader),
			mem.Tags["build"], mem.Tags["dc"], mem.Tags["region"]}
		if *detailed {
			var tags []string
			for _, k := range slices.Sorted(maps.Keys(mem.Tags)) {
				tags = append(tags, k+"="+mem.Tags[k])
			}
			row = append(row, strings.Join(tags, ","))
		}
		rows = append(rows, row)
	}
	writeTable(c.stdout, header, rows)
	return 0
}

// serverJoin asks the agent to join the servers at the gossip addresses.
func (c *serverCLI) serverJoin(args []string) int {
	fs, m := c.flagSet("server join", "[options] ADDRESS...",
		"Make the agent join the servers at the gossip addresses (host or host:port; port 4648 by default).")
	client, code := c.parseClient(fs, m, args, 1, 1<<20)
	if client == nil {
		return code
	}
	n, err := client.Agent().Join(c.ctx, fs.Args()...)
	if err != nil {
		return c.fail("joining", err)
	}
	fmt.Fprintf(c.stdout, "Joined %d servers successfully\n", n)
	return 0
}
