package command

import (
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

const jobStatusHelp = `
Without an ID, list the jobs of the namespace ("-namespace '*'" for every
namespace); -children=false leaves out the jobs launched by periodic and
parameterized jobs (their parents stay, and 'sched job status PARENT'
lists them). With an ID (or a unique prefix of one), show the job: its
fields, allocation counts per task group, its latest deployment and its
allocations.`

func (c *jobCLI) jobStatus(args []string) int {
	fs, m := c.flagSet("job status", "[options] [ID]", jobStatusHelp)
	verbose := fs.Bool("verbose", false, "print full IDs")
	short := fs.Bool("short", false, "print only the job's fields")
	allAllocs := fs.Bool("all-allocs", false, "include allocations of an earlier job with the same ID")
	children := fs.Bool("children", true, "in the job list, include the children of periodic and parameterized jobs (-children=false: leave them out)")
	asJSON := c.outputFlags(fs, "print the job list, or the job with its summary, latest deployment and allocations, as JSON")
	client, code := c.parseClient(fs, m, args, 0, 1)
	if client == nil {
		return code
	}

	if fs.NArg() == 0 {
		jobs, _, err := client.Jobs().List(c.ctx, nil)
		if err != nil {
			return c.fail("querying jobs", err)
		}
		if !*children {
			jobs = withoutChildren(jobs)
		}
		if *asJSON {
			return c.printJSON(jobs)
		}
		if len(jobs) == 0 {
			fmt.Fprintln(c.stdout, "No running jobs")
			return 0
		}
		c.writeJobList(c.stdout, jobs, m.namespace == "*")
		return 0
	}

	stub, _, err := c.resolveJob(client, m, fs.Arg(0))
	if err != nil {
		return 1
	}
	q := nsQuery(stub)
	job, _, err := client.Jobs().Info(c.ctx, stub.ID, q)
	if err != nil {
		return c.fail("querying job", err)
	}
	if *asJSON {
		return c.jobStatusJSON(client, job, *allAllocs)
	}
	c.writeJobHeader(c.stdout, job)
	if *short {
		return 0
	}

	summary, _, err := client.Jobs().Summary(c.ctx, job.ID, q)
	if err != nil {
		return c.fail("querying job summary", err)
	}
	fmt.Fprintln(c.stdout)
	if job.IsPeriodic() || job.IsParameterized() {
		writeChildren(c.stdout, summary)
		return c.writeChildJobs(client, job)
	}
	writeSummary(c.stdout, summary)
	if err := c.writePlacementFailures(c.stdout, client, job, q, *verbose); err != nil { // job_status_blocked.go
		return c.fail("querying evaluations", err)
	}

	if job.Type == state.JobTypeService {
		d, _, err := client.Jobs().LatestDeployment(c.ctx, job.ID, q)
		if err != nil {
			return c.fail("querying latest deployment", err)
		}
		if d != nil {
			fmt.Fprintln(c.stdout)
			writeDeployment(c.stdout, d, *verbose)
		}
	}

	allocs, _, err := client.Jobs().Allocations(c.ctx, job.ID, *allAllocs, q)
	if err != nil {
		return c.fail("querying allocations", err)
	}
	fmt.Fprintln(c.stdout)
	c.writeAllocs(c.stdout, allocs, *verbose)
	c.writePreemptions(c.stdout, client, allocs, *verbose) // job_status_preempt.go
	return 0
}

// jobStatusJSON prints a job with its summary, latest deployment (null
// when none) and allocations as one JSON object.
func (c *jobCLI) jobStatusJSON(client *api.Client, job *state.Job, allAllocs bool) int {
	q := &api.QueryOptions{Namespace: job.Namespace}
	summary, _, err := client.Jobs().Summary(c.ctx, job.ID, q)
	if err != nil {
		return c.fail("querying job summary", err)
	}
	d, _, err := client.Jobs().LatestDeployment(c.ctx, job.ID, q)
	if err != nil {
		return c.fail("querying latest deployment", err)
	}
	allocs, _, err := client.Jobs().Allocations(c.ctx, job.ID, allAllocs, q)
	if err != nil {
		return c.fail("querying allocations", err)
	}
	var children []*state.JobListStub
	if job.IsPeriodic() || job.IsParameterized() {
		if children, err = c.childJobs(client, job); err != nil {
			return c.fail("querying child jobs", err)
		}
	}
	return c.printJSON(struct {
		Job              *state.Job
		Summary          *state.JobSummary
		LatestDeployment *state.Deployment
		Allocations      []*state.AllocListStub
		Children         []*state.JobListStub `json:",omitempty"`
	}{job, summary, d, allocs, children})
}

// writeJobList prints the job list table; allNS adds the namespace column.
func (c *jobCLI) writeJobList(w io.Writer, jobs []*state.JobListStub, allNS bool) {
	header := []string{"ID", "Type", "Priority", "Status", "Submit Date"}
	if allNS {
		header = append([]string{"ID", "Namespace"}, header[1:]...)
	}
	rows := make([][]string, 0, len(jobs))
	for _, j := range jobs {
		row := []string{j.ID, jobType(j.Type, j.Periodic, j.ParameterizedJob), strconv.Itoa(j.Priority), jobStatus(j.Status, j.Stop), c.formatTime(j.SubmitTime)}
		if allNS {
			row = append([]string{j.ID, j.Namespace}, row[1:]...)
		}
		rows = append(rows, row)
	}
	writeTable(w, header, rows)
}

// jobType shows templates the way Nomad does, so "batch/periodic" tells
// at a glance that the job launches children.
func jobType(t string, periodic, parameterized bool) string {
	switch {
	case periodic:
		return t + "/periodic"
	case parameterized:
		return t + "/parameterized"
	}
	return t
}

// jobStatus marks a job a user stopped: its status stays "running" until
// its allocations have stopped, which would otherwise hide the stop.
func jobStatus(status string, stopped bool) string {
	if stopped {
		return status + " (stopped)"
	}
	return status
}

func (c *jobCLI) writeJobHeader(w io.Writer, j *state.Job) {
	rows := []kv{
		{"ID", j.ID},
		{"Name", j.Name},
		{"Submit Date", c.formatTime(j.SubmitTime)},
		{"Type", j.Type},
		{"Priority", strconv.Itoa(j.Priority)},
		{"Datacenters", strings.Join(j.Datacenters, ",")},
		{"Namespace", j.Namespace},
		{"Node Pool", j.NodePool},
		{"Status", jobStatus(j.Status, j.Stop)},
		{"Version", strconv.FormatUint(j.Version, 10)},
		{"Periodic", strconv.FormatBool(j.IsPeriodic())},
		{"Parameterized", strconv.FormatBool(j.IsParameterized())},
	}
	if j.IsPeriodic() && !j.Stop {
		launch := "none"
		if next, err := j.Periodic.Next(c.now()); err == nil && !next.IsZero() {
			launch = c.formatTime(next.UnixNano()) + " (in " + next.Sub(c.now()).Round(time.Second).String() + ")"
		}
		rows = append(rows, kv{"Next Periodic Launch", launch})
	}
	writeKV(w, rows)
}

// writeChildJobs lists the children of a periodic or parameterized job,
// newest launch last (their IDs sort by launch time).
func (c *jobCLI) writeChildJobs(client *api.Client, job *state.Job) int {
	jobs, err := c.childJobs(client, job)
	if err != nil {
		return c.fail("querying child jobs", err)
	}
	title := "Previously Launched Jobs"
	if job.IsParameterized() {
		title = "Dispatched Jobs"
	}
	var rows [][]string
	for _, j := range jobs {
		rows = append(rows, []string{j.ID, c.formatTime(j.SubmitTime), jobStatus(j.Status, j.Stop)})
	}
	fmt.Fprintln(c.stdout)
	fmt.Fprintln(c.stdout, title)
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "No instances found")
		return 0
	}
	writeTable(c.stdout, []string{"ID", "Submit Date", "Status"}, rows)
	return 0
}

