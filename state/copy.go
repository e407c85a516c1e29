package state

import (
	"maps"
	"slices"
	"time"
)

// Deep copies for copy-on-write: objects read from the store are shared
// and immutable, so code that wants to change one copies it first. Every
// Copy returns nil for a nil receiver, and keeps nil maps and slices nil and
// empty ones empty, so a copy is reflect.DeepEqual to its original.
// copy_test.go checks, by reflection, that no field is forgotten.

// ClonePtr copies a struct that holds only values.
func ClonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// copyEach copies every element of a slice of pointers with fn.
func copyEach[T any](s []*T, fn func(*T) *T) []*T {
	if s == nil {
		return nil
	}
	out := make([]*T, len(s))
	for i, v := range s {
		out[i] = fn(v)
	}
	return out
}

// copyValues copies every value of a map of pointers with fn.
func copyValues[K comparable, V any](m map[K]*V, fn func(*V) *V) map[K]*V {
	if m == nil {
		return nil
	}
	out := make(map[K]*V, len(m))
	for k, v := range m {
		out[k] = fn(v)
	}
	return out
}

// copyAnyMap deep-copies a free-form map as decoded from JSON or msgpack.
func copyAnyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyAny(v)
	}
	return out
}

// copyAny deep-copies the maps and slices inside a free-form value; other
// values are immutable and returned as they are.
func copyAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyAnyMap(v)
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyAny(e)
		}
		return out
	case map[string]string:
		return maps.Clone(v)
	case []map[string]any:
		if v == nil {
			return v
		}
		out := make([]map[string]any, len(v))
		for i, e := range v {
			out[i] = copyAnyMap(e)
		}
		return out
	case []string:
		return slices.Clone(v)
	case []byte:
		return slices.Clone(v)
	}
	return v
}

// CopyBoolPtr copies a *bool.
func CopyBoolPtr(p *bool) *bool { return ClonePtr(p) }

// copyDurationPtr copies a *time.Duration.
func copyDurationPtr(p *time.Duration) *time.Duration { return ClonePtr(p) }

// Copy returns a deep copy of j.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Datacenters = slices.Clone(j.Datacenters)
	c.Constraints = copyEach(j.Constraints, (*Constraint).Copy)
	c.Affinities = copyEach(j.Affinities, (*Affinity).Copy)
	c.Spreads = copyEach(j.Spreads, (*Spread).Copy)
	c.Meta = maps.Clone(j.Meta)
	c.Payload = slices.Clone(j.Payload)
	c.Periodic = j.Periodic.Copy()
	c.ParameterizedJob = j.ParameterizedJob.Copy()
	c.Multiregion = copyAnyMap(j.Multiregion)
	c.Update = j.Update.Copy()
	c.TaskGroups = copyEach(j.TaskGroups, (*TaskGroup).Copy)
	return &c
}

// Copy returns a copy of c.
func (c *Constraint) Copy() *Constraint { return ClonePtr(c) }

// Copy returns a copy of a.
func (a *Affinity) Copy() *Affinity { return ClonePtr(a) }

// Copy returns a deep copy of s.
func (s *Spread) Copy() *Spread {
	if s == nil {
		return nil
	}
	c := *s
	c.SpreadTarget = copyEach(s.SpreadTarget, (*SpreadTarget).Copy)
	return &c
}

// Copy returns a copy of s.
func (s *SpreadTarget) Copy() *SpreadTarget { return ClonePtr(s) }

// Copy returns a deep copy of p.
func (p *PeriodicConfig) Copy() *PeriodicConfig {
	if p == nil {
		return nil
	}
	c := *p
	c.Specs = slices.Clone(p.Specs)
	return &c
}

// Copy returns a deep copy of p.
func (p *ParameterizedJobConfig) Copy() *ParameterizedJobConfig {
	if p == nil {
		return nil
	}
	c := *p
	c.MetaRequired = slices.Clone(p.MetaRequired)
	c.MetaOptional = slices.Clone(p.MetaOptional)
	return &c
}

// Copy returns a copy of u.
func (u *UpdateStrategy) Copy() *UpdateStrategy { return ClonePtr(u) }

// Copy returns a deep copy of s.
func (s *JobSubmission) Copy() *JobSubmission {
	if s == nil {
		return nil
	}
	c := *s
	c.VariableFlags = maps.Clone(s.VariableFlags)
	return &c
}

// Copy returns a deep copy of s.
func (s *JobSummary) Copy() *JobSummary {
	if s == nil {
		return nil
	}
	c := *s
	c.Summary = maps.Clone(s.Summary)
	c.Children = s.Children.Copy()
	return &c
}

// Copy returns a copy of c.
func (c *JobChildrenSummary) Copy() *JobChildrenSummary { return ClonePtr(c) }

