package command

import (
	"fmt"
	"strings"

	"github.com/schedhq/sched/http/api"
)

const jobValidateHelp = `
Check the job in FILE (HCL, or JSON when named *.json or given -json; "-"
reads standard input) as the server would on register, without registering
it. Exits 1 and lists every problem when the job is not valid.`

func (c *cli) jobValidate(args []string) int {
	fs, m := c.flagSet("job validate", "[options] FILE", jobValidateHelp)
	var files jobFileFlags
	files.register(fs)
	if done, code := parseFlags(fs, args, 1, 1); done {
		return code
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	job, _, err := c.readJob(client, fs.Arg(0), &files)
	if err != nil {
		return c.fail("getting job struct", err)
	}
	resp, err := client.Jobs().Validate(c.ctx, job, &api.WriteOptions{Namespace: job.Namespace})
	if err != nil {
		return c.fail("validating job", err)
	}
	if len(resp.ValidationErrors) > 0 || resp.Error != "" {
		fmt.Fprintln(c.stderr, "Job validation errors:")
		if len(resp.ValidationErrors) == 0 {
			resp.ValidationErrors = []string{resp.Error}
		}
		for _, e := range resp.ValidationErrors {
			fmt.Fprintf(c.stderr, "  * %s\n", e)
		}
		return 1
	}
	if resp.Warnings != "" {
		fmt.Fprintf(c.stdout, "Job Warnings:\n%s\n\n", strings.TrimSpace(resp.Warnings))
	}
	fmt.Fprintln(c.stdout, "Job validation successful")
	return 0
}
