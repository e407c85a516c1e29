package scheduler

import (
	"slices"

	"github.com/schedhq/sched/state"
)

// Deployments in the reconciler.
//
// A service group with an update strategy (MaxParallel or Canary set;
// canonicalization gives every service group the default one) rolls out a
// new job version through a deployment: the first eval that has anything
// to place or update for the version creates it, and every allocation the
// deployment places or updates carries its ID. The rollout then goes:
//
//   - Canaries first, when Canary > 0 and allocations of an older version
//     are to be replaced destructively: Canary new allocations are placed
//     beside the old ones (taking the names of old ones) and nothing else
//     is replaced until the group is promoted. Canaries do not count
//     towards the group's count until then. A canary that fails is not
//     replaced: its deployment fails (the watcher sees it unhealthy).
//   - Once promoted, each old allocation whose name a canary took stops,
//     and the rest are replaced destructively, at most MaxParallel in
//     flight: an allocation of the deployment whose health is not known
//     yet counts as in flight, and the watcher evaluates the job again as
//     allocations become healthy.
//   - Nothing is replaced destructively while the deployment is paused,
//     failed or has an unhealthy allocation, and no canary is placed.
//   - In-place updates stay in place; a running one joins the deployment
//     already healthy (it never stopped), others join with no health yet.
//
// Placements that do not replace anything (a count increase, reschedules,
// lost allocations) are never held back. Batch jobs get no deployments.
// The deployment of an older version is cancelled by the store when the
// new version is registered, not here.

// Deployment status descriptions.
const (
	DeploymentDescRunning            = "Deployment is running"
	DeploymentDescRunningNeedsPromo  = "Deployment is running but requires manual promotion"
	DeploymentDescRunningAutoPromote = "Deployment is running pending automatic promotion"
	descCanaryPromoted               = "alloc not needed as it was replaced by a promoted canary"
	descCanaryNotNeeded              = "alloc not needed as its deployment ended before promotion"
)

// groupDeploy is one group's view of the job's deployment in a reconcile.
type groupDeploy struct {
	strategy *state.UpdateStrategy
	// dep is the deployment of the job's current version when it is
	// active, nil when there is none yet.
	dep *state.Deployment
	// dstate is the group's state in dep (nil when dep is nil or lacks
	// the group).
	dstate *state.DeploymentState
	// halted: the version's deployment is paused, failed or cancelled, so
	// no destructive update or canary is made.
	halted bool
	// ended is the version's deployment when it failed or was cancelled.
	ended *state.Deployment
	// canaries are the deployment's canaries of this group (any status).
	canaries []*state.Allocation
}

// deploying reports whether tg rolls out through deployments.
func (r *reconciler) deploying(tg *state.TaskGroup) bool {
	u := tg.Update
	return !r.batch && r.job.Type == state.JobTypeService && u != nil && (u.MaxParallel > 0 || u.Canary > 0)
}

// currentDeployment is the job's latest deployment when it is of the
// version registered now, else nil.
func (r *reconciler) currentDeployment() *state.Deployment {
	d := r.out.deployment
	if d == nil {
		d = r.deployment
	}
	if d == nil || d.JobVersion != r.job.Version || d.JobCreateIndex != r.job.CreateIndex {
		return nil
	}
	return d
}

// groupDeployment returns the group's deployment view, or nil when the
// group does not deploy.
func (r *reconciler) groupDeployment(tg *state.TaskGroup, allocs []*state.Allocation) *groupDeploy {
	if !r.deploying(tg) {
		return nil
	}
	g := &groupDeploy{strategy: tg.Update}
	d := r.currentDeployment()
	switch {
	case d == nil:
	case d.Active() && d.Status != state.DeploymentStatusPaused:
		g.dep = d
	case d.Status == state.DeploymentStatusPaused:
		g.dep, g.halted = d, true
	case d.Status == state.DeploymentStatusSuccessful:
		// Done: later placements of this version are not tracked.
		return nil
	default:
		// Failed or cancelled: its unpromoted canaries stop.
		g.halted, g.ended = true, d
	}
	src := g.dep
	if src == nil {
		src = g.ended
	}
	if src != nil {
		g.dstate = src.TaskGroups[tg.Name]
		for _, a := range allocs {
			if a.DeploymentID == src.ID && a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
				g.canaries = append(g.canaries, a)
			}
		}
	}
	return g
}

