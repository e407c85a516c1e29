package leader

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/schedhq/sched/state"
	"github.com/schedhq/sched/state/store"
)

// deploymentPace spaces the watcher's passes, so the health reports of a
// large rollout arriving one client batch after another cost one command
// (and one evaluation per job) per pace rather than one per report.
const deploymentPace = 250 * time.Millisecond

// Deployment status descriptions the watcher writes.
const (
	DeploymentDescSuccessful  = "Deployment completed successfully"
	DeploymentDescUnhealthy   = "Failed due to unhealthy allocations"
	DeploymentDescDeadline    = "Failed due to progress deadline"
	deploymentDescRollback    = " - rolling back to job version %d"
	deploymentDescNoRollback  = " - no stable job version to auto revert to"
	deploymentDescAutoPromote = "Deployment is running"
)

// DeploymentWatcher follows the active deployments on the leader, from the
// allocation health clients report (read from the allocations of each
// deployment's job at every pass), and moves them on:
//
//   - a deployment with an unhealthy allocation fails, and so does one
//     where a group not yet done passes its RequireProgressBy (progress
//     deadline); on failure, when a group has AutoRevert, the job's latest
//     stable version is registered again as a new version, in the same
//     command;
//   - a group whose canaries are all healthy is promoted when every group
//     waiting for promotion has AutoPromote;
//   - a deployment whose groups all have DesiredTotal live healthy
//     allocations (and promoted canaries) succeeds, and its job version is marked
//     stable;
//   - when a deployment's healthy count grows, the job is evaluated again
//     (TriggeredBy "deployment-watcher"), so the reconciler starts the next
//     batch.
//
// Paused deployments are left alone (their deadline does not run out).
// Every pass writes at most one command for all deployments (plus one per
// promotion and per revert); passes are spaced by deploymentPace. The
// watcher holds nothing that state does not: after a failover it starts
// over from the deployments in state, evaluating each active one's job
// once.
type DeploymentWatcher struct {
	store *store.Store
	raft  Raft
	log   *slog.Logger
	now   func() time.Time
	newID func() string
	run   runner

	// healthy is the healthy count of each deployment at its last
	// evaluation; owned by the loop.
	healthy map[string]int
	// counted caches each active deployment's counts with the watch
	// channels of the allocations they came from: a pass recounts only
	// the deployments whose job's allocations changed, so its cost does
	// not grow with every allocation of every active deployment.
	counted map[string]*countedDeployment
}

// countedDeployment is a deployment's counts and what they were read
// from.
type countedDeployment struct {
	counts map[string]groupCounts
	watch  []<-chan struct{}
}

// fresh reports whether none of the counts' sources changed.
func (c *countedDeployment) fresh() bool {
	for _, ch := range c.watch {
		select {
		case <-ch:
			return false
		default:
		}
	}
	return true
}

// NewDeploymentWatcher returns a stopped watcher.
func NewDeploymentWatcher(st *store.Store, raft Raft, log *slog.Logger, now func() time.Time, newID func() string) *DeploymentWatcher {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = state.NewID
	}
	return &DeploymentWatcher{store: st, raft: raft, log: log, now: now, newID: newID}
}

// Name implements Service.
func (w *DeploymentWatcher) Name() string { return "deployment-watcher" }

// Start follows deployments until Stop.
func (w *DeploymentWatcher) Start(ctx context.Context) error {
	w.healthy = map[string]int{}
	w.counted = map[string]*countedDeployment{}
	return w.run.start(ctx, w.loop)
}

// Stop ends the watcher.
func (w *DeploymentWatcher) Stop() { w.run.stop() }

func (w *DeploymentWatcher) loop(ctx context.Context) {
	followTables(ctx, w.store, deploymentPace, []string{store.TableDeployment, store.TableAllocs},
		func(ctx context.Context, _ memdb.WatchSet) time.Time {
			next, err := w.pass(ctx)
			if err != nil && ctx.Err() == nil {
				w.log.Error("deployment watcher: pass failed", "error", err)
				// Retry after a pace even when nothing changes.
				next = w.now().Add(deploymentPace)
			}
			return next
		})
}

