package command

import (
	"fmt"

	"github.com/schedhq/sched/http/api"
)

// nodeStatusSelf shows the node of the client agent the CLI talks to
// (`sched node status -self`): the agent names it in /v1/agent/self under
// stats.client.node_id, as Nomad's agents do.
func (c *nodeCLI) nodeStatusSelf(client *api.Client, nargs int, verbose bool) int {
	if nargs != 0 {
		fmt.Fprintln(c.stderr, "Error: -self takes no node ID")
		return 1
	}
	self, err := client.Agent().Self(c.ctx)
	if err != nil {
		return c.fail("querying agent info", err)
	}
	id := self.Stats["client"]["node_id"]
	if id == "" {
		fmt.Fprintf(c.stderr, "Error: the agent at %s runs no client (no stats.client.node_id in /v1/agent/self)\n", client.Address())
		return 1
	}
	node, _, err := client.Nodes().Info(c.ctx, id, nil)
	if err != nil {
		return c.fail("querying node info", err)
	}
	allocs, _, err := client.Nodes().Allocations(c.ctx, node.ID, nil)
	if err != nil {
		return c.fail("querying node allocations", err)
	}
	c.writeNode(node, allocs, verbose)
	return 0
}