// stopEndedCanaries stops the live unpromoted canaries of the version's
// failed or cancelled deployment.
func (g *groupDeploy) stopEndedCanaries(res *reconcileResult, du *state.DesiredUpdates) {
	if g.ended == nil || g.promoted() {
		return
	}
	for _, a := range g.canaries {
		if !a.Terminal() {
			res.stops = append(res.stops, stopRequest{alloc: a, desc: descCanaryNotNeeded})
			du.Stop++
		}
	}
}

// promoted reports whether the group's canaries were promoted.
func (g *groupDeploy) promoted() bool { return g.dstate != nil && g.dstate.Promoted }

// withoutCanaries drops the deployment's unpromoted canaries from allocs:
// they stand beside the group until promotion.
func (g *groupDeploy) withoutCanaries(allocs []*state.Allocation) []*state.Allocation {
	if len(g.canaries) == 0 || g.promoted() {
		return allocs
	}
	return slices.DeleteFunc(slices.Clone(allocs), func(a *state.Allocation) bool {
		return slices.Contains(g.canaries, a)
	})
}

// stopReplaced stops, once the group is promoted, the old allocation
// whose name each live canary took, and returns live without them.
func (r *reconciler) stopReplaced(res *reconcileResult, du *state.DesiredUpdates, g *groupDeploy, live []*state.Allocation) []*state.Allocation {
	if !g.promoted() || len(g.canaries) == 0 {
		return live
	}
	stopped := map[string]bool{}
	for _, c := range g.canaries {
		if c.Terminal() {
			continue
		}
		for _, a := range live {
			if a.Name == c.Name && !stopped[a.ID] && !r.upToDate(a) {
				res.stops = append(res.stops, stopRequest{alloc: a, desc: descCanaryPromoted})
				stopped[a.ID] = true
				du.Stop++
				break
			}
		}
	}
	return slices.DeleteFunc(live, func(a *state.Allocation) bool { return stopped[a.ID] })
}

// rollout decides the group's destructive updates and canaries among the
// outdated allocations (those to replace destructively, by name).
func (r *reconciler) rollout(res *reconcileResult, tg *state.TaskGroup, du *state.DesiredUpdates, g *groupDeploy, outdated []*state.Allocation) {
	if g == nil {
		for _, a := range outdated {
			r.replace(res, tg, du, a)
		}
		return
	}
	wantCanaries := g.strategy.Canary > 0 && !g.promoted() && (len(outdated) > 0 || len(g.canaries) > 0)
	if wantCanaries {
		du.Ignore += uint64(len(outdated))
		if g.halted || len(outdated) == 0 {
			return
		}
		taken := map[string]bool{}
		for _, c := range g.canaries {
			taken[c.Name] = true
		}
		if g.ended != nil {
			return
		}
		n := g.strategy.Canary - len(g.canaries)
		for _, a := range outdated {
			if n <= 0 {
				break
			}
			if taken[a.Name] {
				continue
			}
			taken[a.Name] = true
			n--
			res.places = append(res.places, placeRequest{tg: tg, name: a.Name, kind: placeCanary, canary: true})
			du.Canary++
		}
		return
	}
	limit := r.rolloutLimit(g, tg)
	for _, a := range outdated {
		if limit <= 0 {
			du.Ignore++
			continue
		}
		limit--
		r.replace(res, tg, du, a)
	}
}

// replace adds the destructive update of a.
func (r *reconciler) replace(res *reconcileResult, tg *state.TaskGroup, du *state.DesiredUpdates, a *state.Allocation) {
	res.places = append(res.places, placeRequest{
		tg: tg, name: a.Name, kind: placeDestructive, previous: a,
		stopPrevious: &stopRequest{alloc: a, desc: descUpdating},
	})
	du.DestructiveUpdate++
}

