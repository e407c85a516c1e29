package command

import (
	"fmt"
	"strconv"

	"github.com/schedhq/sched/state"
)

const jobHistoryHelp = `
List the retained versions of the job with ID (or a unique prefix of one),
newest first. With -p, print what changed from the previous version.`

func (c *jobCLI) jobHistory(args []string) int {
	fs, m := c.flagSet("job history", "[options] ID", jobHistoryHelp)
	diffs := fs.Bool("p", false, "print the difference of each version from the one before")
	var version optionalUint
	fs.Var(&version, "version", "print only version `N`")
	asJSON := c.outputFlags(fs, "print the versions (and diffs with -p) as JSON")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	resp, _, err := client.Jobs().Versions(c.ctx, stub.ID, *diffs, nsQuery(stub))
	if err != nil {
		return c.fail("retrieving job versions", err)
	}
	if *asJSON && !version.set {
		return c.printJSON(resp)
	}

	printed := 0
	for i, j := range resp.Versions {
		if version.set && j.Version != version.value {
			continue
		}
		if printed > 0 {
			fmt.Fprintln(c.stdout)
		}
		printed++
		if *asJSON {
			return c.printJSON(j)
		}
		pairs := []kv{
			{"Version", strconv.FormatUint(j.Version, 10)},
			{"Stable", strconv.FormatBool(j.Stable)},
			{"Submit Date", c.formatTime(j.SubmitTime)},
		}
		var d *state.JobDiff
		if *diffs && i < len(resp.Diffs) {
			d = resp.Diffs[i]
			pairs = append(pairs, kv{"Diff", ""})
		}
		writeKV(c.stdout, pairs)
		if d != nil {
			writeJobDiff(c.stdout, d)
		}
	}
	if printed == 0 {
		if version.set {
			fmt.Fprintf(c.stderr, "Error: job %q has no version %d (only the most recent versions are kept)\n", stub.ID, version.value)
		} else {
			fmt.Fprintf(c.stderr, "Error: job %q has no versions\n", stub.ID)
		}
		return 1
	}
	return 0
}
