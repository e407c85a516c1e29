package state

import (
	"encoding/json"
	"time"
)

// TaskGroup is a set of tasks placed together on one node, Count times.
type TaskGroup struct {
	Name                      string
	Count                     int
	Constraints               []*Constraint
	Affinities                []*Affinity
	Spreads                   []*Spread
	Meta                      map[string]string
	RestartPolicy             *RestartPolicy
	ReschedulePolicy          *ReschedulePolicy
	Migrate                   *MigrateStrategy
	Update                    *UpdateStrategy
	EphemeralDisk             *EphemeralDisk
	Networks                  []*NetworkResource
	Services                  []*Service
	Scaling                   *ScalingPolicy
	MaxClientDisconnect       *time.Duration
	ShutdownDelay             *time.Duration
	StopAfterClientDisconnect *time.Duration
	Volumes                   map[string]*VolumeRequest
	Tasks                     []*Task
}

// UnmarshalJSON decodes a task group, taking a Count that is absent from the
// document as 1 (as Nomad does) while an explicit 0 stays 0.
func (tg *TaskGroup) UnmarshalJSON(b []byte) error {
	type plain TaskGroup
	p := plain{Count: 1}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*tg = TaskGroup(p)
	return nil
}

// LookupTask returns the task called name, or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Restart policy modes.
const (
	RestartPolicyModeDelay = "delay"
	RestartPolicyModeFail  = "fail"
)

// RestartPolicy says how a client restarts a failed task in place.
type RestartPolicy struct {
	Attempts        int
	Interval        time.Duration
	Delay           time.Duration
	Mode            string
	RenderTemplates bool
}

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// ReschedulePolicy says how servers replace a failed allocation on another
// node.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool

	// unset marks the members a JSON document left out (or sent as null)
	// whose zero would otherwise read as set: Canonicalize fills them from
	// the job type's defaults, as Nomad's API merges a partial block over
	// them, and clears the marks. Only UnmarshalJSON sets it; neither the
	// store nor the wire carries it.
	unset rescheduleUnset
}

// rescheduleUnset is a set of ReschedulePolicy members absent from JSON.
type rescheduleUnset uint8

const (
	rescheduleUnsetAttempts rescheduleUnset = 1 << iota
	rescheduleUnsetInterval
	rescheduleUnsetUnlimited
)

// MarshalJSON encodes a reschedule block; the members UnmarshalJSON found
// absent go out as null, so a job decoded from a JSON file and sent on
// (as the CLI does) keeps them to be filled from the job type's defaults.
func (r ReschedulePolicy) MarshalJSON() ([]byte, error) {
	type plain ReschedulePolicy
	w := struct {
		plain
		Attempts  *int
		Interval  *time.Duration
		Unlimited *bool
	}{plain: plain(r), Attempts: &r.Attempts, Interval: &r.Interval, Unlimited: &r.Unlimited}
	if r.unset&rescheduleUnsetAttempts != 0 {
		w.Attempts = nil
	}
	if r.unset&rescheduleUnsetInterval != 0 {
		w.Interval = nil
	}
	if r.unset&rescheduleUnsetUnlimited != 0 {
		w.Unlimited = nil
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes a reschedule block, remembering which of
// Attempts, Interval and Unlimited were absent or null, so that
// `{"Delay": 10000000000}` in a service job still reschedules without
// limit (and in a batch job once in 24h) rather than never, as in Nomad.
func (r *ReschedulePolicy) UnmarshalJSON(b []byte) error {
	type plain ReschedulePolicy
	var w struct {
		plain
		Attempts  *int
		Interval  *time.Duration
		Unlimited *bool
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = ReschedulePolicy(w.plain)
	r.unset = 0
	if w.Attempts != nil {
		r.Attempts = *w.Attempts
	} else {
		r.unset |= rescheduleUnsetAttempts
	}
	if w.Interval != nil {
		r.Interval = *w.Interval
	} else {
		r.unset |= rescheduleUnsetInterval
	}
	if w.Unlimited != nil {
		r.Unlimited = *w.Unlimited
	} else {
		r.unset |= rescheduleUnsetUnlimited
	}
	return nil
}

// MigrateStrategy controls how allocations leave a draining node.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// EphemeralDisk is the group's scratch disk.
type EphemeralDisk struct {
	Sticky  bool
	SizeMB  int
	Migrate bool
}

// NetworkResource asks for (or, in an allocation, records) a network with
// ports.
type NetworkResource struct {
	Mode          string
	Device        string
	CIDR          string
	IP            string
	MBits         int
	DNS           *DNSConfig
	ReservedPorts []Port
	DynamicPorts  []Port
}

// Port is a labelled port. Value is the host port (fixed for reserved ports,
// chosen by the scheduler for dynamic ones); To is the port inside the task's
// network namespace, when mapped.
type Port struct {
	Label       string
	Value       int
	To          int
	HostNetwork string
}

// DNSConfig configures a group network's resolver.
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// Service is a service a group or task registers while it runs.
type Service struct {
	Name              string
	PortLabel         string
	Provider          string
	Tags              []string
	CanaryTags        []string
	Address           string
	AddressMode       string
	EnableTagOverride bool
	Meta              map[string]string
	Checks            []*ServiceCheck
	TaskName          string
}

// Service check types.
const (
	ServiceCheckHTTP   = "http"
	ServiceCheckTCP    = "tcp"
	ServiceCheckScript = "script"
)

// ServiceCheck is a health check of a service, run by the client.
type ServiceCheck struct {
	Name          string
	Type          string
	Command       string
	Args          []string
	Path          string
	Protocol      string
	Method        string
	Header        map[string][]string
	PortLabel     string
	Interval      time.Duration
	Timeout       time.Duration
	InitialStatus string
	TaskName      string
	OnUpdate      string
}

// ScalingPolicy bounds a group's count and carries an autoscaler policy.
type ScalingPolicy struct {
	ID          string
	Type        string
	Target      map[string]string
	Min         int64
	Max         int64
	Policy      map[string]any
	Enabled     bool
	CreateIndex uint64
	ModifyIndex uint64
}

// VolumeRequest asks for a host or CSI volume for the group.
type VolumeRequest struct {
	Name           string
	Type           string
	Source         string
	ReadOnly       bool
	AccessMode     string
	AttachmentMode string
	PerAlloc       bool
}

// VolumeMount mounts a group volume into a task.
type VolumeMount struct {
	Volume          string
	Destination     string
	ReadOnly        bool
	PropagationMode string
}
