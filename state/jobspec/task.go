package jobspec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/schedhq/sched/state"
)

// task reads a `task "name" { ... }` block.
func (d *decoder) task(b *hcl.Block) *state.Task {
	c := d.content(b.Body, spec("driver user env meta kill_timeout kill_signal kind leader shutdown_delay",
		blk("config"), blk("env"), blk("meta"), blk("constraint"), blk("affinity"), blk("service"),
		blk("template"), blk("resources"), blk("dispatch_payload"), blk("lifecycle"), blk("logs"),
		blk("artifact"), blk("restart"), blk("volume_mount"), blk("action", "name")))
	t := &state.Task{Name: label(b)}
	d.str(c, "driver", &t.Driver)
	d.str(c, "user", &t.User)
	if cb := d.one(c, "config"); cb != nil {
		t.Config = d.freeform(cb.Body)
	}
	t.Env = d.stringMap(c, "env")
	t.Meta = d.stringMap(c, "meta")
	t.Constraints = d.constraints(c)
	t.Affinities = d.affinities(c)
	t.Services = d.services(c)
	for _, tb := range blocksOf(c, "template") {
		t.Templates = append(t.Templates, d.template(tb))
	}
	if rb := d.one(c, "resources"); rb != nil {
		t.Resources = d.resources(rb)
	}
	if pb := d.one(c, "dispatch_payload"); pb != nil {
		pc := d.content(pb.Body, spec("file"))
		t.DispatchPayload = &state.DispatchPayloadConfig{}
		d.str(pc, "file", &t.DispatchPayload.File)
	}
	d.duration(c, "kill_timeout", &t.KillTimeout)
	d.str(c, "kill_signal", &t.KillSignal)
	d.str(c, "kind", &t.Kind)
	d.boolean(c, "leader", &t.Leader)
	if lb := d.one(c, "lifecycle"); lb != nil {
		lc := d.content(lb.Body, spec("hook sidecar"))
		t.Lifecycle = &state.TaskLifecycleConfig{}
		d.str(lc, "hook", &t.Lifecycle.Hook)
		d.boolean(lc, "sidecar", &t.Lifecycle.Sidecar)
	}
	if lb := d.one(c, "logs"); lb != nil {
		lc := d.content(lb.Body, spec("disabled max_files max_file_size"))
		t.LogConfig = &state.LogConfig{}
		d.boolean(lc, "disabled", &t.LogConfig.Disabled)
		setInt(d, lc, "max_files", &t.LogConfig.MaxFiles)
		setInt(d, lc, "max_file_size", &t.LogConfig.MaxFileSizeMB)
	}
	for _, ab := range blocksOf(c, "artifact") {
		t.Artifacts = append(t.Artifacts, d.artifact(ab))
	}
	if rb := d.one(c, "restart"); rb != nil {
		t.RestartPolicy = d.restart(rb)
	}
	d.duration(c, "shutdown_delay", &t.ShutdownDelay)
	for _, vb := range blocksOf(c, "volume_mount") {
		vc := d.content(vb.Body, spec("volume destination read_only propagation_mode"))
		v := &state.VolumeMount{}
		d.str(vc, "volume", &v.Volume)
		d.str(vc, "destination", &v.Destination)
		d.boolean(vc, "read_only", &v.ReadOnly)
		d.str(vc, "propagation_mode", &v.PropagationMode)
		t.VolumeMounts = append(t.VolumeMounts, v)
	}
	for _, ab := range blocksOf(c, "action") {
		ac := d.content(ab.Body, spec("command args"))
		a := &state.Action{Name: label(ab)}
		d.str(ac, "command", &a.Command)
		d.strings(ac, "args", &a.Args)
		t.Actions = append(t.Actions, a)
	}
	return t
}

// template reads a template block. Its data is kept verbatim: the client
// renders it, so only HCL's own ${...} (var.*, local.*, functions) is
// evaluated here and {{ ... }} is left alone.
func (d *decoder) template(b *hcl.Block) *state.Template {
	c := d.content(b.Body, spec("source destination data change_mode change_signal splay perms "+
		"left_delimiter right_delimiter env"))
	t := &state.Template{}
	d.str(c, "source", &t.SourcePath)
	d.str(c, "destination", &t.DestPath)
	d.str(c, "data", &t.EmbeddedTmpl)
	d.str(c, "change_mode", &t.ChangeMode)
	d.str(c, "change_signal", &t.ChangeSignal)
	d.duration(c, "splay", &t.Splay)
	d.str(c, "perms", &t.Perms)
	d.str(c, "left_delimiter", &t.LeftDelim)
	d.str(c, "right_delimiter", &t.RightDelim)
	d.boolean(c, "env", &t.Envvars)
	return t
}

// resources reads a task's resources block, with its devices and (legacy)
// networks.
func (d *decoder) resources(b *hcl.Block) *state.Resources {
	c := d.content(b.Body, spec("cpu cores memory memory_max disk iops",
		blk("device", "name"), blk("network")))
	r := &state.Resources{}
	setInt(d, c, "cpu", &r.CPU)
	setInt(d, c, "cores", &r.Cores)
	setInt(d, c, "memory", &r.MemoryMB)
	setInt(d, c, "memory_max", &r.MemoryMaxMB)
	setInt(d, c, "disk", &r.DiskMB)
	setInt(d, c, "iops", &r.IOPS)
	for _, db := range blocksOf(c, "device") {
		dc := d.content(db.Body, spec("count", blk("constraint"), blk("affinity")))
		dev := &state.RequestedDevice{Name: label(db)}
		setInt(d, dc, "count", &dev.Count)
		dev.Constraints = d.constraints(dc)
		dev.Affinities = d.affinities(dc)
		r.Devices = append(r.Devices, dev)
	}
	for _, nb := range blocksOf(c, "network") {
		r.Networks = append(r.Networks, d.network(nb))
	}
	return r
}

// artifact reads an artifact block.
func (d *decoder) artifact(b *hcl.Block) *state.TaskArtifact {
	c := d.content(b.Body, spec("source destination mode options headers", blk("options"), blk("headers")))
	a := &state.TaskArtifact{}
	d.str(c, "source", &a.GetterSource)
	d.str(c, "destination", &a.RelativeDest)
	d.str(c, "mode", &a.GetterMode)
	a.GetterOptions = d.stringMap(c, "options")
	a.GetterHeaders = d.stringMap(c, "headers")
	return a
}
