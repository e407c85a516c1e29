package scheduler

import (
	"github.com/schedhq/sched/state"
)

// Update verbs of TaskGroupDiff.Updates, as Nomad's plan output names
// them.
const (
	UpdateTypeIgnore            = "ignore"
	UpdateTypeCreate            = "create"
	UpdateTypeDestroy           = "destroy"
	UpdateTypeMigrate           = "migrate"
	UpdateTypeCanary            = "canary"
	UpdateTypeInplaceUpdate     = "in-place update"
	UpdateTypeDestructiveUpdate = "create/destroy update"
)

// Task diff annotations: what a task's change forces.
const (
	AnnotationForcesCreate            = "forces create"
	AnnotationForcesDestroy           = "forces destroy"
	AnnotationForcesInplaceUpdate     = "forces in-place update"
	AnnotationForcesDestructiveUpdate = "forces create/destroy update"
)

// AnnotateDiff fills in what the plan endpoint shows next to a job diff:
// each task group's Updates (verb to count, from the plan's annotations;
// zero counts left out) and each changed task's Annotations (whether the
// change forces a create, a destroy, an in-place or a create/destroy
// update). oldJob is the registered job (nil when new), newJob the
// proposed one.
func AnnotateDiff(diff *state.JobDiff, oldJob, newJob *state.Job, ann *state.PlanAnnotations) {
	if diff == nil {
		return
	}
	for _, tgd := range diff.TaskGroups {
		if ann != nil {
			if du := ann.DesiredTGUpdates[tgd.Name]; du != nil {
				tgd.Updates = updatesOf(du)
			}
		}
		var oldTG, newTG *state.TaskGroup
		if oldJob != nil {
			oldTG = oldJob.LookupTaskGroup(tgd.Name)
		}
		if newJob != nil {
			newTG = newJob.LookupTaskGroup(tgd.Name)
		}
		for _, td := range tgd.Tasks {
			switch td.Type {
			case state.DiffTypeAdded:
				td.Annotations = append(td.Annotations, AnnotationForcesCreate)
			case state.DiffTypeDeleted:
				td.Annotations = append(td.Annotations, AnnotationForcesDestroy)
			case state.DiffTypeEdited:
				var ot, nt *state.Task
				if oldTG != nil {
					ot = oldTG.LookupTask(td.Name)
				}
				if newTG != nil {
					nt = newTG.LookupTask(td.Name)
				}
				if ot == nil || nt == nil || taskUpdated(ot, nt) {
					td.Annotations = append(td.Annotations, AnnotationForcesDestructiveUpdate)
				} else {
					td.Annotations = append(td.Annotations, AnnotationForcesInplaceUpdate)
				}
			}
		}
	}
}

// updatesOf turns a group's counts into the verb map of a diff.
func updatesOf(du *state.DesiredUpdates) map[string]uint64 {
	out := map[string]uint64{}
	for verb, n := range map[string]uint64{
		UpdateTypeIgnore:            du.Ignore,
		UpdateTypeCreate:            du.Place,
		UpdateTypeDestroy:           du.Stop,
		UpdateTypeMigrate:           du.Migrate,
		UpdateTypeCanary:            du.Canary,
		UpdateTypeInplaceUpdate:     du.InPlaceUpdate,
		UpdateTypeDestructiveUpdate: du.DestructiveUpdate,
	} {
		if n > 0 {
			out[verb] = n
		}
	}
	return out
}