// Copy returns a deep copy of tg.
func (tg *TaskGroup) Copy() *TaskGroup {
	if tg == nil {
		return nil
	}
	c := *tg
	c.Constraints = copyEach(tg.Constraints, (*Constraint).Copy)
	c.Affinities = copyEach(tg.Affinities, (*Affinity).Copy)
	c.Spreads = copyEach(tg.Spreads, (*Spread).Copy)
	c.Meta = maps.Clone(tg.Meta)
	c.RestartPolicy = tg.RestartPolicy.Copy()
	c.ReschedulePolicy = tg.ReschedulePolicy.Copy()
	c.Migrate = tg.Migrate.Copy()
	c.Update = tg.Update.Copy()
	c.EphemeralDisk = tg.EphemeralDisk.Copy()
	c.Networks = copyEach(tg.Networks, (*NetworkResource).Copy)
	c.Services = copyEach(tg.Services, (*Service).Copy)
	c.Scaling = tg.Scaling.Copy()
	c.MaxClientDisconnect = copyDurationPtr(tg.MaxClientDisconnect)
	c.ShutdownDelay = copyDurationPtr(tg.ShutdownDelay)
	c.StopAfterClientDisconnect = copyDurationPtr(tg.StopAfterClientDisconnect)
	c.Volumes = copyValues(tg.Volumes, (*VolumeRequest).Copy)
	c.Tasks = copyEach(tg.Tasks, (*Task).Copy)
	return &c
}

// Copy returns a copy of r.
func (r *RestartPolicy) Copy() *RestartPolicy { return ClonePtr(r) }

// Copy returns a copy of r.
func (r *ReschedulePolicy) Copy() *ReschedulePolicy { return ClonePtr(r) }

// Copy returns a copy of m.
func (m *MigrateStrategy) Copy() *MigrateStrategy { return ClonePtr(m) }

// Copy returns a copy of d.
func (d *EphemeralDisk) Copy() *EphemeralDisk { return ClonePtr(d) }

// Copy returns a deep copy of n.
func (n *NetworkResource) Copy() *NetworkResource {
	if n == nil {
		return nil
	}
	c := *n
	c.DNS = n.DNS.Copy()
	c.ReservedPorts = slices.Clone(n.ReservedPorts)
	c.DynamicPorts = slices.Clone(n.DynamicPorts)
	return &c
}

// Copy returns a deep copy of d.
func (d *DNSConfig) Copy() *DNSConfig {
	if d == nil {
		return nil
	}
	c := *d
	c.Servers = slices.Clone(d.Servers)
	c.Searches = slices.Clone(d.Searches)
	c.Options = slices.Clone(d.Options)
	return &c
}

// Copy returns a deep copy of s.
func (s *Service) Copy() *Service {
	if s == nil {
		return nil
	}
	c := *s
	c.Tags = slices.Clone(s.Tags)
	c.CanaryTags = slices.Clone(s.CanaryTags)
	c.Meta = maps.Clone(s.Meta)
	c.Checks = copyEach(s.Checks, (*ServiceCheck).Copy)
	return &c
}

// Copy returns a deep copy of sc.
func (sc *ServiceCheck) Copy() *ServiceCheck {
	if sc == nil {
		return nil
	}
	c := *sc
	c.Args = slices.Clone(sc.Args)
	if sc.Header != nil {
		c.Header = make(map[string][]string, len(sc.Header))
		for k, v := range sc.Header {
			c.Header[k] = slices.Clone(v)
		}
	}
	return &c
}

// Copy returns a deep copy of p.
func (p *ScalingPolicy) Copy() *ScalingPolicy {
	if p == nil {
		return nil
	}
	c := *p
	c.Target = maps.Clone(p.Target)
	c.Policy = copyAnyMap(p.Policy)
	return &c
}

// Copy returns a copy of v.
func (v *VolumeRequest) Copy() *VolumeRequest { return ClonePtr(v) }

// Copy returns a copy of v.
func (v *VolumeMount) Copy() *VolumeMount { return ClonePtr(v) }

// Copy returns a deep copy of t.
func (t *Task) Copy() *Task {
	if t == nil {
		return nil
	}
	c := *t
	c.Config = copyAnyMap(t.Config)
	c.Env = maps.Clone(t.Env)
	c.Meta = maps.Clone(t.Meta)
	c.Constraints = copyEach(t.Constraints, (*Constraint).Copy)
	c.Affinities = copyEach(t.Affinities, (*Affinity).Copy)
	c.Services = copyEach(t.Services, (*Service).Copy)
	c.Templates = copyEach(t.Templates, (*Template).Copy)
	c.Resources = t.Resources.Copy()
	c.DispatchPayload = t.DispatchPayload.Copy()
	c.Lifecycle = t.Lifecycle.Copy()
	c.LogConfig = t.LogConfig.Copy()
	c.Artifacts = copyEach(t.Artifacts, (*TaskArtifact).Copy)
	c.RestartPolicy = t.RestartPolicy.Copy()
	c.ScalingPolicies = copyEach(t.ScalingPolicies, (*ScalingPolicy).Copy)
	c.Secrets = copyEach(t.Secrets, (*Secret).Copy)
	c.VolumeMounts = copyEach(t.VolumeMounts, (*VolumeMount).Copy)
	c.CSIPluginConfig = copyAnyMap(t.CSIPluginConfig)
	c.Actions = copyEach(t.Actions, (*Action).Copy)
	return &c
}

