package state

import (
	"slices"
	"time"
)

// Deployment statuses.
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
	DeploymentStatusPending    = "pending"
	DeploymentStatusBlocked    = "blocked"
	DeploymentStatusUnblocking = "unblocking"
)

// Deployment tracks the rollout of one job version.
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	IsMultiregion      bool
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	CreateIndex        uint64
	ModifyIndex        uint64
	// CreateTime and ModifyTime are Unix nanoseconds from the leader's clock.
	CreateTime int64
	ModifyTime int64
}

// Active reports whether the deployment is still in progress.
func (d *Deployment) Active() bool {
	switch d.Status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusBlocked,
		DeploymentStatusUnblocking, DeploymentStatusPending:
		return true
	}
	return false
}

// DeploymentState is one task group's progress within a deployment.
type DeploymentState struct {
	AutoRevert       bool
	AutoPromote      bool
	ProgressDeadline int64
	// RequireProgressBy is when the group must next make progress (an
	// allocation becoming healthy) or fail; zero while it has no deadline.
	// A time (not Unix nanoseconds) on the wire, as Nomad's clients read it.
	RequireProgressBy time.Time
	Promoted          bool
	PlacedCanaries    []string
	DesiredCanaries   int
	DesiredTotal      int
	PlacedAllocs      int
	HealthyAllocs     int
	UnhealthyAllocs   int
}

// PromoteGroups returns the groups a promotion changes: every group with
// unpromoted canaries when all is set, else groups, which must each have
// canaries. Every group returned must have DesiredCanaries canaries that
// healthy reports healthy. The error is a ValidationError naming the
// field (Groups, Groups[i]).
func (d *Deployment) PromoteGroups(all bool, groups []string, healthy func(allocID string) bool) ([]string, error) {
	if all {
		groups = nil
		for name, ds := range d.TaskGroups {
			if ds.DesiredCanaries > 0 && !ds.Promoted {
				groups = append(groups, name)
			}
		}
		slices.Sort(groups)
		if len(groups) == 0 {
			return nil, Invalidf("All", "deployment %q has no canaries to promote", d.ID)
		}
	}
	if len(groups) == 0 {
		return nil, Invalidf("Groups", "no group to promote")
	}
	for i, name := range groups {
		ds := d.TaskGroups[name]
		if ds == nil || ds.DesiredCanaries == 0 {
			return nil, Invalidf(Fieldf("Groups", i, ""), "task group %q has no canaries in deployment %q", name, d.ID)
		}
		n := 0
		for _, id := range ds.PlacedCanaries {
			if healthy(id) {
				n++
			}
		}
		if n < ds.DesiredCanaries {
			return nil, Invalidf(Fieldf("Groups", i, ""), "task group %q has %d/%d healthy canaries", name, n, ds.DesiredCanaries)
		}
	}
	return groups, nil
}

// LatestStableVersion returns the version an automatic revert of job goes
// back to: among versions (the job's retained versions), the newest one
// older than job's version, of the same job instance, marked stable, whose
// spec differs from job's; nil when there is none.
func LatestStableVersion(job *Job, versions []*Job) *Job {
	var best *Job
	for _, v := range versions {
		if !v.Stable || v.Version >= job.Version || v.CreateIndex != job.CreateIndex || !job.SpecChanged(v) {
			continue
		}
		if best == nil || v.Version > best.Version {
			best = v
		}
	}
	return best
}