// pass looks at every active deployment once, writes what it decided and
// returns the earliest progress deadline still ahead (zero for none).
func (w *DeploymentWatcher) pass(ctx context.Context) (time.Time, error) {
	deps, err := w.store.Deployments(nil, "*", "")
	if err != nil {
		return time.Time{}, err
	}
	now := w.now()
	var next time.Time
	batch := &store.DeploymentStatusUpdateRequest{Now: now.UnixNano()}
	var reverts []*store.DeploymentStatusUpdateRequest
	var promotes []*store.DeploymentPromoteRequest
	live := map[string]bool{}
	for _, d := range deps {
		if !d.Active() {
			continue
		}
		live[d.ID] = true
		if d.Status == state.DeploymentStatusPaused {
			continue
		}
		job, err := w.store.JobByID(nil, d.Namespace, d.JobID)
		if err != nil {
			return time.Time{}, err
		}
		if job == nil || job.Version != d.JobVersion || job.CreateIndex != d.JobCreateIndex {
			continue // the store cancels it with the newer version
		}
		counts, err := w.count(d)
		if err != nil {
			return time.Time{}, err
		}
		v, err := w.judge(d, counts, now)
		if err != nil {
			return time.Time{}, err
		}
		if !v.deadline.IsZero() && (next.IsZero() || v.deadline.Before(next)) {
			next = v.deadline
		}
		switch {
		case v.fail != "":
			upd := &store.DeploymentStatusUpdate{DeploymentID: d.ID, Status: state.DeploymentStatusFailed, StatusDescription: v.fail}
			var stable *state.Job
			if v.autoRevert {
				if stable, err = w.latestStable(job); err != nil {
					return time.Time{}, err
				}
				if stable == nil {
					upd.StatusDescription += deploymentDescNoRollback
				}
			}
			if stable == nil {
				batch.Updates = append(batch.Updates, upd)
				held, err := w.heldEval(job, now)
				if err != nil {
					return time.Time{}, err
				}
				if !held {
					batch.Evals = append(batch.Evals, w.eval(job, d, now))
				}
				continue
			}
			upd.StatusDescription += fmt.Sprintf(deploymentDescRollback, stable.Version)
			revert := stable.Copy()
			revert.Stop = false
			ev := w.eval(job, d, now)
			ev.TriggeredBy = state.EvalTriggerJobRegister
			reverts = append(reverts, &store.DeploymentStatusUpdateRequest{
				Updates: []*store.DeploymentStatusUpdate{upd},
				Revert: &store.JobRegisterRequest{
					Job: revert, Eval: ev, EnforceIndex: true, JobModifyIndex: job.JobModifyIndex, Now: now.UnixNano(),
				},
				Now: now.UnixNano(),
			})
		case v.success:
			batch.Updates = append(batch.Updates, &store.DeploymentStatusUpdate{
				DeploymentID: d.ID, Status: state.DeploymentStatusSuccessful, StatusDescription: DeploymentDescSuccessful,
			})
			batch.Stable = append(batch.Stable, store.JobVersionRef{Namespace: d.Namespace, JobID: d.JobID, Version: d.JobVersion})
		case len(v.promote) > 0:
			promotes = append(promotes, &store.DeploymentPromoteRequest{
				DeploymentID: d.ID, Groups: v.promote, Eval: w.eval(job, d, now), Now: now.UnixNano(),
			})
		case v.healthy > w.healthy[d.ID]:
			// Progress (also progress made while no leader watched, seen
			// first by a new one): the scheduler may place the next
			// batch. A deployment first seen without any is left alone:
			// its placements are in, and an evaluation per new
			// deployment would double the evaluations of a burst of
			// registrations.
			batch.Evals = append(batch.Evals, w.eval(job, d, now))
		}
		w.healthy[d.ID] = v.healthy
	}
	for id := range w.healthy {
		if !live[id] {
			delete(w.healthy, id)
		}
	}
	for id := range w.counted {
		if !live[id] {
			delete(w.counted, id)
		}
	}
	if len(batch.Updates)+len(batch.Stable)+len(batch.Evals) > 0 {
		if _, _, err := w.raft.Apply(ctx, store.DeploymentStatusUpdateRequestType, batch); err != nil {
			return next, err
		}
		w.log.Debug("deployment watcher wrote a batch", "updates", len(batch.Updates), "evals", len(batch.Evals))
	}
	for _, p := range promotes {
		if _, _, err := w.raft.Apply(ctx, store.DeploymentPromoteRequestType, p); err != nil {
			return next, err
		}
		w.log.Info("deployment auto-promoted", "deployment_id", p.DeploymentID, "groups", p.Groups)
	}
	for _, r := range reverts {
		if _, _, err := w.raft.Apply(ctx, store.DeploymentStatusUpdateRequestType, r); err != nil {
			return next, err
		}
		w.log.Info("deployment failed, job reverted", "deployment_id", r.Updates[0].DeploymentID,
			"job_id", r.Revert.Job.ID, "version", r.Revert.Job.Version)
	}
	return next, nil
}

// verdict is what one pass decides for one deployment.
type verdict struct {
	fail       string
	autoRevert bool
	success    bool
	promote    []string
	healthy    int
	// deadline is the earliest progress deadline of a group not done.
	deadline time.Time
}

// groupCounts is what a deployment's allocations of one group say now.
type groupCounts struct {
	// healthy counts the live allocations of the deployment reported
	// healthy; unhealthy every one reported unhealthy.
	healthy, unhealthy int
}