// Copy returns a copy of t.
func (t *Template) Copy() *Template { return ClonePtr(t) }

// Copy returns a deep copy of r.
func (r *Resources) Copy() *Resources {
	if r == nil {
		return nil
	}
	c := *r
	c.Networks = copyEach(r.Networks, (*NetworkResource).Copy)
	c.Devices = copyEach(r.Devices, (*RequestedDevice).Copy)
	return &c
}

// Copy returns a deep copy of d.
func (d *RequestedDevice) Copy() *RequestedDevice {
	if d == nil {
		return nil
	}
	c := *d
	c.Constraints = copyEach(d.Constraints, (*Constraint).Copy)
	c.Affinities = copyEach(d.Affinities, (*Affinity).Copy)
	return &c
}

// Copy returns a copy of d.
func (d *DispatchPayloadConfig) Copy() *DispatchPayloadConfig { return ClonePtr(d) }

// Copy returns a copy of l.
func (l *TaskLifecycleConfig) Copy() *TaskLifecycleConfig { return ClonePtr(l) }

// Copy returns a copy of l.
func (l *LogConfig) Copy() *LogConfig { return ClonePtr(l) }

// Copy returns a deep copy of a.
func (a *TaskArtifact) Copy() *TaskArtifact {
	if a == nil {
		return nil
	}
	c := *a
	c.GetterOptions = maps.Clone(a.GetterOptions)
	c.GetterHeaders = maps.Clone(a.GetterHeaders)
	return &c
}

// Copy returns a deep copy of s.
func (s *Secret) Copy() *Secret {
	if s == nil {
		return nil
	}
	c := *s
	c.Config = copyAnyMap(s.Config)
	return &c
}

// Copy returns a deep copy of a.
func (a *Action) Copy() *Action {
	if a == nil {
		return nil
	}
	c := *a
	c.Args = slices.Clone(a.Args)
	return &c
}

// Copy returns a deep copy of e.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	c := *e
	c.FailedTGAllocs = copyValues(e.FailedTGAllocs, (*AllocMetric).Copy)
	c.ClassEligibility = maps.Clone(e.ClassEligibility)
	c.QueuedAllocations = maps.Clone(e.QueuedAllocations)
	return &c
}

// Copy returns a deep copy of m.
func (m *AllocMetric) Copy() *AllocMetric {
	if m == nil {
		return nil
	}
	c := *m
	c.NodesAvailable = maps.Clone(m.NodesAvailable)
	c.ClassFiltered = maps.Clone(m.ClassFiltered)
	c.ConstraintFiltered = maps.Clone(m.ConstraintFiltered)
	c.ClassExhausted = maps.Clone(m.ClassExhausted)
	c.DimensionExhausted = maps.Clone(m.DimensionExhausted)
	c.QuotaExhausted = slices.Clone(m.QuotaExhausted)
	// Scores are immutable: the copy shares them.
	c.Scores = m.Scores
	return &c
}

// Copy returns a deep copy of a, including its job.
func (a *Allocation) Copy() *Allocation {
	c := a.CopySkipJob()
	if c != nil {
		c.Job = a.Job.Copy()
	}
	return c
}

// CopySkipJob returns a deep copy of a that shares a's Job, for callers
// that change the allocation but not its job (the job is large and, like
// everything read from the store, immutable).
func (a *Allocation) CopySkipJob() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.AllocatedResources = a.AllocatedResources.Copy()
	c.Metrics = a.Metrics.Copy()
	c.DesiredTransition = a.DesiredTransition.Copy()
	c.TaskStates = copyValues(a.TaskStates, (*TaskState).Copy)
	c.DeploymentStatus = a.DeploymentStatus.Copy()
	c.RescheduleTracker = a.RescheduleTracker.Copy()
	c.PreemptedAllocations = slices.Clone(a.PreemptedAllocations)
	return &c
}

// Copy returns a deep copy of r.
func (r *AllocatedResources) Copy() *AllocatedResources {
	if r == nil {
		return nil
	}
	c := *r
	c.Tasks = copyValues(r.Tasks, (*AllocatedTaskResources).Copy)
	c.Shared = r.Shared.Copy()
	return &c
}

