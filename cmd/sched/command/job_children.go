package command

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

const jobDispatchHelp = `
Dispatch an instance of the parameterized job with ID (or a unique prefix
of one). The optional second argument is a file whose content is the
payload, or - to read it from standard input (16 KiB at most). Meta keys
are checked against the job's meta_required and meta_optional.`

func (c *jobCLI) jobDispatch(args []string) int {
	fs, m := c.flagSet("job dispatch", "[options] ID [payload file|-]", jobDispatchHelp)
	var metas stringList
	fs.Var(&metas, "meta", "meta `key=value` of the instance (repeatable)")
	var (
		token   = fs.String("idempotency-token", "", "a second dispatch with the same token returns the first instance")
		prefix  = fs.String("id-prefix-template", "", "put `prefix` in the instance's ID")
		detach  = fs.Bool("detach", false, "print the evaluation ID and return without following it")
		asJSON  = fs.Bool("json", false, "print the answer as JSON")
		verbose = fs.Bool("verbose", false, "print full IDs")
	)
	if done, code := parseFlags(fs, args, 1, 2); done {
		return code
	}
	req := &state.DispatchRequest{IdPrefixTemplate: *prefix}
	for _, kv := range metas {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return c.fail("parsing -meta", fmt.Errorf("%q is not key=value", kv))
		}
		if req.Meta == nil {
			req.Meta = map[string]string{}
		}
		req.Meta[k] = v
	}
	if fs.NArg() == 2 {
		payload, err := c.readPayload(fs.Arg(1))
		if err != nil {
			return c.fail("reading payload", err)
		}
		req.Payload = payload
	}
	client, err := m.client()
	if err != nil {
		return c.fail("creating client", err)
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	resp, _, err := client.Jobs().Dispatch(c.ctx, stub.ID, req, *token, nsWrite(stub))
	if err != nil {
		return c.fail("dispatching job", err)
	}
	if *asJSON {
		return c.printJSON(resp)
	}
	fmt.Fprintf(c.stdout, "Dispatched Job ID = %s\n", resp.DispatchedJobID)
	if resp.EvalID == "" {
		// An earlier dispatch with the same idempotency token answered.
		return 0
	}
	fmt.Fprintf(c.stdout, "Evaluation ID     = %s\n", resp.EvalID)
	if *detach {
		return 0
	}
	fmt.Fprintln(c.stdout)
	return c.monitorEval(client, resp.DispatchedJobID, resp.EvalID, stub.Namespace, *verbose)
}

// readPayload reads a dispatch payload from a file, or standard input for
// "-", refusing more than the server would take.
func (c *jobCLI) readPayload(name string) ([]byte, error) {
	var r io.Reader = c.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, state.DispatchPayloadSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > state.DispatchPayloadSize {
		return nil, fmt.Errorf("payload exceeds %d bytes", state.DispatchPayloadSize)
	}
	return data, nil
}

func (c *jobCLI) periodicTable() []entry {
	return []entry{
		{"force", "Launch an instance of a periodic job now", c.jobPeriodicForce, nil},
	}
}

const jobPeriodicForceHelp = `
Launch an instance of the periodic job with ID (or a unique prefix of one)
now, whatever its schedule, and follow the launched instance's evaluation
(-detach to return at once).`

func (c *jobCLI) jobPeriodicForce(args []string) int {
	fs, m := c.flagSet("job periodic force", "[options] ID", jobPeriodicForceHelp)
	var (
		detach  = fs.Bool("detach", false, "print the evaluation ID and return without following it")
		asJSON  = fs.Bool("json", false, "print the answer as JSON")
		verbose = fs.Bool("verbose", false, "print full IDs")
	)
	client, code := c.parseClient(fs, m, args, 1, 1)
	if client == nil {
		return code
	}
	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	resp, _, err := client.Jobs().PeriodicForce(c.ctx, stub.ID, nsWrite(stub))
	if err != nil {
		return c.fail("forcing periodic job", err)
	}
	if *asJSON {
		return c.printJSON(resp)
	}
	fmt.Fprintf(c.stdout, "Evaluation ID = %s\n", resp.EvalID)
	if *detach {
		return 0
	}
	fmt.Fprintln(c.stdout)
	// The evaluation is the launched child's: follow it under the
	// child's ID, which only the evaluation tells.
	ev, _, err := client.Evaluations().Info(c.ctx, resp.EvalID, &api.QueryOptions{Namespace: stub.Namespace})
	if err != nil {
		return c.fail("reading evaluation", err)
	}
	return c.monitorEval(client, ev.JobID, resp.EvalID, stub.Namespace, *verbose)
}
