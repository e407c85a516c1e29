package state

import "time"

// Defaults that Canonicalize fills into a job. They are exported so the
// scheduler and the client agree with the server on what an absent value
// means.
const (
	// DefaultEphemeralDiskMB is a group's scratch disk when none is asked for.
	DefaultEphemeralDiskMB = 300
	// DefaultTaskCPU is a task's CPU share in MHz when it asks for none.
	DefaultTaskCPU = 100
	// DefaultTaskMemoryMB is a task's memory when it asks for none.
	DefaultTaskMemoryMB = 300
	// DefaultLogMaxFiles and DefaultLogMaxFileSizeMB bound a task's rotated
	// logs, so the logs of a chatty task cannot fill the ephemeral disk.
	DefaultLogMaxFiles      = 10
	DefaultLogMaxFileSizeMB = 10
	// DefaultTemplateSplay spreads template-triggered restarts over time so
	// one changed key does not restart every allocation at once.
	DefaultTemplateSplay = 5 * time.Second
	// DefaultTemplatePerms is the file mode of a rendered template.
	DefaultTemplatePerms = "0644"
	// DefaultTemplateLeftDelim and DefaultTemplateRightDelim are the usual
	// Go template delimiters.
	DefaultTemplateLeftDelim  = "{{"
	DefaultTemplateRightDelim = "}}"
	// ServiceProviderSched is the built-in service catalog, and the only
	// provider sched serves.
	ServiceProviderSched = "sched"
	// ServiceProviderNomad is Nomad's name for its built-in catalog: jobs
	// written for Nomad say it, and it means sched's (Canonicalize
	// replaces it).
	ServiceProviderNomad = "nomad"
	// DefaultServiceAddressMode lets the client pick the service address.
	DefaultServiceAddressMode = "auto"
	// NetworkModeHost shares the node's network namespace: the default mode.
	NetworkModeHost = "host"
	// DefaultAffinityWeight and DefaultSpreadWeight are the weights of an
	// affinity or spread that states none.
	DefaultAffinityWeight = 50
	DefaultSpreadWeight   = 50
	// DefaultPeriodicTimeZone is the zone a periodic spec is read in.
	DefaultPeriodicTimeZone = "UTC"
	// DefaultArtifactMode lets the getter decide between file and directory.
	DefaultArtifactMode = "any"
	// ScalingPolicyTypeHorizontal scales a group's count: the default type.
	ScalingPolicyTypeHorizontal = "horizontal"
	// DefaultConstraintOperand is the operand of a constraint or affinity
	// that states none: equality.
	DefaultConstraintOperand = "="
)

// Update health check modes.
const (
	UpdateHealthCheckChecks     = "checks"
	UpdateHealthCheckTaskStates = "task_states"
	UpdateHealthCheckManual     = "manual"
)

// DefaultRestartPolicy returns the restart policy a group of a job of type
// jobType gets when it states none:
//
//   - service and system: 2 attempts in 30m, 15s apart, then fail;
//   - batch and sysbatch: 3 attempts in 24h, 15s apart, then fail.
//
// Batch work is expected to finish, so it is retried more patiently.
func DefaultRestartPolicy(jobType string) *RestartPolicy {
	switch jobType {
	case JobTypeBatch, JobTypeSysBatch:
		return &RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
	default:
		return &RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartPolicyModeFail}
	}
}

// DefaultReschedulePolicy returns the reschedule policy a group of a job of
// type jobType gets when it states none:
//
//   - service: unlimited attempts, 30s delay growing exponentially to 1h;
//   - batch: 1 attempt in 24h after a constant 5s delay;
//   - system and sysbatch: nil, since they run on every node and have
//     nowhere else to go.
func DefaultReschedulePolicy(jobType string) *ReschedulePolicy {
	switch jobType {
	case JobTypeService:
		return &ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: DelayFunctionExponential, MaxDelay: time.Hour, Unlimited: true}
	case JobTypeBatch:
		return &ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: DelayFunctionConstant}
	default:
		return nil
	}
}

// DefaultUpdateStrategy returns the rolling update of a service group that
// states none: one allocation at a time, 30s apart, healthy when its checks
// pass for 10s within 5m, and the deployment fails when no allocation
// becomes healthy for 10m.
func DefaultUpdateStrategy() *UpdateStrategy {
	return &UpdateStrategy{
		Stagger:          30 * time.Second,
		MaxParallel:      1,
		HealthCheck:      UpdateHealthCheckChecks,
		MinHealthyTime:   10 * time.Second,
		HealthyDeadline:  5 * time.Minute,
		ProgressDeadline: 10 * time.Minute,
	}
}