// Copy returns a deep copy of r.
func (r *AllocatedTaskResources) Copy() *AllocatedTaskResources {
	if r == nil {
		return nil
	}
	c := *r
	c.Networks = copyEach(r.Networks, (*NetworkResource).Copy)
	return &c
}

// Copy returns a deep copy of r.
func (r AllocatedSharedResources) Copy() AllocatedSharedResources {
	c := r
	c.Networks = copyEach(r.Networks, (*NetworkResource).Copy)
	c.Ports = slices.Clone(r.Ports)
	return c
}

// Copy returns a deep copy of d.
func (d DesiredTransition) Copy() DesiredTransition {
	c := d
	c.Migrate = CopyBoolPtr(d.Migrate)
	c.Reschedule = CopyBoolPtr(d.Reschedule)
	c.ForceReschedule = CopyBoolPtr(d.ForceReschedule)
	c.NoShutdownDelay = CopyBoolPtr(d.NoShutdownDelay)
	return c
}

// Copy returns a deep copy of s.
func (s *AllocDeploymentStatus) Copy() *AllocDeploymentStatus {
	if s == nil {
		return nil
	}
	c := *s
	c.Healthy = CopyBoolPtr(s.Healthy)
	return &c
}

// Copy returns a deep copy of r.
func (r *RescheduleTracker) Copy() *RescheduleTracker {
	if r == nil {
		return nil
	}
	c := *r
	c.Events = copyEach(r.Events, (*RescheduleEvent).Copy)
	return &c
}

// Copy returns a copy of e.
func (e *RescheduleEvent) Copy() *RescheduleEvent { return ClonePtr(e) }

// Copy returns a deep copy of s.
func (s *TaskState) Copy() *TaskState {
	if s == nil {
		return nil
	}
	c := *s
	c.Events = copyEach(s.Events, (*TaskEvent).Copy)
	return &c
}

// Copy returns a deep copy of e.
func (e *TaskEvent) Copy() *TaskEvent {
	if e == nil {
		return nil
	}
	c := *e
	c.Details = maps.Clone(e.Details)
	return &c
}

// Copy returns a deep copy of d.
func (d *Deployment) Copy() *Deployment {
	if d == nil {
		return nil
	}
	c := *d
	c.TaskGroups = copyValues(d.TaskGroups, (*DeploymentState).Copy)
	return &c
}

// Copy returns a deep copy of s.
func (s *DeploymentState) Copy() *DeploymentState {
	if s == nil {
		return nil
	}
	c := *s
	c.PlacedCanaries = slices.Clone(s.PlacedCanaries)
	return &c
}

// Copy returns a deep copy of n.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Attributes = maps.Clone(n.Attributes)
	c.Meta = maps.Clone(n.Meta)
	c.NodeResources = n.NodeResources.Copy()
	c.ReservedResources = n.ReservedResources.Copy()
	c.Drivers = copyValues(n.Drivers, (*DriverInfo).Copy)
	c.HostNetworks = copyValues(n.HostNetworks, (*HostNetwork).Copy)
	c.HostVolumes = copyValues(n.HostVolumes, (*ClientHostVolumeConfig).Copy)
	c.DrainStrategy = n.DrainStrategy.Copy()
	return &c
}

// Copy returns a deep copy of r.
func (r *NodeResources) Copy() *NodeResources {
	if r == nil {
		return nil
	}
	c := *r
	c.Networks = copyEach(r.Networks, (*NetworkResource).Copy)
	return &c
}

// Copy returns a copy of r.
func (r *NodeReservedResources) Copy() *NodeReservedResources { return ClonePtr(r) }

// Copy returns a deep copy of d.
func (d *DriverInfo) Copy() *DriverInfo {
	if d == nil {
		return nil
	}
	c := *d
	c.Attributes = maps.Clone(d.Attributes)
	return &c
}

// Copy returns a copy of h.
func (h *HostNetwork) Copy() *HostNetwork { return ClonePtr(h) }

// Copy returns a copy of d.
func (d *DrainStrategy) Copy() *DrainStrategy { return ClonePtr(d) }

// Copy returns a deep copy of p.
func (p *NodePool) Copy() *NodePool {
	if p == nil {
		return nil
	}
	c := *p
	c.Meta = maps.Clone(p.Meta)
	c.SchedulerConfiguration = copyAnyMap(p.SchedulerConfiguration)
	return &c
}

// Copy returns a deep copy of ns.
func (ns *Namespace) Copy() *Namespace {
	if ns == nil {
		return nil
	}
	c := *ns
	c.Meta = maps.Clone(ns.Meta)
	return &c
}

// Copy returns a deep copy of s.
func (s *ServiceRegistration) Copy() *ServiceRegistration {
	if s == nil {
		return nil
	}
	c := *s
	c.Tags = slices.Clone(s.Tags)
	return &c
}
