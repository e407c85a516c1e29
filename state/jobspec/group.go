package jobspec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/schedhq/sched/state"
)

// group reads a `group "name" { ... }` block.
func (d *decoder) group(b *hcl.Block) *state.TaskGroup {
	c := d.content(b.Body, spec("count meta max_client_disconnect shutdown_delay stop_after_client_disconnect",
		blk("constraint"), blk("affinity"), blk("spread"), blk("meta"), blk("restart"), blk("reschedule"),
		blk("migrate"), blk("update"), blk("ephemeral_disk"), blk("network"), blk("service"),
		blk("scaling"), blk("volume", "name"), blk("task", "name")))
	tg := &state.TaskGroup{Name: label(b)}
	hasCount := setInt(d, c, "count", &tg.Count)
	tg.Constraints = d.constraints(c)
	tg.Affinities = d.affinities(c)
	tg.Spreads = d.spreads(c)
	tg.Meta = d.stringMap(c, "meta")
	if r := d.one(c, "restart"); r != nil {
		tg.RestartPolicy = d.restart(r)
	}
	if r := d.one(c, "reschedule"); r != nil {
		tg.ReschedulePolicy = d.reschedule(r)
	} else if d.jobReschedule != nil {
		tg.ReschedulePolicy = d.jobReschedule.Copy()
	}
	if m := d.one(c, "migrate"); m != nil {
		tg.Migrate = d.migrate(m)
	}
	if u := d.one(c, "update"); u != nil {
		tg.Update = d.update(u)
	}
	if e := d.one(c, "ephemeral_disk"); e != nil {
		tg.EphemeralDisk = d.ephemeralDisk(e)
	}
	for _, n := range blocksOf(c, "network") {
		tg.Networks = append(tg.Networks, d.network(n))
	}
	tg.Services = d.services(c)
	hasMin := false
	if s := d.one(c, "scaling"); s != nil {
		tg.Scaling, hasMin = d.scaling(s)
	}
	d.durationPtr(c, "max_client_disconnect", &tg.MaxClientDisconnect)
	d.durationPtr(c, "shutdown_delay", &tg.ShutdownDelay)
	d.durationPtr(c, "stop_after_client_disconnect", &tg.StopAfterClientDisconnect)
	for _, v := range blocksOf(c, "volume") {
		if tg.Volumes == nil {
			tg.Volumes = map[string]*state.VolumeRequest{}
		}
		if _, dup := tg.Volumes[label(v)]; dup {
			d.add(problem(v.DefRange, "Duplicate volume", "volume %q is declared twice in group %q", label(v), tg.Name))
			continue
		}
		tg.Volumes[label(v)] = d.volume(v)
	}
	for _, t := range blocksOf(c, "task") {
		tg.Tasks = append(tg.Tasks, d.task(t))
	}

	// Nomad's parse-time rule: an absent count is the scaling minimum when
	// there is one, else 1. An explicit count, even 0, is kept.
	if !hasCount {
		tg.Count = 1
		if hasMin {
			tg.Count = int(tg.Scaling.Min)
		}
	}
	return tg
}

// restart reads a restart block, of a group or of a task.
func (d *decoder) restart(b *hcl.Block) *state.RestartPolicy {
	c := d.content(b.Body, spec("attempts interval delay mode render_templates"))
	r := &state.RestartPolicy{}
	setInt(d, c, "attempts", &r.Attempts)
	d.duration(c, "interval", &r.Interval)
	d.duration(c, "delay", &r.Delay)
	d.str(c, "mode", &r.Mode)
	d.boolean(c, "render_templates", &r.RenderTemplates)
	return r
}

// reschedule reads a reschedule block, of a job or of a group: a group's
// sets its attributes over the job's block, as Nomad merges them, and a
// block with no job block above it sets them over the job type's
// defaults: `reschedule { delay = "1m" }` in a service job still
// reschedules without limit, in a batch job once in 24h, as in Nomad.
// (The delays it leaves out are filled in at canonicalization.)
func (d *decoder) reschedule(b *hcl.Block) *state.ReschedulePolicy {
	c := d.content(b.Body, spec("attempts interval delay delay_function max_delay unlimited"))
	r := &state.ReschedulePolicy{}
	if d.jobReschedule != nil {
		r = d.jobReschedule.Copy()
	} else if def := state.DefaultReschedulePolicy(d.jobType); def != nil {
		r.Attempts, r.Interval, r.Unlimited = def.Attempts, def.Interval, def.Unlimited
	}
	setInt(d, c, "attempts", &r.Attempts)
	d.duration(c, "interval", &r.Interval)
	d.duration(c, "delay", &r.Delay)
	d.str(c, "delay_function", &r.DelayFunction)
	d.duration(c, "max_delay", &r.MaxDelay)
	d.boolean(c, "unlimited", &r.Unlimited)
	return r
}

