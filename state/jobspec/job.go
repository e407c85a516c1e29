package jobspec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/schedhq/sched/state"
)

// job reads a `job "id" { ... }` block.
func (d *decoder) job(b *hcl.Block) *state.Job {
	c := d.content(b.Body, spec("name region namespace node_pool datacenters type priority all_at_once meta",
		blk("meta"), blk("constraint"), blk("affinity"), blk("spread"), blk("update"), blk("reschedule"),
		blk("periodic"), blk("parameterized"), blk("group", "name")))
	job := &state.Job{ID: label(b)}
	d.str(c, "name", &job.Name)
	d.str(c, "region", &job.Region)
	d.str(c, "namespace", &job.Namespace)
	d.str(c, "node_pool", &job.NodePool)
	d.strings(c, "datacenters", &job.Datacenters)
	d.str(c, "type", &job.Type)
	d.jobType = job.Type
	if d.jobType == "" {
		d.jobType = state.JobTypeService
	}
	setInt(d, c, "priority", &job.Priority)
	d.boolean(c, "all_at_once", &job.AllAtOnce)
	job.Meta = d.stringMap(c, "meta")
	job.Constraints = d.constraints(c)
	job.Affinities = d.affinities(c)
	job.Spreads = d.spreads(c)
	if u := d.one(c, "update"); u != nil {
		job.Update = d.update(u)
	}
	d.jobUpdate = job.Update
	defer func() { d.jobUpdate = nil }()
	if r := d.one(c, "reschedule"); r != nil {
		d.jobReschedule = d.reschedule(r)
		defer func() { d.jobReschedule = nil }()
	}
	if p := d.one(c, "periodic"); p != nil {
		job.Periodic = d.periodic(p)
	}
	if p := d.one(c, "parameterized"); p != nil {
		job.ParameterizedJob = d.parameterized(p)
	}
	for _, g := range blocksOf(c, "group") {
		job.TaskGroups = append(job.TaskGroups, d.group(g))
	}
	return job
}

// update reads an update block, of a job or of a group. A block without
// max_parallel gets the job block's (in a group), else 1, as in Nomad: an
// explicit max_parallel = 0 is what turns deployments off.
func (d *decoder) update(b *hcl.Block) *state.UpdateStrategy {
	c := d.content(b.Body, spec("max_parallel health_check min_healthy_time healthy_deadline "+
		"progress_deadline auto_revert auto_promote canary stagger"))
	u := &state.UpdateStrategy{MaxParallel: 1}
	if d.jobUpdate != nil {
		u.MaxParallel = d.jobUpdate.MaxParallel
	}
	setInt(d, c, "max_parallel", &u.MaxParallel)
	d.str(c, "health_check", &u.HealthCheck)
	d.duration(c, "min_healthy_time", &u.MinHealthyTime)
	d.duration(c, "healthy_deadline", &u.HealthyDeadline)
	d.duration(c, "progress_deadline", &u.ProgressDeadline)
	d.boolean(c, "auto_revert", &u.AutoRevert)
	d.boolean(c, "auto_promote", &u.AutoPromote)
	setInt(d, c, "canary", &u.Canary)
	d.duration(c, "stagger", &u.Stagger)
	return u
}

// periodic reads a periodic block. A periodic block is on unless it says
// `enabled = false` (Nomad's rule), and cron specs make it a cron schedule.
func (d *decoder) periodic(b *hcl.Block) *state.PeriodicConfig {
	c := d.content(b.Body, spec("cron crons enabled prohibit_overlap time_zone"))
	p := &state.PeriodicConfig{Enabled: true}
	d.str(c, "cron", &p.Spec)
	d.strings(c, "crons", &p.Specs)
	if p.Spec != "" || len(p.Specs) > 0 {
		p.SpecType = state.PeriodicSpecCron
	}
	d.boolean(c, "enabled", &p.Enabled)
	d.boolean(c, "prohibit_overlap", &p.ProhibitOverlap)
	d.str(c, "time_zone", &p.TimeZone)
	return p
}

// parameterized reads a parameterized block.
func (d *decoder) parameterized(b *hcl.Block) *state.ParameterizedJobConfig {
	c := d.content(b.Body, spec("payload meta_required meta_optional"))
	p := &state.ParameterizedJobConfig{}
	d.str(c, "payload", &p.Payload)
	d.strings(c, "meta_required", &p.MetaRequired)
	d.strings(c, "meta_optional", &p.MetaOptional)
	return p
}