// rolloutLimit is how many destructive updates the group may start now:
// MaxParallel less those of the deployment still in flight, none while the
// deployment is halted or has an unhealthy allocation.
func (r *reconciler) rolloutLimit(g *groupDeploy, tg *state.TaskGroup) int {
	if g.halted {
		return 0
	}
	limit := max(g.strategy.MaxParallel, 1)
	if g.dep == nil {
		return limit
	}
	for _, a := range r.allocs {
		if a.TaskGroup != tg.Name || a.DeploymentID != g.dep.ID {
			continue
		}
		// An unhealthy allocation, or one that failed before its health
		// was known, holds the rollout until the watcher decides.
		if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && !*a.DeploymentStatus.Healthy {
			return 0
		}
		if a.ClientStatus == state.AllocClientStatusFailed {
			return 0
		}
		if a.Terminal() || (a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil) {
			continue
		}
		limit--
	}
	return limit
}

// track attaches the group's work in this reconcile (placements from
// index first on, in-place updates from inplaceFrom on) to the version's
// deployment, creating it when the group has work and there is none.
func (r *reconciler) track(res *reconcileResult, tg *state.TaskGroup, g *groupDeploy, first, inplaceFrom int) {
	if g == nil || g.halted && g.dep == nil {
		return
	}
	places, inplace := res.places[first:], res.inplace[inplaceFrom:]
	if len(places) == 0 && len(inplace) == 0 && (g.dep == nil || g.dep.TaskGroups[tg.Name] == nil) {
		return // nothing to roll out here: the group stays out of it
	}
	d := r.ensureDeployment()
	if d.TaskGroups[tg.Name] == nil {
		if r.out.deployment == nil {
			// An existing deployment gains a group: write it back.
			d = d.Copy()
			r.out.deployment = d
		}
		u := tg.Update
		ds := &state.DeploymentState{
			AutoRevert:       u.AutoRevert,
			AutoPromote:      u.AutoPromote,
			ProgressDeadline: int64(u.ProgressDeadline),
			DesiredTotal:     tg.Count,
		}
		if u.ProgressDeadline > 0 {
			ds.RequireProgressBy = r.now.Add(u.ProgressDeadline).UTC()
		}
		d.TaskGroups[tg.Name] = ds
	}
	ds := d.TaskGroups[tg.Name]
	for i := range places {
		places[i].deploymentID = d.ID
		if places[i].canary && ds.DesiredCanaries < tg.Update.Canary {
			if r.out.deployment == nil {
				d = d.Copy()
				r.out.deployment = d
				ds = d.TaskGroups[tg.Name]
			}
			ds.DesiredCanaries = tg.Update.Canary
			d.StatusDescription = DeploymentDescRunningNeedsPromo
			if u := tg.Update; u.AutoPromote {
				d.StatusDescription = DeploymentDescRunningAutoPromote
			}
		}
	}
	now := r.now
	for _, a := range inplace {
		if a.DeploymentID == d.ID {
			continue
		}
		a.DeploymentID = d.ID
		a.DeploymentStatus = &state.AllocDeploymentStatus{}
		if r.running(a.ID) {
			healthy := true
			a.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: &healthy, Timestamp: now}
		}
	}
}

// ensureDeployment returns the version's deployment, creating it (in the
// result) when there is none.
func (r *reconciler) ensureDeployment() *state.Deployment {
	if d := r.currentDeployment(); d != nil {
		return d
	}
	d := &state.Deployment{
		ID:                 r.newID(),
		Namespace:          r.job.Namespace,
		JobID:              r.job.ID,
		JobVersion:         r.job.Version,
		JobModifyIndex:     r.job.JobModifyIndex,
		JobSpecModifyIndex: r.job.JobModifyIndex,
		JobCreateIndex:     r.job.CreateIndex,
		TaskGroups:         map[string]*state.DeploymentState{},
		Status:             state.DeploymentStatusRunning,
		StatusDescription:  DeploymentDescRunning,
	}
	r.out.deployment = d
	return d
}

// running reports whether the job's allocation id runs on its client.
func (r *reconciler) running(id string) bool {
	for _, a := range r.allocs {
		if a.ID == id {
			return a.ClientStatus == state.AllocClientStatusRunning
		}
	}
	return false
}