func writeSummary(w io.Writer, s *state.JobSummary) {
	fmt.Fprintln(w, "Summary")
	var rows [][]string
	if s != nil {
		for _, g := range slices.Sorted(maps.Keys(s.Summary)) {
			t := s.Summary[g]
			rows = append(rows, []string{g, itoa(t.Queued), itoa(t.Starting), itoa(t.Running), itoa(t.Failed), itoa(t.Complete), itoa(t.Lost), itoa(t.Unknown)})
		}
	}
	writeTable(w, []string{"Task Group", "Queued", "Starting", "Running", "Failed", "Complete", "Lost", "Unknown"}, rows)
}

func writeChildren(w io.Writer, s *state.JobSummary) {
	fmt.Fprintln(w, "Children Job Summary")
	var ch state.JobChildrenSummary
	if s != nil && s.Children != nil {
		ch = *s.Children
	}
	writeTable(w, []string{"Pending", "Running", "Dead"}, [][]string{{
		strconv.FormatInt(ch.Pending, 10), strconv.FormatInt(ch.Running, 10), strconv.FormatInt(ch.Dead, 10),
	}})
}

func writeDeployment(w io.Writer, d *state.Deployment, verbose bool) {
	fmt.Fprintln(w, "Latest Deployment")
	writeKV(w, []kv{
		{"ID", shortID(d.ID, verbose)},
		{"Status", d.Status},
		{"Description", orNone(d.StatusDescription)},
	})
	if len(d.TaskGroups) == 0 {
		return
	}
	fmt.Fprintln(w, "\nDeployed")
	var rows [][]string
	for _, g := range slices.Sorted(maps.Keys(d.TaskGroups)) {
		s := d.TaskGroups[g]
		rows = append(rows, []string{g, itoa(s.DesiredTotal), itoa(s.PlacedAllocs), itoa(s.HealthyAllocs), itoa(s.UnhealthyAllocs)})
	}
	writeTable(w, []string{"Task Group", "Desired", "Placed", "Healthy", "Unhealthy"}, rows)
}

func itoa(n int) string { return strconv.Itoa(n) }

// childJobs lists the children of job: the jobs under its ID whose
// ParentID is job.
func (c *jobCLI) childJobs(client *api.Client, job *state.Job) ([]*state.JobListStub, error) {
	jobs, _, err := client.Jobs().List(c.ctx, &api.QueryOptions{Namespace: job.Namespace, Prefix: job.ID + "/"})
	if err != nil {
		return nil, err
	}
	out := jobs[:0]
	for _, j := range jobs {
		if j.ParentID == job.ID {
			out = append(out, j)
		}
	}
	return out, nil
}

// withoutChildren is the job list without the jobs a periodic or
// parameterized parent launched.
func withoutChildren(jobs []*state.JobListStub) []*state.JobListStub {
	out := make([]*state.JobListStub, 0, len(jobs))
	for _, j := range jobs {
		if j.ParentID == "" {
			out = append(out, j)
		}
	}
	return out
}
