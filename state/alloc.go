package state

import "time"

// Allocation desired statuses, set by servers.
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"
)

// Allocation client statuses, reported by the node.
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	AllocClientStatusUnknown  = "unknown"
)

// Allocation is one placement of a task group on a node.
//
// In the Raft log (msgpack, `codec` tags) its scalar and pointer fields
// are left out when zero: a client's report names an allocation's ID and
// its four client fields, and the two dozen empty others were a third of
// the report's bytes (BenchmarkClientUpdateCommand). An absent field
// decodes as its zero value, exactly what was left out, so entries with
// and without them decode alike on every version. Maps, slices and the
// DesiredTransition struct are always written: an empty map or slice
// left out would come back nil.
type Allocation struct {
	ID                 string
	Namespace          string              `codec:",omitempty"`
	EvalID             string              `codec:",omitempty"`
	Name               string              `codec:",omitempty"`
	NodeID             string              `codec:",omitempty"`
	NodeName           string              `codec:",omitempty"`
	JobID              string              `codec:",omitempty"`
	Job                *Job                `codec:",omitempty"`
	TaskGroup          string              `codec:",omitempty"`
	AllocatedResources *AllocatedResources `codec:",omitempty"`
	Metrics            *AllocMetric        `codec:",omitempty"`
	DesiredStatus      string              `codec:",omitempty"`
	DesiredDescription string              `codec:",omitempty"`
	DesiredTransition  DesiredTransition
	ClientStatus       string `codec:",omitempty"`
	ClientDescription  string `codec:",omitempty"`
	TaskStates         map[string]*TaskState
	PreviousAllocation string                 `codec:",omitempty"`
	NextAllocation     string                 `codec:",omitempty"`
	DeploymentID       string                 `codec:",omitempty"`
	DeploymentStatus   *AllocDeploymentStatus `codec:",omitempty"`
	RescheduleTracker  *RescheduleTracker     `codec:",omitempty"`
	FollowupEvalID     string                 `codec:",omitempty"`
	// PreemptedAllocations are the allocations evicted to make room for
	// this one; PreemptedByAllocation, on an evicted allocation, the one
	// that took its room (docs/scheduler.md#preemption).
	PreemptedAllocations  []string
	PreemptedByAllocation string `codec:",omitempty"`
	CreateIndex           uint64 `codec:",omitempty"`
	ModifyIndex           uint64 `codec:",omitempty"`
	AllocModifyIndex      uint64 `codec:",omitempty"`
	// CreateTime and ModifyTime are Unix nanoseconds from the leader's clock.
	CreateTime int64 `codec:",omitempty"`
	ModifyTime int64 `codec:",omitempty"`
}

// ServerTerminal reports whether servers want the allocation stopped.
func (a *Allocation) ServerTerminal() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.DesiredStatus == AllocDesiredStatusEvict
}

// ClientTerminal reports whether the allocation has finished on its node.
func (a *Allocation) ClientTerminal() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// Terminal reports whether the allocation is stopped or finished.
func (a *Allocation) Terminal() bool { return a.ServerTerminal() || a.ClientTerminal() }

// AllocatedResources is what the scheduler granted an allocation on its node.
type AllocatedResources struct {
	Tasks  map[string]*AllocatedTaskResources
	Shared AllocatedSharedResources
}

// AllocatedTaskResources is one task's share.
type AllocatedTaskResources struct {
	CPU      int
	MemoryMB int
	// MemoryMaxMB is how much memory the task may use beyond MemoryMB
	// (memory_max) when the scheduler configuration enables memory
	// oversubscription; 0 when it does not: the limit is MemoryMB.
	MemoryMaxMB int
	Networks    []*NetworkResource
}

// AllocatedSharedResources is the group's share: disk and group networks.
type AllocatedSharedResources struct {
	DiskMB   int
	Networks []*NetworkResource
	Ports    []AllocatedPort
}

// AllocatedPort is a port granted on the node.
type AllocatedPort struct {
	Label  string
	Value  int
	To     int
	HostIP string
}

