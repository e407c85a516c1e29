package jobs

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/julienschmidt/httprouter"
	"github.com/schedhq/sched/state"
)

// jobActions serves GET /v1/job/:job_id/actions: the actions of every task
// of the job's current version, in group and task order.
func (h jobAPI) jobActions(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	id := p.ByName("job_id")
	var job *state.Job
	err := h.core.Read(w, r, func(ws memdb.WatchSet, ns string) (uint64, error) {
		var err error
		job, err = h.store.JobByID(ws, ns, id)
		return h.maxIndex("jobs"), err
	})
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, state.NotFoundf("job %q", id)
	}
	return jobActionList(job), nil
}

// jobActionList lists job's actions; never nil, so an empty list is [].
func jobActionList(job *state.Job) []*state.JobAction {
	out := []*state.JobAction{}
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			for _, a := range t.Actions {
				if a == nil {
					continue
				}
				out = append(out, &state.JobAction{Name: a.Name, Command: a.Command, Args: append([]string(nil), a.Args...),
					TaskGroupName: tg.Name, TaskName: t.Name})
			}
		}
	}
	return out
}
