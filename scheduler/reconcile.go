package scheduler

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/schedhq/sched/state"
)

// Descriptions the reconciler gives the allocations it stops.
const (
	descJobStopped   = "alloc not needed as job is stopped"
	descGroupRemoved = "alloc not needed due to job update"
	descCountReduced = "alloc not needed as task group count reduced"
	descMigrating    = "alloc is being migrated"
	descUpdating     = "alloc is being updated due to job update"
	descLost         = "alloc is lost since its node is down"
	descRescheduled  = "alloc was rescheduled because it failed"
	descNotNeeded    = "alloc not needed: replacement no longer required"
)

// placeKind says why a placement is made; annotations count by it.
type placeKind int

const (
	placeFresh placeKind = iota
	placeReschedule
	placeLost
	placeMigrate
	placeDestructive
	placeCanary
)

// stopRequest asks that an allocation be stopped.
type stopRequest struct {
	alloc *state.Allocation
	desc  string
	// lost marks the allocation lost (its node is gone or down).
	lost bool
}

// placeRequest asks for one new allocation of a group.
type placeRequest struct {
	tg   *state.TaskGroup
	name string
	kind placeKind
	// previous is the allocation the new one replaces, if any; the two
	// are linked through PreviousAllocation and NextAllocation.
	previous *state.Allocation
	// stopPrevious stops previous only if the placement succeeds, so a
	// failed destructive update or reschedule leaves things as they were.
	stopPrevious *stopRequest
	// reschedule adds a RescheduleTracker event with this delay.
	reschedule bool
	delay      time.Duration
	// deploymentID is the deployment the placement belongs to; canary
	// marks it a canary of that deployment.
	deploymentID string
	canary       bool
}

// reconcileResult is everything a job's allocations need, group by group.
type reconcileResult struct {
	stops   []stopRequest
	places  []placeRequest
	inplace []*state.Allocation
	// attrUpdates are allocations whose FollowupEvalID is set, written
	// with the plan.
	attrUpdates []*state.Allocation
	followups   []*state.Evaluation
	desired     map[string]*state.DesiredUpdates
	// deployment is created or changed with the plan (see
	// reconcile_deploy.go); nil when neither.
	deployment *state.Deployment
}

// reconciler compares a job's desired state with its allocations and
// decides, per task group, what to place, stop, update in place, update
// destructively, migrate, mark lost and reschedule now or later. It is
// pure: it reads only its inputs, and its output is in a deterministic
// order.
type reconciler struct {
	// job is the job as registered; nil (purged), stopped or a periodic or
	// parameterized template means every allocation is stopped.
	job   *state.Job
	batch bool
	eval  *state.Evaluation
	now   time.Time
	newID func() string
	// allocs are the job's allocations, terminal ones included.
	allocs []*state.Allocation
	// nodes holds the node of every allocation; a missing or nil entry
	// means the node is gone.
	nodes map[string]*state.Node
	// deployment is the job's latest deployment, nil when none.
	deployment *state.Deployment

	// out is the result being built.
	out *reconcileResult
}

