package command

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// serviceCLI holds the commands of `sched service`.
type serviceCLI struct{ *cli }

func (c *serviceCLI) table() []entry {
	return []entry{
		{"list", "List the registered services", c.serviceList, nil},
		{"info", "Show the instances of a service", c.serviceInfo, nil},
	}
}

const serviceListHelp = `
List the services registered in the built-in catalog, with the tags of
their instances. -namespace '*' lists every namespace the token may read.`

func (c *serviceCLI) serviceList(args []string) int {
	fs, m := c.flagSet("service list", "[options]", serviceListHelp)
	asJSON := c.outputFlags(fs, "print the services as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	list, _, err := client.Services().List(c.ctx, nil)
	if err != nil {
		return c.fail("listing services", err)
	}
	if *asJSON {
		return c.printJSON(list)
	}
	all := m.namespace == "*"
	var rows [][]string
	for _, ns := range list {
		for _, s := range ns.Services {
			tags := "[" + strings.Join(s.Tags, ",") + "]"
			if all {
				rows = append(rows, []string{s.ServiceName, ns.Namespace, tags})
			} else {
				rows = append(rows, []string{s.ServiceName, tags})
			}
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "No services found")
		return 0
	}
	header := []string{"Service Name", "Tags"}
	if all {
		header = []string{"Service Name", "Namespace", "Tags"}
	}
	writeTable(c.stdout, header, rows)
	return 0
}

const serviceInfoHelp = `
Show the registered instances of the service NAME: the job and
allocation that run each one, its node, address and tags.`

func (c *serviceCLI) serviceInfo(args []string) int {
	fs, m := c.flagSet("service info", "[options] NAME", serviceInfoHelp)
	verbose := fs.Bool("verbose", false, "print full IDs")
	asJSON := c.outputFlags(fs, "print the registrations as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	name := fs.Arg(0)
	regs, _, err := client.Services().Get(c.ctx, name, nil)
	if err != nil {
		return c.fail("reading service", err)
	}
	if *asJSON {
		return c.printJSON(regs)
	}
	if len(regs) == 0 {
		fmt.Fprintf(c.stderr, "No service registrations found for %q\n", name)
		return 1
	}
	rows := make([][]string, 0, len(regs))
	for _, r := range regs {
		rows = append(rows, []string{
			r.JobID, net.JoinHostPort(r.Address, strconv.Itoa(r.Port)), "[" + strings.Join(r.Tags, ",") + "]",
			shortID(r.NodeID, *verbose), shortID(r.AllocID, *verbose),
		})
	}
	writeTable(c.stdout, []string{"Job ID", "Address", "Tags", "Node ID", "Alloc ID"}, rows)
	return 0
}