// count reads a deployment's allocations and counts, per group, the live
// healthy ones and the unhealthy ones. The watcher decides on these rather
// than on the deployment's counters (which also count allocations that
// were healthy once and have stopped since, and are what the API shows):
// a group is done when DesiredTotal allocations of it are healthy now.
func (w *DeploymentWatcher) count(d *state.Deployment) (map[string]groupCounts, error) {
	if c := w.counted[d.ID]; c != nil && c.fresh() {
		return c.counts, nil
	}
	// No allocation of the deployment has been judged healthy or
	// unhealthy yet (the store counts every first judgement): there is
	// nothing to count, and a job of a thousand allocations need not be
	// read after each of its plans.
	judged := false
	for _, ds := range d.TaskGroups {
		judged = judged || ds != nil && (ds.HealthyAllocs > 0 || ds.UnhealthyAllocs > 0)
	}
	if !judged {
		return map[string]groupCounts{}, nil
	}
	ws := memdb.NewWatchSet()
	allocs, err := w.store.AllocsByJob(ws, d.Namespace, d.JobID, false)
	if err != nil {
		return nil, err
	}
	// A restored snapshot replaces the trees: their channels never fire.
	watch := []<-chan struct{}{w.store.AbandonCh()}
	for ch := range ws {
		watch = append(watch, ch)
	}
	out := map[string]groupCounts{}
	for _, a := range allocs {
		if a.DeploymentID != d.ID || a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil {
			continue
		}
		c := out[a.TaskGroup]
		switch {
		case !*a.DeploymentStatus.Healthy:
			c.unhealthy++
		case !a.Terminal():
			c.healthy++
		}
		out[a.TaskGroup] = c
	}
	if w.counted != nil {
		w.counted[d.ID] = &countedDeployment{counts: out, watch: watch}
	}
	return out, nil
}

// judge decides a deployment's next step from its allocations' counts.
func (w *DeploymentWatcher) judge(d *state.Deployment, counts map[string]groupCounts, now time.Time) (verdict, error) {
	var v verdict
	done, waitPromotion, allAuto := true, false, true
	var promote []string
	for _, name := range slices.Sorted(maps.Keys(d.TaskGroups)) {
		ds, c := d.TaskGroups[name], counts[name]
		v.healthy += c.healthy
		v.autoRevert = v.autoRevert || ds.AutoRevert
		if (c.unhealthy > 0 || ds.UnhealthyAllocs > 0) && v.fail == "" {
			v.fail = DeploymentDescUnhealthy
		}
		groupDone := c.healthy >= ds.DesiredTotal && (ds.DesiredCanaries == 0 || ds.Promoted)
		if !groupDone {
			done = false
			if ds.ProgressDeadline > 0 && !ds.RequireProgressBy.IsZero() {
				by := ds.RequireProgressBy
				if !now.Before(by) {
					if v.fail == "" {
						v.fail = DeploymentDescDeadline
					}
				} else if v.deadline.IsZero() || by.Before(v.deadline) {
					v.deadline = by
				}
			}
		}
		if ds.DesiredCanaries > 0 && !ds.Promoted {
			waitPromotion = true
			allAuto = allAuto && ds.AutoPromote
			ok, err := w.canariesHealthy(ds)
			if err != nil {
				return v, err
			}
			if ok {
				promote = append(promote, name)
			} else {
				allAuto = false
			}
		}
	}
	switch {
	case v.fail != "":
	case done:
		v.success = true
	case waitPromotion && allAuto:
		v.promote = promote
	}
	return v, nil
}

// canariesHealthy reports whether a group has all its desired canaries
// healthy.
func (w *DeploymentWatcher) canariesHealthy(ds *state.DeploymentState) (bool, error) {
	n := 0
	for _, id := range ds.PlacedCanaries {
		a, err := w.store.AllocByID(nil, id)
		if err != nil {
			return false, err
		}
		if a != nil && !a.Terminal() && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy {
			n++
		}
	}
	return n >= ds.DesiredCanaries, nil
}

// latestStable returns the version an auto-revert of job goes back to,
// or nil.
func (w *DeploymentWatcher) latestStable(job *state.Job) (*state.Job, error) {
	versions, err := w.store.JobVersions(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	return state.LatestStableVersion(job, versions), nil
}

// heldEval reports whether job has a pending evaluation the broker holds
// until after now (a node-update evaluation of a churn, node_churn.go):
// it is not delivered yet, so it will read the deployment's failure
// written now, and a failed deployment's own evaluation would only add to
// the churn's evaluations (docs/queue.md).
func (w *DeploymentWatcher) heldEval(job *state.Job, now time.Time) (bool, error) {
	evals, err := w.store.EvalsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		return false, err
	}
	for _, e := range evals {
		if e.Status == state.EvalStatusPending && e.WaitUntil.After(now) {
			return true, nil
		}
	}
	return false, nil
}

// eval is the evaluation of a deployment's job that moves the rollout on.
func (w *DeploymentWatcher) eval(job *state.Job, d *state.Deployment, now time.Time) *state.Evaluation {
	return &state.Evaluation{
		ID:             w.newID(),
		Namespace:      job.Namespace,
		Priority:       job.Priority,
		Type:           job.Type,
		TriggeredBy:    state.EvalTriggerDeploymentWatcher,
		JobID:          job.ID,
		JobModifyIndex: job.JobModifyIndex,
		DeploymentID:   d.ID,
		Status:         state.EvalStatusPending,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}
