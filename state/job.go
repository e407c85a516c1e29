package state

import "time"

// Job types.
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysBatch = "sysbatch"
)

// Job statuses.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Defaults filled by canonicalization, as Nomad users expect them.
const (
	DefaultNamespace    = "default"
	DefaultRegion       = "global"
	DefaultNodePool     = "default"
	DefaultJobPriority  = 50
	MinJobPriority      = 1
	MaxJobPriority      = 100
	DefaultKillTimeout  = 5 * time.Second
	DefaultKillSignal   = "SIGINT"
	DispatchPayloadSize = 16 * 1024
)

// Job is a user's declaration of work: task groups of tasks, where and how to
// run them. The fields and their JSON names follow spec/jobs-api.md §2.
type Job struct {
	ID          string
	Name        string
	ParentID    string
	Region      string
	Namespace   string
	NodePool    string
	Datacenters []string
	Type        string
	Priority    int
	AllAtOnce   bool
	Stable      bool
	Stop        bool
	Dispatched  bool
	// DispatchIdempotencyToken is the token a dispatched child was
	// dispatched with: a second dispatch with it answers this child.
	DispatchIdempotencyToken string `json:",omitempty"`
	Status                   string
	StatusDescription        string
	Version                  uint64
	// SubmitTime is the leader's clock, in Unix nanoseconds, when this
	// version was registered.
	SubmitTime       int64
	CreateIndex      uint64
	ModifyIndex      uint64
	JobModifyIndex   uint64
	Constraints      []*Constraint
	Affinities       []*Affinity
	Spreads          []*Spread
	Meta             map[string]string
	Payload          []byte
	Periodic         *PeriodicConfig
	ParameterizedJob *ParameterizedJobConfig
	Multiregion      map[string]any
	MeshToken        string
	SecretsToken     string
	SecretsNamespace string
	SchedTokenID     string
	Update           *UpdateStrategy
	TaskGroups       []*TaskGroup
}

// Constraint restricts placement: LTarget Operand RTarget must hold on a node.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

// Affinity expresses a placement preference, Weight from -100 to 100.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

// Spread spreads allocations over the values of Attribute, optionally with
// target percentages.
type Spread struct {
	Attribute    string
	Weight       int8
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is a desired share of allocations for one attribute value.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

// Periodic spec types.
const (
	PeriodicSpecCron = "cron"
)

// PeriodicConfig makes a job a template launched on a schedule.
type PeriodicConfig struct {
	Enabled         bool
	Spec            string
	Specs           []string
	SpecType        string
	ProhibitOverlap bool
	TimeZone        string
}

// Dispatch payload requirements.
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"
)

// ParameterizedJobConfig makes a job a template instantiated by dispatch.
type ParameterizedJobConfig struct {
	Payload      string
	MetaRequired []string
	MetaOptional []string
}

// UpdateStrategy controls rolling updates and canaries of a job or group.
type UpdateStrategy struct {
	Stagger          time.Duration
	MaxParallel      int
	HealthCheck      string
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	AutoRevert       bool
	AutoPromote      bool
	Canary           int
}

// JobSubmission is the original source a job was registered from. It is kept
// for reference only and never used for scheduling.
type JobSubmission struct {
	Format        string
	Source        string
	VariableFlags map[string]string
	Variables     string
	JobID         string
	JobIndex      uint64
	Namespace     string
	Version       uint64
}

// Submission formats.
const (
	SubmissionFormatHCL2 = "hcl2"
	SubmissionFormatHCL1 = "hcl1"
	SubmissionFormatJSON = "json"
)

// JobListStub is the job list entry of spec §2.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string
	Datacenters       []string
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	JobSummary        *JobSummary
	Meta              map[string]string `json:",omitempty"`
	SubmitTime        int64
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
}

// Stub returns the list entry of j. meta says whether to include Meta.
func (j *Job) Stub(summary *JobSummary, meta bool) *JobListStub {
	s := &JobListStub{
		ID:                j.ID,
		ParentID:          j.ParentID,
		Name:              j.Name,
		Namespace:         j.Namespace,
		Datacenters:       j.Datacenters,
		Type:              j.Type,
		Priority:          j.Priority,
		Periodic:          j.IsPeriodic(),
		ParameterizedJob:  j.IsParameterized(),
		Stop:              j.Stop,
		Status:            j.Status,
		StatusDescription: j.StatusDescription,
		JobSummary:        summary,
		SubmitTime:        j.SubmitTime,
		CreateIndex:       j.CreateIndex,
		ModifyIndex:       j.ModifyIndex,
		JobModifyIndex:    j.JobModifyIndex,
	}
	if meta {
		s.Meta = j.Meta
	}
	return s
}

// IsPeriodic reports whether the job launches on a schedule.
func (j *Job) IsPeriodic() bool { return j.Periodic != nil && j.Periodic.Enabled }

// IsParameterized reports whether the job is a dispatch template.
func (j *Job) IsParameterized() bool { return j.ParameterizedJob != nil && !j.Dispatched }

// LookupTaskGroup returns the group called name, or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// JobSummary counts a job's allocations by client status, per task group.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	Children    *JobChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary counts one group's allocations.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// JobChildrenSummary counts the children of a periodic or parameterized job.
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}
