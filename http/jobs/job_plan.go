package jobs

import (
	"net/http"
	"time"

	"github.com/hashicorp/cronexpr"
	"github.com/julienschmidt/httprouter"

	"github.com/schedhq/sched/http/codec"
	"github.com/schedhq/sched/scheduler"
	"github.com/schedhq/sched/state"
)

// JobPlanRequest is the body of POST /v1/job/:job_id/plan (spec §4.17).
type JobPlanRequest struct {
	Job *state.Job
	// Diff asks for the difference between the registered job and this
	// one.
	Diff bool
	// PolicyOverride overrides soft-mandatory policies; no policy engine
	// runs yet, so it changes nothing beyond the capability check.
	PolicyOverride bool
}

// jobPlan serves POST /v1/job/:job_id/plan: it checks the job as a
// register would, then runs the scheduler on a snapshot of the state with
// the job as it would be registered (scheduler.DryRun gives it the
// version and indexes a register would), and reports what would change. It writes nothing. Periodic and
// parameterized jobs are templates that place nothing themselves: their
// plan has a diff (and, for periodic jobs, the next launch) but no
// placements.
func (h jobAPI) jobPlan(w http.ResponseWriter, r *http.Request, p httprouter.Params) (any, error) {
	var req JobPlanRequest
	if err := codec.DecodeBody(r, &req); err != nil {
		return nil, err
	}
	job, err := h.prepareJob(r, req.Job, p.ByName("job_id"))
	if err != nil {
		return nil, err
	}
	snap, err := h.store.Snapshot()
	if err != nil {
		return nil, err
	}
	ns, err := snap.NamespaceByName(nil, job.Namespace)
	if err != nil {
		return nil, err
	}
	if ns == nil {
		return nil, state.NotFoundf("namespace %q", job.Namespace)
	}
	old, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	now := h.core.Now()
	index := snap.LatestIndex()

	out := &state.JobPlanResponse{Index: index, FailedTGAllocs: map[string]*state.AllocMetric{}, CreatedEvals: []*state.Evaluation{},
		Annotations: &state.PlanAnnotations{DesiredTGUpdates: map[string]*state.DesiredUpdates{}}}
	if old != nil {
		out.JobModifyIndex = old.JobModifyIndex
	}
	if job.IsPeriodic() {
		if out.NextPeriodicLaunch, err = nextLaunch(job.Periodic, now); err != nil {
			return nil, err
		}
	}
	if !job.IsPeriodic() && !job.IsParameterized() {
		cfg := scheduler.Config{Logger: h.core.Logger(), Now: h.core.Now, NewID: h.core.NewID}
		res, err := scheduler.DryRun(cfg, snap, job)
		if err != nil {
			return nil, err
		}
		if res.Annotations != nil && res.Annotations.DesiredTGUpdates != nil {
			out.Annotations = res.Annotations
		}
		if res.FailedTGAllocs != nil {
			out.FailedTGAllocs = res.FailedTGAllocs
		}
		if res.CreatedEvals != nil {
			out.CreatedEvals = res.CreatedEvals
		}
	}
	if req.Diff {
		if out.Diff, err = old.Diff(job, true); err != nil {
			return nil, err
		}
		scheduler.AnnotateDiff(out.Diff, old, job, out.Annotations)
	}
	h.core.SetMeta(w, index)
	return out, nil
}

// prepareJob checks a job body as a register does: present, naming the
// job of the path, in the request's namespace unless it names one,
// canonicalized and valid (every problem listed with its Job.* path).
func (h jobAPI) prepareJob(r *http.Request, job *state.Job, pathID string) (*state.Job, error) {
	if job == nil {
		return nil, codec.BadRequest("Job: a job definition is required")
	}
	if pathID != "" && job.ID != pathID {
		return nil, codec.BadRequest("Job.ID: %q does not match the job ID in the path %q", job.ID, pathID)
	}
	if err := h.core.PlaceJob(r, job); err != nil {
		return nil, err
	}
	job.Canonicalize()
	if err := h.checkJob(job); err != nil {
		return nil, err
	}
	return job, nil
}

// nextLaunch is the first time after now that any of the periodic
// config's cron specs fires, in its time zone (UTC by default).
func nextLaunch(pc *state.PeriodicConfig, now time.Time) (time.Time, error) {
	loc := time.UTC
	if pc.TimeZone != "" {
		l, err := time.LoadLocation(pc.TimeZone)
		if err != nil {
			return time.Time{}, codec.BadRequest("Job.Periodic.TimeZone: %v", err)
		}
		loc = l
	}
	specs := append([]string(nil), pc.Specs...)
	if pc.Spec != "" {
		specs = append([]string{pc.Spec}, specs...)
	}
	var next time.Time
	for _, spec := range specs {
		expr, err := cronexpr.Parse(spec)
		if err != nil {
			return time.Time{}, codec.BadRequest("Job.Periodic.Spec: %q: %v", spec, err)
		}
		t := expr.Next(now.In(loc))
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, nil
}