// DefaultMigrateStrategy returns how a service group leaves a draining node
// when it states nothing: one allocation at a time, each replacement healthy
// by its checks for 10s within 5m before the next one moves.
func DefaultMigrateStrategy() *MigrateStrategy {
	return &MigrateStrategy{
		MaxParallel:     1,
		HealthCheck:     UpdateHealthCheckChecks,
		MinHealthyTime:  10 * time.Second,
		HealthyDeadline: 5 * time.Minute,
	}
}

// Canonicalize fills the defaults a Nomad user expects into a job that the
// HTTP layer just decoded, before Validate. It mutates j, which the caller
// owns; it never allocates objects shared between groups or tasks, so the
// result may be changed piecewise afterwards. The defaults:
//
// Job: Namespace "default", Region "global", NodePool "default", Priority 50
// when 0, Type "service" when empty, Datacenters ["*"] when empty (any
// datacenter), Name = ID when empty. Periodic gets SpecType "cron" and
// TimeZone "UTC" when empty; ParameterizedJob gets Payload "optional".
// Constraints and affinities without an operand get "="; affinities and
// spreads without a weight get 50. Nil maps stay nil.
//
// Task group: see canonicalize on TaskGroup below: restart, reschedule,
// migrate and update policies by job type, a 300 MB ephemeral disk, network
// mode "host", service provider "sched".
//
// Task: KillTimeout 5s when 0 (KillSignal stays empty: the client sends
// SIGINT), logs 10 files of 10 MB, Resources CPU 100 MHz and MemoryMB 300
// for a nil block or zero fields, the group's restart policy when nil,
// template ChangeMode "restart", Splay 5s, Perms "0644".
//
// Zero numbers cannot be told apart from absent ones in these types; where a
// zero is meaningful (restart Attempts and Delay, reschedule Attempts and
// Interval, update MaxParallel and Canary), a given block keeps its zero and
// only an absent block gets the default.
func (j *Job) Canonicalize() {
	if j == nil {
		return
	}
	if j.Update != nil && j.Update.MaxParallel == MaxParallelUnset {
		j.Update.MaxParallel = DefaultUpdateStrategy().MaxParallel
	}
	if j.Namespace == "" {
		j.Namespace = DefaultNamespace
	}
	if j.Region == "" {
		j.Region = DefaultRegion
	}
	if j.NodePool == "" {
		j.NodePool = DefaultNodePool
	}
	if j.Priority == 0 {
		j.Priority = DefaultJobPriority
	}
	if j.Type == "" {
		j.Type = JobTypeService
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{"*"}
	}
	if j.Name == "" {
		j.Name = j.ID
	}
	if p := j.Periodic; p != nil {
		if p.SpecType == "" {
			p.SpecType = PeriodicSpecCron
		}
		if p.TimeZone == "" {
			p.TimeZone = DefaultPeriodicTimeZone
		}
	}
	if pj := j.ParameterizedJob; pj != nil && pj.Payload == "" {
		pj.Payload = DispatchPayloadOptional
	}
	canonicalizePlacement(j.Constraints, j.Affinities, j.Spreads)
	for _, tg := range j.TaskGroups {
		if tg != nil {
			tg.canonicalize(j)
		}
	}
}

