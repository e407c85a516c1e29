package command

import (
	"encoding/json"
	"fmt"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const jobInspectHelp = `
Print the job with ID (or a unique prefix of one) as indented JSON,
{"Job": {...}}: the form "sched job run" accepts back from a .json file.
With -t, the template sees the job itself ('{{.Version}}').`

func (c *jobCLI) jobInspect(args []string) int {
	fs, m := c.flagSet("job inspect", "[options] ID", jobInspectHelp)
	var version optionalUint
	fs.Var(&version, "version", "print version `N` of the job instead of the current one")
	c.outputFlags(fs, "print the job as JSON (the default; there to match the other read commands)")
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}

	var job *state.Job
	if version.set {
		job, err = c.jobVersion(client, stub, version.value)
		if err != nil {
			return c.fail("inspecting job", err)
		}
	} else if job, _, err = client.Jobs().Info(c.ctx, stub.ID, nsQuery(stub)); err != nil {
		return c.fail("inspecting job", err)
	}

	if c.tmpl != "" {
		// -t sees the job itself, as Nomad's `job inspect -t` does.
		return c.printJSON(job)
	}
	out, err := json.MarshalIndent(struct{ Job *state.Job }{job}, "", "    ")
	if err != nil {
		return c.fail("formatting job", err)
	}
	fmt.Fprintln(c.stdout, string(out))
	return 0
}

// jobVersion returns version v of the job, from its retained versions.
func (c *jobCLI) jobVersion(client *api.Client, stub *state.JobListStub, v uint64) (*state.Job, error) {
	resp, _, err := client.Jobs().Versions(c.ctx, stub.ID, false, nsQuery(stub))
	if err != nil {
		return nil, err
	}
	for _, j := range resp.Versions {
		if j.Version == v {
			return j, nil
		}
	}
	return nil, fmt.Errorf("job %q has no version %d (only the most recent versions are kept)", stub.ID, v)
}
