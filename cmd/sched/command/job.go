package command

import (
	"errors"
	"fmt"
	"strings"

	"github.com/schedhq/sched/http/api"
	"github.com/schedhq/sched/state"
)

// jobCLI holds the commands of `sched job`: run, plan, status and the rest
// of a job's life.
type jobCLI struct{ *cli }

func (c *jobCLI) table() []entry {
	return []entry{
		{"run", "Register a job from a file and run it", c.jobRun, nil},
		{"plan", "Show what running a job file would change, without running it", c.jobPlan, nil},
		{"validate", "Check a job file without running it", c.jobValidate, nil},
		{"init", "Write an example job file", c.jobInit, nil}, // job_init.go
		{"status", "List jobs, or show one job's status", c.jobStatus, nil},
		{"inspect", "Print a job as JSON", c.jobInspect, nil},
		{"history", "List a job's versions", c.jobHistory, nil},
		{"stop", "Stop a running job", c.jobStop, nil},
		{"revert", "Revert a job to an earlier version", c.jobRevert, nil},   // job_deploy.go
		{"scale", "Change the count of a job's task group", c.jobScale, nil}, // job_deploy.go
		{"dispatch", "Dispatch an instance of a parameterized job", c.jobDispatch, nil},
		{"periodic", "Interact with periodic jobs: force a launch", nil, c.periodicTable()},
		{"action", "List a job's actions, or run one in an allocation", c.jobAction, nil},      // job_action.go
		{"promote", "Promote the canaries of a job's deployment", c.jobPromote, nil},           // job_rollout.go
		{"deployments", "List a job's deployments", c.jobDeployments, nil},                     // job_rollout.go
		{"allocs", "List a job's allocations", c.jobAllocs, nil},                               // job_rollout.go
		{"eval", "Create an evaluation of a job", c.jobEval, nil},                              // job_rollout.go
		{"restart", "Restart or reschedule a job's allocations in batches", c.jobRestart, nil}, // job_restart.go
	}
}

// errJobLookup is a job lookup that already printed why it failed.
var errJobLookup = errors.New("job lookup failed")

// resolveJob finds the job the user meant by id, which may be a prefix of
// the ID, as Nomad's commands allow: an exact ID wins; otherwise the prefix
// must match exactly one job. It returns the job's list entry and whether
// the match was exact. On failure it has printed the reason (and, for an
// ambiguous prefix, the matching jobs) and returns errJobLookup.
func (c *jobCLI) resolveJob(client *api.Client, m *meta, id string) (*state.JobListStub, bool, error) {
	id = strings.TrimSpace(id)
	jobs, _, err := client.Jobs().List(c.ctx, &api.QueryOptions{Prefix: id})
	if err != nil {
		c.fail("querying job", err)
		return nil, false, errJobLookup
	}
	var exact []*state.JobListStub
	for _, j := range jobs {
		if j.ID == id {
			exact = append(exact, j)
		}
	}
	switch {
	case len(exact) == 1:
		return exact[0], true, nil
	case len(jobs) == 1:
		return jobs[0], false, nil
	case len(jobs) == 0:
		fmt.Fprintf(c.stderr, "No job(s) with prefix or ID %q found\n", id)
		return nil, false, errJobLookup
	}
	// Several matches, or one ID in several namespaces (namespace "*").
	fmt.Fprintf(c.stderr, "Prefix matched multiple jobs\n\n")
	c.writeJobList(c.stderr, jobs, m.namespace == "*")
	return nil, false, errJobLookup
}

// nsQuery and nsWrite address a job in its own namespace, which matters
// when the lookup ran across all namespaces ("*").
func nsQuery(j *state.JobListStub) *api.QueryOptions {
	return &api.QueryOptions{Namespace: j.Namespace}
}

func nsWrite(j *state.JobListStub) *api.WriteOptions {
	return &api.WriteOptions{Namespace: j.Namespace}
}
