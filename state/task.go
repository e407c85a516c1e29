package state

import "time"

// Task lifecycle hooks.
const (
	TaskLifecycleHookPrestart  = "prestart"
	TaskLifecycleHookPoststart = "poststart"
	TaskLifecycleHookPoststop  = "poststop"
)

// Template change modes.
const (
	TemplateChangeModeNoop    = "noop"
	TemplateChangeModeRestart = "restart"
	TemplateChangeModeSignal  = "signal"
	TemplateChangeModeScript  = "script"
)

// Task is one unit of work run by a driver.
type Task struct {
	Name            string
	Driver          string
	User            string
	Config          map[string]any
	Env             map[string]string
	Meta            map[string]string
	Constraints     []*Constraint
	Affinities      []*Affinity
	Services        []*Service
	Templates       []*Template
	Resources       *Resources
	DispatchPayload *DispatchPayloadConfig
	KillTimeout     time.Duration
	KillSignal      string
	Kind            string
	Leader          bool
	Lifecycle       *TaskLifecycleConfig
	LogConfig       *LogConfig
	Artifacts       []*TaskArtifact
	RestartPolicy   *RestartPolicy
	ScalingPolicies []*ScalingPolicy
	ShutdownDelay   time.Duration
	Secrets         []*Secret
	VolumeMounts    []*VolumeMount
	CSIPluginConfig map[string]any
	Actions         []*Action
}

// Template renders a file into the task directory.
type Template struct {
	SourcePath   string
	DestPath     string
	EmbeddedTmpl string
	ChangeMode   string
	ChangeSignal string
	Splay        time.Duration
	Perms        string
	LeftDelim    string
	RightDelim   string
	Envvars      bool
}

// Resources is what a task asks of its node.
type Resources struct {
	CPU         int
	Cores       int
	MemoryMB    int
	MemoryMaxMB int
	DiskMB      int
	IOPS        int
	Networks    []*NetworkResource
	Devices     []*RequestedDevice
}

// RequestedDevice asks for Count devices of a kind.
type RequestedDevice struct {
	Name        string
	Count       uint64
	Constraints []*Constraint
	Affinities  []*Affinity
}

// DispatchPayloadConfig says where a dispatched job's payload is written.
type DispatchPayloadConfig struct {
	File string
}

// TaskLifecycleConfig runs a task at a hook point of its group's lifetime.
type TaskLifecycleConfig struct {
	Hook    string
	Sidecar bool
}

// LogConfig bounds a task's rotated log files.
type LogConfig struct {
	Disabled      bool
	MaxFiles      int
	MaxFileSizeMB int
}

// TaskArtifact is fetched into the task directory before the task starts.
type TaskArtifact struct {
	GetterSource  string
	GetterOptions map[string]string
	GetterHeaders map[string]string
	GetterMode    string
	RelativeDest  string
}

// Secret is a secret fetched from the secrets integration.
type Secret struct {
	Name     string
	Provider string
	Path     string
	Config   map[string]any
}

// Action is a named command that users may run inside a running task.
type Action struct {
	Name    string
	Command string
	Args    []string
}

// JobAction is the job action entry of spec §2: an action together with the
// group and task that define it.
type JobAction struct {
	Name          string
	Command       string
	Args          []string
	TaskGroupName string
	TaskName      string
}