// migrate reads a migrate block.
func (d *decoder) migrate(b *hcl.Block) *state.MigrateStrategy {
	c := d.content(b.Body, spec("max_parallel health_check min_healthy_time healthy_deadline"))
	m := &state.MigrateStrategy{}
	setInt(d, c, "max_parallel", &m.MaxParallel)
	d.str(c, "health_check", &m.HealthCheck)
	d.duration(c, "min_healthy_time", &m.MinHealthyTime)
	d.duration(c, "healthy_deadline", &m.HealthyDeadline)
	return m
}

// ephemeralDisk reads an ephemeral_disk block.
func (d *decoder) ephemeralDisk(b *hcl.Block) *state.EphemeralDisk {
	c := d.content(b.Body, spec("sticky size migrate"))
	e := &state.EphemeralDisk{}
	d.boolean(c, "sticky", &e.Sticky)
	setInt(d, c, "size", &e.SizeMB)
	d.boolean(c, "migrate", &e.Migrate)
	return e
}

// network reads a network block, of a group or (legacy) of task resources.
// A port with a static number is reserved; any other port is dynamic and
// gets its number from the scheduler.
func (d *decoder) network(b *hcl.Block) *state.NetworkResource {
	c := d.content(b.Body, spec("mode mbits", blk("port", "label"), blk("dns")))
	n := &state.NetworkResource{}
	d.str(c, "mode", &n.Mode)
	setInt(d, c, "mbits", &n.MBits)
	for _, pb := range blocksOf(c, "port") {
		pc := d.content(pb.Body, spec("static to host_network"))
		p := state.Port{Label: label(pb)}
		static := setInt(d, pc, "static", &p.Value)
		setInt(d, pc, "to", &p.To)
		d.str(pc, "host_network", &p.HostNetwork)
		if static {
			n.ReservedPorts = append(n.ReservedPorts, p)
		} else {
			n.DynamicPorts = append(n.DynamicPorts, p)
		}
	}
	if db := d.one(c, "dns"); db != nil {
		dc := d.content(db.Body, spec("servers searches options"))
		n.DNS = &state.DNSConfig{}
		d.strings(dc, "servers", &n.DNS.Servers)
		d.strings(dc, "searches", &n.DNS.Searches)
		d.strings(dc, "options", &n.DNS.Options)
	}
	return n
}

// scaling reads a group's scaling block and whether it sets min, which a
// zero Min cannot tell. Like periodic, a scaling block is on unless it says
// `enabled = false`.
func (d *decoder) scaling(b *hcl.Block) (*state.ScalingPolicy, bool) {
	c := d.content(b.Body, spec("min max enabled", blk("policy")))
	s := &state.ScalingPolicy{Enabled: true}
	hasMin := setInt(d, c, "min", &s.Min)
	setInt(d, c, "max", &s.Max)
	d.boolean(c, "enabled", &s.Enabled)
	if p := d.one(c, "policy"); p != nil {
		s.Policy = d.freeform(p.Body)
	}
	return s, hasMin
}

// volume reads a group's `volume "name" { ... }` block.
func (d *decoder) volume(b *hcl.Block) *state.VolumeRequest {
	c := d.content(b.Body, spec("type source read_only access_mode attachment_mode per_alloc"))
	v := &state.VolumeRequest{Name: label(b)}
	d.str(c, "type", &v.Type)
	d.str(c, "source", &v.Source)
	d.boolean(c, "read_only", &v.ReadOnly)
	d.str(c, "access_mode", &v.AccessMode)
	d.str(c, "attachment_mode", &v.AttachmentMode)
	d.boolean(c, "per_alloc", &v.PerAlloc)
	return v
}
