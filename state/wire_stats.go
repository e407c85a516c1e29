package state

import "time"

// AllocResourceUsage answers GET /v1/client/allocation/:alloc_id/stats:
// the allocation's measured use, in total and per task (Nomad's shape).
type AllocResourceUsage struct {
	// ResourceUsage is the sum over Tasks; the handler fills it when the
	// client leaves it nil.
	ResourceUsage *ResourceUsage
	Tasks         map[string]*TaskResourceUsage
	// Timestamp is Unix nanoseconds of the latest measure.
	Timestamp int64
}

// TaskResourceUsage is one task's measured use.
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage
	// Timestamp is Unix nanoseconds of the measure.
	Timestamp int64
}

// ResourceUsage is memory and CPU use.
type ResourceUsage struct {
	MemoryStats *MemoryStats
	CpuStats    *CpuStats
}

// MemoryStats is memory use; Measured names the fields that were
// measured (raw_exec measures RSS from /proc).
type MemoryStats struct {
	RSS      uint64
	Measured []string
}

// CpuStats is CPU use. Percent is of one core; TotalTicks is the use in
// MHz (Percent of the node's per-core MHz), as Nomad reports it;
// TotalTime is the CPU time consumed since the task started.
type CpuStats struct {
	Percent    float64
	TotalTicks float64
	TotalTime  time.Duration
	Measured   []string
}