// reconcile computes the result.
func (r *reconciler) reconcile() *reconcileResult {
	res := &reconcileResult{desired: map[string]*state.DesiredUpdates{}}
	r.out = res
	byGroup := map[string][]*state.Allocation{}
	for _, a := range r.allocs {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	for _, list := range byGroup {
		sortByName(list)
	}
	stopped := r.job == nil || r.job.Stop || r.job.IsPeriodic() || r.job.IsParameterized()
	var later []laterReschedule
	if !stopped {
		for _, tg := range r.job.TaskGroups {
			later = append(later, r.group(res, tg, byGroup[tg.Name])...)
		}
	}
	for _, name := range sortedKeys(byGroup) {
		if !stopped && r.job.LookupTaskGroup(name) != nil {
			continue
		}
		desc := descGroupRemoved
		if stopped {
			desc = descJobStopped
		}
		du := res.desiredFor(name)
		for _, a := range byGroup[name] {
			if a.Terminal() {
				continue
			}
			res.stops = append(res.stops, stopRequest{alloc: a, desc: desc, lost: r.nodeLost(a, nil)})
			du.Stop++
		}
	}
	if len(later) > 0 {
		evals, byAlloc := followupEvals(later, r.eval, r.job, r.now, r.newID)
		res.followups = evals
		for _, l := range later {
			c := l.alloc.CopySkipJob()
			c.FollowupEvalID = byAlloc[l.alloc.ID]
			c.ClientStatus, c.ClientDescription = "", ""
			res.attrUpdates = append(res.attrUpdates, c)
		}
	}
	return res
}

func (res *reconcileResult) desiredFor(group string) *state.DesiredUpdates {
	du := res.desired[group]
	if du == nil {
		du = &state.DesiredUpdates{}
		res.desired[group] = du
	}
	return du
}

// sortByName orders allocations by name index, then ID.
func sortByName(list []*state.Allocation) {
	slices.SortFunc(list, func(a, b *state.Allocation) int {
		return cmp.Or(cmp.Compare(allocIndex(a.Name), allocIndex(b.Name)), cmp.Compare(a.ID, b.ID))
	})
}

// nodeLost reports whether a live allocation's node is gone, down, or
// disconnected without the group tolerating disconnects.
func (r *reconciler) nodeLost(a *state.Allocation, tg *state.TaskGroup) bool {
	n := r.nodes[a.NodeID]
	switch {
	case n == nil:
		return true
	case n.Status == state.NodeStatusDown:
		return true
	case n.Status == state.NodeStatusDisconnected:
		return tg == nil || tg.MaxClientDisconnect == nil
	}
	return false
}

// migrating reports whether a live allocation was asked to leave its
// draining node, or, in the evaluation of an operator's stop (POST
// /v1/allocation/:id/stop), to be replaced wherever it runs.
func (r *reconciler) migrating(a *state.Allocation) bool {
	if !boolValue(a.DesiredTransition.Migrate) {
		return false
	}
	if r.eval != nil && r.eval.TriggeredBy == state.EvalTriggerAllocStop {
		return true
	}
	n := r.nodes[a.NodeID]
	return n != nil && (n.Drain || n.DrainStrategy != nil)
}

// group reconciles one task group and returns its delayed reschedules.
func (r *reconciler) group(res *reconcileResult, tg *state.TaskGroup, allocs []*state.Allocation) []laterReschedule {
	du := res.desiredFor(tg.Name)
	dg := r.groupDeployment(tg, allocs)
	if dg != nil {
		allocs = dg.withoutCanaries(allocs)
		dg.stopEndedCanaries(res, du)
	}
	firstPlace, firstInplace := len(res.places), len(res.inplace)
	var (
		// live are the allocations that count towards the group's count:
		// running or pending ones on healthy nodes, failed ones that are
		// not replaced (yet), and finished batch ones.
		live                           []*state.Allocation
		lost, migrate, rescheduleNow   []*state.Allocation
		verdicts                       = map[string]rescheduleVerdict{}
		later                          []laterReschedule
		completeBatch                  = map[string]bool{}
		waitingReschedule, keptFailure = map[string]bool{}, map[string]bool{}
	)
	for _, a := range allocs {
		if a.ServerTerminal() {
			// A batch allocation that finished before it was stopped
			// did its work: it still counts, and is never run again.
			if r.batch && a.ClientStatus == state.AllocClientStatusComplete {
				live = append(live, a)
				completeBatch[a.ID] = true
			}
			continue
		}
		switch a.ClientStatus {
		case state.AllocClientStatusComplete:
			if r.batch {
				live = append(live, a)
				completeBatch[a.ID] = true
			}
			continue
		case state.AllocClientStatusLost:
			continue
		case state.AllocClientStatusFailed:
			if a.NextAllocation != "" {
				continue
			}
			v := judgeReschedule(a, tg.ReschedulePolicy, r.now, r.eval.ID, r.eval.ForceReschedule)
			switch {
			case v.now:
				verdicts[a.ID] = v
				rescheduleNow = append(rescheduleNow, a)
			case v.later:
				live = append(live, a)
				waitingReschedule[a.ID] = true
				if a.FollowupEvalID == "" {
					later = append(later, laterReschedule{alloc: a, at: v.at})
				}
			default:
				live = append(live, a)
				keptFailure[a.ID] = true
			}
			continue
		}
		switch {
		case r.nodeLost(a, tg):
			lost = append(lost, a)
		case r.migrating(a):
			migrate = append(migrate, a)
		default:
			live = append(live, a)
		}
	}

	// Migrations go MaxParallel at a time; the others stay put for now.
	if limit := migrateLimit(tg); len(migrate) > limit {
		live = append(live, migrate[limit:]...)
		migrate = migrate[:limit]
		sortByName(live)
	}
	if dg != nil {
		live = r.stopReplaced(res, du, dg, live)
	}

	stopped := map[string]bool{}
	if excess := len(live) - tg.Count; excess > 0 {
		for _, a := range stopCandidates(live, completeBatch, waitingReschedule, keptFailure, excess) {
			res.stops = append(res.stops, stopRequest{alloc: a, desc: descCountReduced})
			stopped[a.ID] = true
			du.Stop++
		}
		live = slices.DeleteFunc(live, func(a *state.Allocation) bool { return stopped[a.ID] })
		later = slices.DeleteFunc(later, func(l laterReschedule) bool { return stopped[l.alloc.ID] })
	}

	names := make([]string, 0, len(live))
	for _, a := range live {
		names = append(names, a.Name)
	}
	ni := newNameIndex(r.jobID(), tg.Name, names)
	need := max(tg.Count-len(live), 0)

	// Replacements first: they keep their names and histories.
	for _, a := range migrate {
		res.stops = append(res.stops, stopRequest{alloc: a, desc: descMigrating})
		if need > 0 {
			need--
			ni.take(a.Name)
			res.places = append(res.places, placeRequest{tg: tg, name: a.Name, kind: placeMigrate, previous: a})
			du.Migrate++
		} else {
			du.Stop++
		}
	}
	for _, a := range lost {
		res.stops = append(res.stops, stopRequest{alloc: a, desc: descLost, lost: true})
		du.Stop++
		if need > 0 {
			need--
			ni.take(a.Name)
			res.places = append(res.places, placeRequest{tg: tg, name: a.Name, kind: placeLost, previous: a})
			du.Place++
		}
	}
	for _, a := range rescheduleNow {
		if need == 0 {
			res.stops = append(res.stops, stopRequest{alloc: a, desc: descNotNeeded})
			du.Stop++
			continue
		}
		need--
		ni.take(a.Name)
		v := verdicts[a.ID]
		res.places = append(res.places, placeRequest{
			tg: tg, name: a.Name, kind: placeReschedule, previous: a,
			stopPrevious: &stopRequest{alloc: a, desc: descRescheduled},
			reschedule:   true, delay: v.delay,
		})
		du.Place++
	}
	for ; need > 0; need-- {
		res.places = append(res.places, placeRequest{tg: tg, name: ni.next(), kind: placeFresh})
		du.Place++
	}

	// Then what stays: unchanged, updated in place, or replaced (rolled
	// out through the deployment, see reconcile_deploy.go).
	var outdated, outdatedFailed []*state.Allocation
	for _, a := range live {
		if completeBatch[a.ID] || r.upToDate(a) {
			du.Ignore++
			continue
		}
		if waitingReschedule[a.ID] || keptFailure[a.ID] {
			// A failed allocation of an older version whose tasks
			// changed is replaced by the new version now, as a
			// destructive update (Nomad's rule), whether it waits for
			// its reschedule or has none left: the new version may be
			// the fix. Without a task change nothing in place would
			// make it run again, so it keeps waiting.
			if tasksUpdated(a.Job, r.job, tg.Name) {
				outdatedFailed = append(outdatedFailed, a)
			} else {
				du.Ignore++
			}
			continue
		}
		if !tasksUpdated(a.Job, r.job, tg.Name) && r.nodeStillMatches(a) {
			c := a.CopySkipJob()
			c.Job = r.job
			c.ClientStatus, c.ClientDescription = "", ""
			res.inplace = append(res.inplace, c)
			du.InPlaceUpdate++
			continue
		}
		outdated = append(outdated, a)
	}
	// Failed ones first: replacing them takes nothing running away.
	r.rollout(res, tg, du, dg, append(outdatedFailed, outdated...))
	r.track(res, tg, dg, firstPlace, firstInplace)
	return withoutReplaced(later, res.places[firstPlace:])
}

// withoutReplaced drops from later the delayed reschedules of allocations
// that places replace: their replacement is already made.
func withoutReplaced(later []laterReschedule, places []placeRequest) []laterReschedule {
	replaced := map[string]bool{}
	for _, p := range places {
		if p.previous != nil {
			replaced[p.previous.ID] = true
		}
	}
	return slices.DeleteFunc(later, func(l laterReschedule) bool { return replaced[l.alloc.ID] })
}

// jobID is the job's ID, for allocation names.
func (r *reconciler) jobID() string { return r.job.ID }

// upToDate reports whether an allocation runs the job's current version.
func (r *reconciler) upToDate(a *state.Allocation) bool {
	return a.Job != nil && a.Job.JobModifyIndex == r.job.JobModifyIndex && a.Job.CreateIndex == r.job.CreateIndex
}

// nodeStillMatches reports whether an allocation's node is still in the
// job's node pool and datacenters, which an in-place update requires.
func (r *reconciler) nodeStillMatches(a *state.Allocation) bool {
	n := r.nodes[a.NodeID]
	return n != nil && poolMatches(r.job.NodePool, n) && datacenterMatches(r.job.Datacenters, n.Datacenter)
}

// migrateLimit is how many allocations of a group migrate at a time: its
// Migrate.MaxParallel, or all when it has no migrate block (batch jobs).
func migrateLimit(tg *state.TaskGroup) int {
	if tg.Migrate == nil || tg.Migrate.MaxParallel <= 0 {
		return math.MaxInt
	}
	return tg.Migrate.MaxParallel
}

// stopCandidates picks n allocations to stop when a group has more than
// its count: failed ones first (nothing runs there), then running ones
// from the highest name index down, so the names 0..count-1 stay. Finished
// batch allocations are never picked: there is nothing to stop.
func stopCandidates(live []*state.Allocation, complete, waiting, kept map[string]bool, n int) []*state.Allocation {
	var failed, running []*state.Allocation
	for _, a := range live {
		switch {
		case complete[a.ID]:
		case waiting[a.ID] || kept[a.ID]:
			failed = append(failed, a)
		default:
			running = append(running, a)
		}
	}
	slices.Reverse(failed)
	slices.Reverse(running)
	out := append(failed, running...)
	return out[:min(n, len(out))]
}
