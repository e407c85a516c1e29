package command

import (
	"fmt"
	"slices"

	"github.com/schedhq/sched/http/api"
)

// clusterCLI holds the commands about the cluster as a whole rather than
// one object: `sched status` (anything by ID prefix) and `sched
// system gc`.
type clusterCLI struct{ *cli }

const statusHelp = `
Without an argument, list the jobs (as 'sched job status'). With PREFIX,
search jobs, nodes, allocations, evaluations and deployments whose ID
starts with it (of every namespace unless -namespace names one): one
match shows that object's status, several are listed by kind.`

func (c *clusterCLI) status(args []string) int {
	fs, m := c.flagSet("status", "[options] [PREFIX]", statusHelp)
	asJSON := c.outputFlags(fs, "print the search matches as JSON")
	if done, code := parseFlags(fs, args, 0, 1); done {
		return code
	}
	if fs.NArg() == 0 {
		return c.dispatch("sched", append([]string{"job", "status"}, args...), c.table())
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
		return c.dispatch("sched", append([]string{"job", "status"}, rest...), c.table())
	case "nodes":
		return c.dispatch("sched", append([]string{"node", "status"}, rest...), c.table())
	case "allocs":
		return c.dispatch("sched", append([]string{"alloc", "status"}, rest...), c.table())
	case "evals":
		return c.dispatch("sched", append([]string{"eval", "status"}, rest...), c.table())
	default:
		return c.dispatch("sched", append([]string{"deployment", "status"}, rest...), c.table())
	}
}

const systemGCHelp = `
Run garbage collection on the leader now: terminal evaluations and
allocations, dead jobs, down nodes and finished deployments are
collected whatever their age. Needs a management token with ACLs on.`

func (c *clusterCLI) systemTable() []entry {
	return []entry{{"gc", "Run garbage collection now", c.systemGC, nil}}
}

func (c *clusterCLI) systemGC(args []string) int {
	fs, m := c.flagSet("system gc", "[options]", systemGCHelp)
	client, code := c.parseClient(fs, m, args, 0, 0)
	if client == nil {
		return code
	}
	if _, err := client.System().GarbageCollect(c.ctx, nil); err != nil {
		return c.fail("running garbage collection", err)
	}
	fmt.Fprintln(c.stdout, "Garbage collection done")
	return 0
}
