package command

import (
	"flag"
	"fmt"
	"maps"
	"slices"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// namespaceCLI holds the commands of `sched namespace`.
type namespaceCLI struct{ *cli }

func (c *namespaceCLI) table() []entry {
	return []entry{
		{"list", "List namespaces", c.namespaceList, nil},
		{"status", "Show one namespace", c.namespaceStatus, nil},
		{"apply", "Create or update a namespace", c.namespaceApply, nil},
		{"delete", "Delete a namespace", c.namespaceDelete, nil},
	}
}

func (c *namespaceCLI) namespaceList(args []string) int {
	fs, m := c.flagSet("namespace list", "[options]", "List the namespaces the token may see.")
	asJSON := c.outputFlags(fs, "print the namespaces as JSON")
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	list, _, err := client.Namespaces().List(c.ctx, nil)
	if err != nil {
		return c.fail("retrieving namespaces", err)
	}
	if *asJSON {
		return c.printJSON(list)
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stdout, "No namespaces found")
		return 0
	}
	rows := make([][]string, 0, len(list))
	for _, ns := range list {
		rows = append(rows, []string{ns.Name, ns.Description})
	}
	writeTable(c.stdout, []string{"Name", "Description"}, rows)
	return 0
}

func (c *namespaceCLI) namespaceStatus(args []string) int {
	fs, m := c.flagSet("namespace status", "[options] NAME", "Show the namespace NAME.")
	asJSON := c.outputFlags(fs, "print the namespace as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	ns, _, err := client.Namespaces().Info(c.ctx, fs.Arg(0), nil)
	if err != nil {
		return c.fail("retrieving namespace", err)
	}
	if *asJSON {
		return c.printJSON(ns)
	}
	writeKV(c.stdout, []kv{
		{"Name", ns.Name},
		{"Description", orNone(ns.Description)},
		{"Quota", orNone(ns.Quota)},
	})
	if len(ns.Meta) > 0 {
		fmt.Fprintln(c.stdout, "\nMetadata")
		pairs := make([]kv, 0, len(ns.Meta))
		for _, k := range slices.Sorted(maps.Keys(ns.Meta)) {
			pairs = append(pairs, kv{k, ns.Meta[k]})
		}
		writeKV(c.stdout, pairs)
	}
	return 0
}

func (c *namespaceCLI) namespaceApply(args []string) int {
	fs, m := c.flagSet("namespace apply", "[options] NAME",
		"Create the namespace NAME, or update it when it exists. Fields not given keep their current value.")
	description := fs.String("description", "", "a human-readable description")
	quota := fs.String("quota", "", "the quota the namespace's allocations count against (\"\" for none)")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	name := fs.Arg(0)
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })

	// Start from the current namespace so an update changes only what
	// was asked for.
	ns, _, err := client.Namespaces().Info(c.ctx, name, nil)
	switch {
	case api.IsNotFound(err):
		ns = &state.Namespace{Name: name}
	case err != nil:
		return c.fail("looking up namespace", err)
	}
	if given["description"] {
		ns.Description = *description
	}
	if given["quota"] {
		ns.Quota = *quota
	}
	if _, err := client.Namespaces().Register(c.ctx, ns, nil); err != nil {
		return c.fail("applying namespace specification", err)
	}
	fmt.Fprintf(c.stdout, "Successfully applied namespace %q!\n", name)
	return 0
}

func (c *namespaceCLI) namespaceDelete(args []string) int {
	fs, m := c.flagSet("namespace delete", "[options] NAME", "Delete the namespace NAME. It must hold no jobs.")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	if _, err := client.Namespaces().Delete(c.ctx, fs.Arg(0), nil); err != nil {
		return c.fail("deleting namespace", err)
	}
	fmt.Fprintf(c.stdout, "Successfully deleted namespace %q!\n", fs.Arg(0))
	return 0
}
