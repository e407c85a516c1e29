package command

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// evalCLI holds the commands of `sched eval`.
type evalCLI struct{ *cli }

func (c *evalCLI) table() []entry {
	return []entry{
		{"status", "List evaluations, or show one", c.evalStatus, nil},
	}
}

// lookupNamespace is the namespace a lookup by ID prefix searches: the
// one the user named, or every namespace, since an evaluation or
// allocation ID says nothing of its namespace.
func (m *meta) lookupNamespace() string {
	if m.namespace == "" {
		return "*"
	}
	return m.namespace
}

const evalStatusHelp = `
Without an ID, list the evaluations (of every namespace unless -namespace
names one). With an ID (or a unique prefix of one), show the evaluation:
its fields, the placements it could not make and why, and the
allocations it placed.`

func (c *evalCLI) evalStatus(args []string) int {
	fs, m := c.flagSet("eval status", "[options] [ID]", evalStatusHelp)
	verbose := fs.Bool("verbose", false, "print full IDs")
	job := fs.String("job", "", "list only the evaluations of job `ID`")
	status := fs.String("status", "", "list only evaluations with `STATUS` (pending, blocked, complete, failed, canceled)")
	asJSON := c.outputFlags(fs, "print the evaluation list, or the evaluation, as JSON")
	client, code := c.parseClient(fs, m, args, 0, 1)
	if client == nil {
		return code
	}
	if fs.NArg() == 0 {
		params := map[string]string{}
		if *job != "" {
			params["job"] = *job
		}
		if *status != "" {
			params["status"] = *status
		}
		evals, _, err := client.Evaluations().List(c.ctx, &api.QueryOptions{Namespace: m.lookupNamespace(), Params: params})
		if err != nil {
			return c.fail("querying evaluations", err)
		}
		if *asJSON {
			return c.printJSON(evals)
		}
		if len(evals) == 0 {
			fmt.Fprintln(c.stdout, "No evaluations found")
			return 0
		}
		writeEvalList(c.stdout, evals, *verbose)
		return 0
	}

	id := strings.TrimSpace(fs.Arg(0))
	evals, _, err := client.Evaluations().List(c.ctx, &api.QueryOptions{Namespace: m.lookupNamespace(), Prefix: id})
	if err != nil {
		return c.fail("querying evaluation", err)
	}
	var ev *state.Evaluation
	for _, e := range evals {
		if e.ID == id {
			ev = e
		}
	}
	switch {
	case ev != nil:
	case len(evals) == 1:
		ev = evals[0]
	case len(evals) == 0:
		fmt.Fprintf(c.stderr, "No evaluation(s) with prefix or ID %q found\n", id)
		return 1
	default:
		fmt.Fprintf(c.stderr, "Prefix matched multiple evaluations\n\n")
		writeEvalList(c.stderr, evals, *verbose)
		return 1
	}
	allocs, _, err := client.Evaluations().Allocations(c.ctx, ev.ID, &api.QueryOptions{Namespace: ev.Namespace})
	if err != nil {
		return c.fail("querying evaluation allocations", err)
	}
	if *asJSON {
		return c.printJSON(struct {
			Evaluation  *state.Evaluation
			Allocations []*state.AllocListStub
		}{ev, allocs})
	}
	c.writeEval(ev, allocs, *verbose)
	return 0
}

// writeEvalList prints the evaluation table, newest first: the
// evaluation a user just caused is at the top.
func writeEvalList(w io.Writer, evals []*state.Evaluation, verbose bool) {
	evals = slices.Clone(evals)
	slices.SortStableFunc(evals, func(a, b *state.Evaluation) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
	rows := make([][]string, 0, len(evals))
	for _, e := range evals {
		rows = append(rows, []string{
			shortID(e.ID, verbose), strconv.Itoa(e.Priority), e.TriggeredBy, e.JobID, e.Namespace,
			orNone(shortID(e.NodeID, verbose)), e.Status, strconv.FormatBool(len(e.FailedTGAllocs) > 0),
		})
	}
	writeTable(w, []string{"ID", "Priority", "Triggered By", "Job ID", "Namespace", "Node ID", "Status", "Placement Failures"}, rows)
}

func (c *evalCLI) writeEval(e *state.Evaluation, allocs []*state.AllocListStub, verbose bool) {
	pairs := []kv{
		{"ID", shortID(e.ID, verbose)},
		{"Create Time", c.formatTime(e.CreateTime)},
		{"Modify Time", c.formatTime(e.ModifyTime)},
		{"Status", e.Status},
		{"Status Description", orNone(e.StatusDescription)},
		{"Type", e.Type},
		{"TriggeredBy", e.TriggeredBy},
		{"Job ID", e.JobID},
		{"Namespace", e.Namespace},
		{"Priority", strconv.Itoa(e.Priority)},
		{"Placement Failures", strconv.FormatBool(len(e.FailedTGAllocs) > 0)},
	}
	if e.NodeID != "" {
		pairs = append(pairs, kv{"Node ID", shortID(e.NodeID, verbose)})
	}
	if e.DeploymentID != "" {
		pairs = append(pairs, kv{"Deployment ID", shortID(e.DeploymentID, verbose)})
	}
	if !e.WaitUntil.IsZero() {
		pairs = append(pairs, kv{"Wait Until", e.WaitUntil.In(c.loc).Format(time.RFC3339)})
	}
	for _, rel := range []struct{ name, id string }{{"Previous Eval", e.PreviousEval}, {"Next Eval", e.NextEval}, {"Blocked Eval", e.BlockedEval}} {
		if rel.id != "" {
			pairs = append(pairs, kv{rel.name, shortID(rel.id, verbose)})
		}
	}
	writeKV(c.stdout, pairs)

	if len(e.FailedTGAllocs) > 0 {
		fmt.Fprintln(c.stdout, "\nFailed Placements")
		for _, group := range slices.Sorted(maps.Keys(e.FailedTGAllocs)) {
			m := e.FailedTGAllocs[group]
			fmt.Fprintf(c.stdout, "Task Group %q (failed to place %d allocation(s)):\n", group, m.CoalescedFailures+1)
			for _, line := range placementFailure(m) {
				fmt.Fprintf(c.stdout, "  * %s\n", line)
			}
		}
		if e.BlockedEval != "" {
			fmt.Fprintf(c.stdout, "\nEvaluation %q waiting for additional capacity to place remainder\n", shortID(e.BlockedEval, verbose))
		}
	}

	if len(allocs) > 0 {
		fmt.Fprintln(c.stdout, "\nPlaced Allocations")
		rows := make([][]string, 0, len(allocs))
		for _, a := range allocs {
			rows = append(rows, []string{shortID(a.ID, verbose), shortID(a.NodeID, verbose), a.TaskGroup, a.DesiredStatus, a.ClientStatus})
		}
		writeTable(c.stdout, []string{"ID", "Node ID", "Task Group", "Desired", "Status"}, rows)
	}
}
