package command

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// nodeCLI holds the commands of `sched node`: status, eligibility and
// drain.
type nodeCLI struct{ *cli }

func (c *nodeCLI) table() []entry {
	return []entry{
		{"status", "List nodes, or show one node", c.nodeStatus, nil},
		{"eligibility", "Make a node eligible or ineligible for new work", c.nodeEligibility, nil},
		{"drain", "Drain a node of its allocations, or stop draining it", c.nodeDrain, nil},
	}
}

// errNodeLookup is a node lookup that already printed why it failed.
var errNodeLookup = fmt.Errorf("node lookup failed")

// resolveNode finds the node the user meant by id, which may be a prefix
// of the ID, as Nomad's commands allow: an exact ID wins; otherwise the
// prefix must match exactly one node. On failure it has printed the
// reason (and, for an ambiguous prefix, the matching nodes).
func (c *nodeCLI) resolveNode(client *api.Client, id string, verbose bool) (*state.NodeListStub, error) {
	id = strings.TrimSpace(id)
	nodes, _, err := client.Nodes().List(c.ctx, &api.QueryOptions{Prefix: id})
	if err != nil {
		c.fail("querying node", err)
		return nil, errNodeLookup
	}
	for _, n := range nodes {
		if n.ID == id {
			return n, nil
		}
	}
	switch len(nodes) {
	case 1:
		return nodes[0], nil
	case 0:
		fmt.Fprintf(c.stderr, "No node(s) with prefix %q found\n", id)
		return nil, errNodeLookup
	}
	fmt.Fprintf(c.stderr, "Prefix matched multiple nodes\n\n")
	writeNodeList(c.stderr, nodes, verbose)
	return nil, errNodeLookup
}

const nodeStatusHelp = `
Without an ID, list the cluster's nodes. With an ID (or a unique prefix
of one), show the node: its fields, drain strategy, allocated resources
and allocations.`

func (c *nodeCLI) nodeStatus(args []string) int {
	fs, m := c.flagSet("node status", "[options] [ID]", nodeStatusHelp)
	verbose := fs.Bool("verbose", false, "print full IDs, attributes and meta")
	self := fs.Bool("self", false, "show the node of the client agent at -address")
	asJSON := c.outputFlags(fs, "print the node list, or the node with its allocations, as JSON")
	client, code := c.parseClient(fs, m, args, 0, 1)
	if client == nil {
		return code
	}
	if *self {
		return c.nodeStatusSelf(client, fs.NArg(), *verbose) // node_self.go
	}
	if fs.NArg() == 0 {
		nodes, _, err := client.Nodes().List(c.ctx, nil)
		if err != nil {
			return c.fail("querying node status", err)
		}
		if *asJSON {
			return c.printJSON(nodes)
		}
		if len(nodes) == 0 {
			fmt.Fprintln(c.stdout, "No nodes registered")
			return 0
		}
		writeNodeList(c.stdout, nodes, *verbose)
		return 0
	}
	stub, err := c.resolveNode(client, fs.Arg(0), *verbose)
	if err != nil {
		return 1
	}
	node, _, err := client.Nodes().Info(c.ctx, stub.ID, nil)
	if err != nil {
		return c.fail("querying node info", err)
	}
	allocs, _, err := client.Nodes().Allocations(c.ctx, node.ID, nil)
	if err != nil {
		return c.fail("querying node allocations", err)
	}
	if *asJSON {
		return c.printJSON(struct {
			Node        *state.Node
			Allocations []*state.Allocation
		}{node, allocs})
	}
	c.writeNode(node, allocs, *verbose)
	return 0
}

// writeNodeList prints the node table.
func writeNodeList(w io.Writer, nodes []*state.NodeListStub, verbose bool) {
	rows := make([][]string, 0, len(nodes))
	for _, n := range nodes {
		rows = append(rows, []string{
			shortID(n.ID, verbose), n.NodePool, n.Datacenter, n.Name, orNone(n.NodeClass),
			strconv.FormatBool(n.Drain), n.SchedulingEligibility, n.Status,
		})
	}
	writeTable(w, []string{"ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"}, rows)
}

// writeNode prints one node's detail.
func (c *nodeCLI) writeNode(n *state.Node, allocs []*state.Allocation, verbose bool) {
	var drivers []string
	for _, name := range slices.Sorted(maps.Keys(n.Drivers)) {
		if d := n.Drivers[name]; d != nil && d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	pairs := []kv{
		{"ID", shortID(n.ID, verbose)},
		{"Name", n.Name},
		{"Node Pool", n.NodePool},
		{"Class", orNone(n.NodeClass)},
		{"DC", n.Datacenter},
		{"Drain", strconv.FormatBool(n.Drain)},
		{"Eligibility", n.SchedulingEligibility},
		{"Status", n.Status},
	}
	if n.StatusDescription != "" {
		pairs = append(pairs, kv{"Status Description", n.StatusDescription})
	}
	pairs = append(pairs, kv{"HTTP Address", orNone(n.HTTPAddr)}, kv{"Drivers", orNone(strings.Join(drivers, ","))})
	writeKV(c.stdout, pairs)

	if ds := n.DrainStrategy; ds != nil {
		fmt.Fprintln(c.stdout, "\nDrain Strategy")
		deadline := "none"
		switch {
		case ds.Deadline < 0:
			deadline = "forced"
		case ds.Deadline > 0:
			deadline = c.formatTime(ds.ForceDeadline)
		}
		writeKV(c.stdout, []kv{
			{"Deadline", deadline},
			{"Started", c.formatTime(ds.StartedAt)},
			{"Ignore System Jobs", strconv.FormatBool(ds.IgnoreSystemJobs)},
		})
	}

	if verbose {
		writeMap(c.stdout, "Attributes", n.Attributes)
		writeMap(c.stdout, "Meta", n.Meta)
	}

	fmt.Fprintln(c.stdout, "\nAllocated Resources")
	cpu, mem, disk := 0, 0, 0
	for _, a := range allocs {
		if a.Terminal() || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			if t != nil {
				cpu += t.CPU
				mem += t.MemoryMB
			}
		}
		disk += a.AllocatedResources.Shared.DiskMB
	}
	capCPU, capMem, capDisk := 0, 0, 0
	if r := n.NodeResources; r != nil {
		capCPU, capMem, capDisk = r.CPU, r.MemoryMB, r.DiskMB
	}
	if r := n.ReservedResources; r != nil {
		capCPU, capMem, capDisk = capCPU-r.CPU, capMem-r.MemoryMB, capDisk-r.DiskMB
	}
	writeTable(c.stdout, []string{"CPU", "Memory", "Disk"}, [][]string{{
		fmt.Sprintf("%d/%d MHz", cpu, capCPU), fmt.Sprintf("%s/%s", mib(mem), mib(capMem)), fmt.Sprintf("%s/%s", mib(disk), mib(capDisk)),
	}})

	fmt.Fprintln(c.stdout)
	stubs := make([]*state.AllocListStub, len(allocs))
	for i, a := range allocs {
		stubs[i] = a.Stub()
	}
	c.writeAllocs(c.stdout, stubs, verbose)
}

// mib prints a size in MiB with the unit a reader expects at that scale.
func mib(n int) string {
	switch {
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d GiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d MiB", n)
}

// writeMap prints a titled, sorted key = value block, or nothing for an
// empty map.
func writeMap(w io.Writer, title string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	pairs := make([]kv, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, kv{k, m[k]})
	}
	writeKV(w, pairs)
}