// canonicalize fills a group's defaults from its job:
//
//   - RestartPolicy: DefaultRestartPolicy(job type) when nil; a given one
//     gets Mode "fail" and the default Interval when those are empty.
//   - ReschedulePolicy: DefaultReschedulePolicy(job type) when nil; a given
//     one of a service or batch job gets the default DelayFunction, Delay and
//     (for growing delays) MaxDelay when those are empty, and the default
//     Attempts, Interval and Unlimited when its JSON left them out.
//   - EphemeralDisk: SizeMB 300 when nil or 0.
//   - Migrate (service jobs): DefaultMigrateStrategy when nil, its zero
//     fields from it otherwise.
//   - Update: a MaxParallel of MaxParallelUnset becomes 1 in the job's
//     block and the job block's in a group's (1 when the job has none);
//     then the job's Update with the group's non-zero fields over it;
//     for service jobs, DefaultUpdateStrategy when both are nil, and its
//     Stagger, HealthCheck, MinHealthyTime, HealthyDeadline and
//     ProgressDeadline where the merge left them zero; for system jobs,
//     the default Stagger where a merged block has none.
//   - Networks: Mode "host" when empty.
//   - Scaling: Type "horizontal" when empty.
func (tg *TaskGroup) canonicalize(job *Job) {
	if tg.RestartPolicy == nil {
		tg.RestartPolicy = DefaultRestartPolicy(job.Type)
	} else {
		def := DefaultRestartPolicy(job.Type)
		if tg.RestartPolicy.Mode == "" {
			tg.RestartPolicy.Mode = def.Mode
		}
		if tg.RestartPolicy.Interval == 0 {
			tg.RestartPolicy.Interval = def.Interval
		}
	}

	def := DefaultReschedulePolicy(job.Type)
	switch rp := tg.ReschedulePolicy; {
	case rp == nil:
		tg.ReschedulePolicy = def
	case def != nil:
		if rp.unset&rescheduleUnsetAttempts != 0 {
			rp.Attempts = def.Attempts
		}
		if rp.unset&rescheduleUnsetInterval != 0 {
			rp.Interval = def.Interval
		}
		if rp.unset&rescheduleUnsetUnlimited != 0 {
			rp.Unlimited = def.Unlimited
		}
		if rp.DelayFunction == "" {
			rp.DelayFunction = def.DelayFunction
		}
		if rp.Delay == 0 {
			rp.Delay = def.Delay
		}
		if rp.MaxDelay == 0 && rp.DelayFunction != DelayFunctionConstant {
			// A growing delay needs a ceiling; a constant one ignores it.
			rp.MaxDelay = max(time.Hour, rp.Delay)
		}
	}

	if tg.ReschedulePolicy != nil {
		tg.ReschedulePolicy.unset = 0
	}

	if tg.EphemeralDisk == nil {
		tg.EphemeralDisk = &EphemeralDisk{}
	}
	if tg.EphemeralDisk.SizeMB == 0 {
		tg.EphemeralDisk.SizeMB = DefaultEphemeralDiskMB
	}

	if job.Type == JobTypeService {
		def := DefaultMigrateStrategy()
		if tg.Migrate == nil {
			tg.Migrate = def
		} else {
			m := tg.Migrate
			m.MaxParallel = orDefault(m.MaxParallel, def.MaxParallel)
			m.HealthCheck = orDefault(m.HealthCheck, def.HealthCheck)
			m.MinHealthyTime = orDefault(m.MinHealthyTime, def.MinHealthyTime)
			m.HealthyDeadline = orDefault(m.HealthyDeadline, def.HealthyDeadline)
		}
	}

	tg.Update = mergeUpdate(job.Update, tg.Update)
	if job.Type == JobTypeService {
		def := DefaultUpdateStrategy()
		if tg.Update == nil {
			tg.Update = def
		} else {
			u := tg.Update
			u.Stagger = orDefault(u.Stagger, def.Stagger)
			u.HealthCheck = orDefault(u.HealthCheck, def.HealthCheck)
			u.MinHealthyTime = orDefault(u.MinHealthyTime, def.MinHealthyTime)
			u.HealthyDeadline = orDefault(u.HealthyDeadline, def.HealthyDeadline)
			u.ProgressDeadline = orDefault(u.ProgressDeadline, def.ProgressDeadline)
		}
	}
	if job.Type == JobTypeSystem && tg.Update != nil {
		// A system job's update block is a rolling update (max_parallel
		// at a time, stagger apart); Nomad's default stagger applies.
		tg.Update.Stagger = orDefault(tg.Update.Stagger, DefaultUpdateStrategy().Stagger)
	}

	canonicalizeNetworks(tg.Networks)
	canonicalizeServices(tg.Services)
	canonicalizePlacement(tg.Constraints, tg.Affinities, tg.Spreads)
	if tg.Scaling != nil && tg.Scaling.Type == "" {
		tg.Scaling.Type = ScalingPolicyTypeHorizontal
	}
	for _, t := range tg.Tasks {
		if t != nil {
			t.canonicalize(tg)
		}
	}
}

// mergeUpdate returns a fresh strategy: the job's, overridden by the group's
// non-zero fields. It returns nil when both are nil. A group cannot turn off
// a job's AutoRevert or AutoPromote, as a false is indistinguishable from an
// unset one.
func mergeUpdate(job, group *UpdateStrategy) *UpdateStrategy {
	if job == nil && group == nil {
		return nil
	}
	var u UpdateStrategy
	if job != nil {
		u = *job
	}
	if group == nil {
		return &u
	}
	u.Stagger = orDefault(group.Stagger, u.Stagger)
	switch {
	case group.MaxParallel != MaxParallelUnset:
		u.MaxParallel = orDefault(group.MaxParallel, u.MaxParallel)
	case job == nil:
		u.MaxParallel = DefaultUpdateStrategy().MaxParallel
	}
	u.HealthCheck = orDefault(group.HealthCheck, u.HealthCheck)
	u.MinHealthyTime = orDefault(group.MinHealthyTime, u.MinHealthyTime)
	u.HealthyDeadline = orDefault(group.HealthyDeadline, u.HealthyDeadline)
	u.ProgressDeadline = orDefault(group.ProgressDeadline, u.ProgressDeadline)
	u.Canary = orDefault(group.Canary, u.Canary)
	u.AutoRevert = u.AutoRevert || group.AutoRevert
	u.AutoPromote = u.AutoPromote || group.AutoPromote
	return &u
}

