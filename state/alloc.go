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
type Allocation struct {
	ID                 string
	Namespace          string
	EvalID             string
	Name               string
	NodeID             string
	NodeName           string
	JobID              string
	Job                *Job
	TaskGroup          string
	AllocatedResources *AllocatedResources
	Metrics            *AllocMetric
	DesiredStatus      string
	DesiredDescription string
	DesiredTransition  DesiredTransition
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	PreviousAllocation string
	NextAllocation     string
	DeploymentID       string
	DeploymentStatus   *AllocDeploymentStatus
	RescheduleTracker  *RescheduleTracker
	FollowupEvalID     string
	// PreemptedAllocations are the allocations evicted to make room for
	// this one; PreemptedByAllocation, on an evicted allocation, the one
	// that took its room (docs/scheduler.md#preemption).
	PreemptedAllocations  []string
	PreemptedByAllocation string
	CreateIndex           uint64
	ModifyIndex           uint64
	AllocModifyIndex      uint64
	// CreateTime and ModifyTime are Unix nanoseconds from the leader's clock.
	CreateTime int64
	ModifyTime int64
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
// Type and Time are left out of JSON (and of the Raft log's msgpack, which
// honours the json tags) when zero: an event names two or three of its
// twenty-odd fields, and the empty others made up three quarters of the
// bytes of every client report, journal record and allocation read that
// carries task states. A reader takes an absent field as its zero value.
type TaskEvent struct {
	Type string
	// Time is Unix nanoseconds.
	Time             int64
	FailsTask        bool              `json:",omitempty"`
	RestartReason    string            `json:",omitempty"`
	SetupError       string            `json:",omitempty"`
	DriverError      string            `json:",omitempty"`
	ExitCode         int               `json:",omitempty"`
	Signal           int               `json:",omitempty"`
	Message          string            `json:",omitempty"`
	KillTimeout      time.Duration     `json:",omitempty"`
	KillError        string            `json:",omitempty"`
	KillReason       string            `json:",omitempty"`
	StartDelay       int64             `json:",omitempty"`
	DownloadError    string            `json:",omitempty"`
	ValidationError  string            `json:",omitempty"`
	DiskLimit        int64             `json:",omitempty"`
	FailedSibling    string            `json:",omitempty"`
	SecretsError     string            `json:",omitempty"`
	TaskSignalReason string            `json:",omitempty"`
	TaskSignal       string            `json:",omitempty"`
	DriverMessage    string            `json:",omitempty"`
	DisplayMessage   string            `json:",omitempty"`
	Details          map[string]string `json:",omitempty"`
}