// DesiredTransition carries server requests that the alloc move or be
// rescheduled.
type DesiredTransition struct {
	Migrate         *bool `json:",omitempty"`
	Reschedule      *bool `json:",omitempty"`
	ForceReschedule *bool `json:",omitempty"`
	NoShutdownDelay *bool `json:",omitempty"`
}

// AllocDeploymentStatus is an allocation's health within a deployment.
type AllocDeploymentStatus struct {
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// RescheduleTracker remembers the reschedule history of an allocation chain.
type RescheduleTracker struct {
	Events []*RescheduleEvent
}

// RescheduleEvent records one reschedule.
type RescheduleEvent struct {
	// RescheduleTime is Unix nanoseconds.
	RescheduleTime int64
	PrevAllocID    string
	PrevNodeID     string
	Delay          time.Duration
}

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// TaskState is one task's state on its node.
type TaskState struct {
	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// Task event types (spec §6 and issue list).
const (
	TaskReceived             = "Received"
	TaskSetup                = "Task Setup"
	TaskDriverMessage        = "Driver"
	TaskStarted              = "Started"
	TaskTerminated           = "Terminated"
	TaskRestarting           = "Restarting"
	TaskNotRestarting        = "Not Restarting"
	TaskKilling              = "Killing"
	TaskKilled               = "Killed"
	TaskSignaling            = "Signaling"
	TaskTemplateRendered     = "Template Rendered"
	TaskDownloadingArtifacts = "Downloading Artifacts"
	TaskFailedValidation     = "Failed Validation"
	TaskSetupFailure         = "Setup Failure"
	TaskDriverFailure        = "Driver Failure"
	TaskSiblingFailed        = "Sibling Task Failed"
	TaskLeaderDead           = "Leader Task Dead"
)

// TaskEvent is one entry of a task's history (spec §6). Its fields but
// Type and Time are left out of JSON when zero, and but Type, Time and
// Details out of the Raft log's msgpack (which reads only `codec` tags;
// an empty map left out would come back nil): an event names two or
// three of its twenty-odd fields, and the empty others made up three
// quarters of the bytes of every client report, journal record and
// allocation read that carries task states (and 44% of the time to
// encode and decode a batch of client reports for the log,
// BenchmarkClientUpdateCommand). A reader takes an absent field as its
// zero value, so entries written with and without the empty fields, by
// any version, decode alike (TestLogEntriesWithoutEmptyFieldsDecodeAlike).
type TaskEvent struct {
	Type string
	// Time is Unix nanoseconds.
	Time             int64
	FailsTask        bool              `codec:",omitempty" json:",omitempty"`
	RestartReason    string            `codec:",omitempty" json:",omitempty"`
	SetupError       string            `codec:",omitempty" json:",omitempty"`
	DriverError      string            `codec:",omitempty" json:",omitempty"`
	ExitCode         int               `codec:",omitempty" json:",omitempty"`
	Signal           int               `codec:",omitempty" json:",omitempty"`
	Message          string            `codec:",omitempty" json:",omitempty"`
	KillTimeout      time.Duration     `codec:",omitempty" json:",omitempty"`
	KillError        string            `codec:",omitempty" json:",omitempty"`
	KillReason       string            `codec:",omitempty" json:",omitempty"`
	StartDelay       int64             `codec:",omitempty" json:",omitempty"`
	DownloadError    string            `codec:",omitempty" json:",omitempty"`
	ValidationError  string            `codec:",omitempty" json:",omitempty"`
	DiskLimit        int64             `codec:",omitempty" json:",omitempty"`
	FailedSibling    string            `codec:",omitempty" json:",omitempty"`
	SecretsError     string            `codec:",omitempty" json:",omitempty"`
	TaskSignalReason string            `codec:",omitempty" json:",omitempty"`
	TaskSignal       string            `codec:",omitempty" json:",omitempty"`
	DriverMessage    string            `codec:",omitempty" json:",omitempty"`
	DisplayMessage   string            `codec:",omitempty" json:",omitempty"`
	Details          map[string]string `json:",omitempty"`
}
