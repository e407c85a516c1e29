// Package driver defines how a client runs a task, and holds the drivers:
// raw_exec (real child processes, no isolation) and mock (a simulated task
// for tests and scale runs). A driver is small: adding a third one is one
// file that implements Driver.
package driver

import (
	"context"
	"time"

	"github.com/schedhq/sched/state"
)

// TaskConfig is everything a driver needs to start one task.
type TaskConfig struct {
	// ID identifies the task on this client: "<alloc id>/<task name>".
	ID        string
	AllocID   string
	TaskName  string
	JobID     string
	Namespace string
	// Config is the task's driver configuration (Task.Config).
	Config map[string]any
	// Env is the task's complete, interpolated environment.
	Env map[string]string
	// User to run as; empty means the client's own user, or WorkloadUID.
	User string
	// WorkloadUID, when not zero, is the uid the client gave the task's
	// allocation (client/workloaduser; its gid is the same number): on a
	// root client a task that names no User runs as it, owning its
	// directories, and a task that names one gets its gid as a
	// supplementary group, to share alloc/. Zero: none (dynamic users are
	// off, or the client is not root), and RawExecPolicy.DefaultUser
	// applies.
	WorkloadUID uint32
	// TaskDir is <alloc dir>/<task>, the working directory; LocalDir and
	// SecretsDir are its local/ and secrets/; AllocDir is the shared alloc/.
	TaskDir    string
	LocalDir   string
	SecretsDir string
	AllocDir   string
	// LogDir receives <task>.stdout.N and <task>.stderr.N, rotated per
	// LogConfig.
	LogDir    string
	LogConfig *state.LogConfig
	// CPU (MHz) and MemoryMB the task was granted.
	CPU      int
	MemoryMB int
	// MemoryMaxMB is the task's memory_max (0: none, the limit is
	// MemoryMB); Cores is the number of reserved cores (0: none).
	MemoryMaxMB int
	Cores       int
	// Ports are the allocation's ports (group and task networks), for
	// drivers that map them (docker's `ports`).
	Ports []state.AllocatedPort
	// Mounts are the host volumes the task mounts, resolved to host
	// paths (mounts.go).
	Mounts []*MountConfig
	// NetworkMode is the mode of the group's network ("host", "none",
	// "bridge"; empty when it has none: host).
	NetworkMode string
	// NetNS, when set, is the allocation's network namespace (a path
	// like /var/run/netns/sched-<alloc id>) that the client made for
	// network mode bridge or none: the exec driver's tasks join it.
	NetNS string
	// Emit, when not nil, records a driver message as a task event
	// (image pull progress, for example). It must not block for long.
	Emit func(msg string) `json:"-"`
}

// TaskHandle is what a client persists about a started task so that,
// restarted, it can find the task again (RecoverTask) instead of starting
// a duplicate.
type TaskHandle struct {
	TaskID    string
	Driver    string
	PID       int
	StartedAt time.Time
	// State is driver-specific data, opaque to the client.
	State []byte
}

// ExitResult is how a task ended.
type ExitResult struct {
	ExitCode int
	Signal   int
	// Err is set when the driver lost the task or could not wait on it,
	// or says why it ended (ErrOOMKilled).
	Err error
	// OOMKilled: the task was killed for going over its memory limit.
	OOMKilled bool
}

// Successful reports a clean exit.
func (r *ExitResult) Successful() bool { return r.Err == nil && r.ExitCode == 0 && r.Signal == 0 }

// measured is a task's use in the shape GET
// /v1/client/allocation/:alloc_id/stats serves it: resident memory, CPU
// percent of one core and total CPU time, measured at. The CPU's
// TotalTicks (MHz) is left to the client, which knows the node's speed.
func measured(rssBytes uint64, cpuPercent float64, cpuTime time.Duration, at time.Time) *state.TaskResourceUsage {
	return &state.TaskResourceUsage{
		Timestamp: at.UnixNano(),
		ResourceUsage: &state.ResourceUsage{
			MemoryStats: &state.MemoryStats{RSS: rssBytes, Measured: []string{"RSS"}},
			CpuStats: &state.CpuStats{
				Percent: cpuPercent, TotalTime: cpuTime,
				Measured: []string{"Percent", "Total Ticks", "Total Time"},
			},
		},
	}
}

// Driver runs tasks. Implementations are safe for concurrent use.
type Driver interface {
	// Name is the value of a task's `driver` field.
	Name() string
	// Fingerprint reports whether the driver works on this node, for the
	// node's Drivers map.
	Fingerprint() *state.DriverInfo
	// StartTask starts the task and returns its handle. It does not wait
	// for the task to finish.
	StartTask(cfg *TaskConfig) (*TaskHandle, error)
	// RecoverTask re-attaches to a task started by an earlier run of the
	// client. It fails when the task is gone.
	RecoverTask(h *TaskHandle) error
	// WaitTask returns a channel that receives the task's exit exactly
	// once.
	WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error)
	// StopTask sends signal (empty: SIGINT), waits up to timeout for the
	// task to exit, then kills its whole process group.
	StopTask(taskID string, timeout time.Duration, signal string) error
	// SignalTask sends signal to the task.
	SignalTask(taskID string, signal string) error
	// DestroyTask forgets the task, killing it first if force.
	DestroyTask(taskID string, force bool) error
	// Stats measures the running task.
	Stats(taskID string) (*state.TaskResourceUsage, error)
}