// canonicalize fills a task's defaults from its group:
//
//   - KillTimeout 5s when 0; KillSignal stays empty (the client sends
//     SIGINT).
//   - LogConfig: 10 files of 10 MB when nil, zero fields from those.
//   - Resources: CPU 100 MHz and MemoryMB 300 when nil; in a given block, a
//     zero CPU (unless whole Cores are asked for) and a zero MemoryMB get
//     those defaults. Networks get Mode "host".
//   - RestartPolicy: a copy of the group's when nil.
//   - Templates: ChangeMode "restart", Splay 5s, Perms "0644", delimiters
//     "{{" and "}}" when empty.
//   - Services: Provider "sched" and AddressMode "auto" when empty; check
//     InitialStatus stays empty (the check starts critical).
//   - Artifacts: GetterMode "any" when empty.
func (t *Task) canonicalize(tg *TaskGroup) {
	if t.KillTimeout == 0 {
		t.KillTimeout = DefaultKillTimeout
	}
	if t.LogConfig == nil {
		t.LogConfig = &LogConfig{}
	}
	t.LogConfig.MaxFiles = orDefault(t.LogConfig.MaxFiles, DefaultLogMaxFiles)
	t.LogConfig.MaxFileSizeMB = orDefault(t.LogConfig.MaxFileSizeMB, DefaultLogMaxFileSizeMB)

	if t.Resources == nil {
		t.Resources = &Resources{}
	}
	if t.Resources.CPU == 0 && t.Resources.Cores == 0 {
		t.Resources.CPU = DefaultTaskCPU
	}
	t.Resources.MemoryMB = orDefault(t.Resources.MemoryMB, DefaultTaskMemoryMB)
	canonicalizeNetworks(t.Resources.Networks)

	if t.RestartPolicy == nil && tg.RestartPolicy != nil {
		rp := *tg.RestartPolicy
		t.RestartPolicy = &rp
	} else if rp := t.RestartPolicy; rp != nil && tg.RestartPolicy != nil {
		// A task's own block is laid over its group's, as Nomad merges
		// them: the fields a group's block gets defaults for (Mode,
		// Interval) come from the group when the task leaves them empty.
		rp.Mode = orDefault(rp.Mode, tg.RestartPolicy.Mode)
		rp.Interval = orDefault(rp.Interval, tg.RestartPolicy.Interval)
	}
	for _, tmpl := range t.Templates {
		if tmpl == nil {
			continue
		}
		tmpl.ChangeMode = orDefault(tmpl.ChangeMode, TemplateChangeModeRestart)
		tmpl.Splay = orDefault(tmpl.Splay, DefaultTemplateSplay)
		tmpl.Perms = orDefault(tmpl.Perms, DefaultTemplatePerms)
		tmpl.LeftDelim = orDefault(tmpl.LeftDelim, DefaultTemplateLeftDelim)
		tmpl.RightDelim = orDefault(tmpl.RightDelim, DefaultTemplateRightDelim)
	}
	canonicalizeServices(t.Services)
	canonicalizePlacement(t.Constraints, t.Affinities, nil)
	for _, a := range t.Artifacts {
		if a != nil {
			a.GetterMode = orDefault(a.GetterMode, DefaultArtifactMode)
		}
	}
}

// canonicalizePlacement gives operand-less constraints and affinities "="
// and weightless affinities and spreads the default weight of 50.
func canonicalizePlacement(cs []*Constraint, as []*Affinity, ss []*Spread) {
	for _, c := range cs {
		if c != nil {
			c.Operand = orDefault(c.Operand, DefaultConstraintOperand)
		}
	}
	for _, a := range as {
		if a != nil {
			a.Operand = orDefault(a.Operand, DefaultConstraintOperand)
			a.Weight = orDefault(a.Weight, DefaultAffinityWeight)
		}
	}
	for _, s := range ss {
		if s != nil {
			s.Weight = orDefault(s.Weight, DefaultSpreadWeight)
		}
	}
}

// canonicalizeNetworks gives networks without a mode the host mode.
func canonicalizeNetworks(ns []*NetworkResource) {
	for _, n := range ns {
		if n != nil {
			n.Mode = orDefault(n.Mode, NetworkModeHost)
		}
	}
}

// canonicalizeServices gives services the built-in provider and the auto
// address mode when they name none; Nomad's name for the built-in
// provider becomes sched's.
func canonicalizeServices(ss []*Service) {
	for _, s := range ss {
		if s != nil {
			if s.Provider == ServiceProviderNomad {
				s.Provider = ServiceProviderSched
			}
			s.Provider = orDefault(s.Provider, ServiceProviderSched)
			s.AddressMode = orDefault(s.AddressMode, DefaultServiceAddressMode)
		}
	}
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
